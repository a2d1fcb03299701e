"""The :class:`~reduced_odes.author.Model` of the induction head: what is integrated."""

from __future__ import annotations

import math

from reduced_odes.author import CommittedFigures, Crossing, Model, SettledRule, roles

from .params import ModelParams, PhaseThresholds

__all__ = ["MODEL", "InductionHead"]

#: The induction-head block is in its final regime once w_kq is within this relative
#: distance of w_star (its exponential approach has then taken over).
NEAR_FIXED_POINT = 1e-6
#: The 4-gram block is in its final regime, the algebraic tail L_G4 ~ 1/(4 t), once
#: t * L_G4 is within this relative distance of 1/4.  It approaches 1/4 from above or below
#: like 1/t (measured: 4 t L_G4 - 1 = 1.2e-3 at t = 1e4 for the defaults, -4.6e-2 at
#: t = 1e5 for alpha = 0.01), so 1e-3 marks the tail without waiting for its last digits.
FOUR_GRAM_TAIL = 1e-3
#: Below this L_G4 is at round-off level (its O(1) terms cancel to ~1e-16, so t * L_G4
#: carries a relative error of 1e-4 at t = 1e12 and more beyond): the 4-gram block is then
#: as settled as double precision can show.
FOUR_GRAM_FLOOR = 1e-13
#: Largest first horizon (the engine's own limit on any run).
_HORIZON_MAX = 1e18


class InductionHead(Model):
    """The Stage-II reduced flow of (w_v1, p, w_v2, w_kq), integrated in ``ln w_kq``.

    Examples
    --------
    >>> from reduced_odes import solve
    >>> traj = solve(ModelParams(L=200, alpha=0.5, wstar=0.3, sigma=1e-4))
    >>> traj.phases["T_I"] < traj.phases["T_II"] < traj.phases["T_em"] < traj.phases["T_III"]
    True
    """

    name = "induction_head"
    description = ("two-layer attention-only transformer: 4-gram, plateau, induction head "
                   "(Wang et al. 2024)")
    Params = ModelParams
    variants = ("linear", "meanfield")
    variant_option = "closure"
    Thresholds = PhaseThresholds
    phase_order = ("T_I", "T_II", "T_em", "T_III")
    nonnegative = ("L_G4", "L_IH")
    hooks = roles("derivation", "claims", "export", "figures", compare=".ground_truth",
                  functions={"verify_settings": "grid_settings", "measure": "measure_setting",
                             "compare": "run_compare"})
    #: Drawing both closures' figures takes ~30 s.  The data files are unrounded runs and
    #: predictions, kept at full precision: none is declared for regeneration.
    committed_figures = CommittedFigures(slow_drawing=True)

    def check(self, params: ModelParams, variant: str) -> None:
        params.check_closure(variant)

    def parameter_values(self, params: ModelParams, variant: str) -> tuple[float, ...]:
        return (params.alpha, params.wstar, float(params.L))

    def initial_state(self, params: ModelParams, variant: str) -> tuple[float, ...]:
        """Spec section 4: ``w_v1 = w_v2 = w_k = w_q = sigma``, ``p = 0``."""
        return (params.sigma, 0.0, params.sigma, params.log_w_kq0)

    def phases(self, params: ModelParams, variant: str, initial, thresholds) -> list[Crossing]:
        th = thresholds or PhaseThresholds()
        # L_G4 is non-increasing along the flow (its (w_v1, p) block is the gradient
        # flow of L_G4 alone), so its crossing step is found by bisection.
        crossings = [Crossing("T_I", "L_G4", th.four_gram * initial["L_G4"], -1, monotone=True)]
        for name, fraction in (("T_II", th.onset), ("T_em", th.emergence),
                               ("T_III", th.converged)):
            crossings.append(Crossing(name, "log_w_kq", math.log(fraction * params.wstar)))
        return crossings

    def settled(self, params: ModelParams, variant: str) -> SettledRule:
        """``<= 0`` once both blocks are in their final regimes.

        The induction-head block: ``|ln w_kq - ln w*| <= NEAR_FIXED_POINT``.  The 4-gram
        block: learned (``L_G4`` below the T_I fraction of its start, so that the early rise
        of ``t L_G4`` through 1/4 does not count) and in its algebraic tail,
        ``|4 t L_G4 - 1| <= FOUR_GRAM_TAIL``, or at round-off level.  At small alpha the
        4-gram is learned long after the induction head, so neither block alone may end
        the run.
        """
        from reduced_odes import load_system

        system = load_system(self, variant)
        g4 = system.observable_names.index("L_G4")
        start = system.observables(self.initial_state(params, variant),
                                   *self.parameter_values(params, variant))[g4]
        return SettledRule(
            "max(abs(log_w_kq - target) - near, -1.0 if L_G4 <= floor else "
            "max(abs(4 * t * L_G4 - 1) - tail, L_G4 - learned))",
            {"target": math.log(params.wstar), "near": NEAR_FIXED_POINT,
             "floor": FOUR_GRAM_FLOOR, "tail": FOUR_GRAM_TAIL,
             "learned": PhaseThresholds().four_gram * start})

    def horizon(self, params: ModelParams, variant: str) -> float:
        """``1e3 L / alpha^2`` (the 4-gram's time scale is ``1/alpha^2``), at most 1e18."""
        return min(1e3 * params.L / max(params.alpha, 1e-150) ** 2, _HORIZON_MAX)

    def command_options(self, command: str, parser) -> None:
        """``compare``: the estimator of the exact flow and the setting or grid to compare."""
        if command != "compare":
            return
        parser.add_argument("--estimator", default="population",
                            help="exact-softmax ground truth: the deterministic population "
                                 "flow (default) or online SGD")
        for name, kind, default, text in (("L", int, 20, "sequence length"),
                                          ("sigma", float, 0.1, "initialisation scale"),
                                          ("wstar", float, 0.3, "target query-key weight"),
                                          ("alpha", float, 0.5, "weight of the 4-gram")):
            parser.add_argument(f"--{name}", type=kind, default=None,
                                help=f"{text} (default: {default}, or the --quick grid "
                                     f"with --estimator sgd)")
        parser.add_argument("--grid", metavar="FILE.toml", default=None,
                            help="[grid]/[fixed] tables of L, sigma, wstar, alpha, run through "
                                 "the resumable sweep engine")
        parser.add_argument("--tokens", type=lambda v: int(float(v)), default=None,
                            help="population estimator: draws x L per independent sample "
                                 "(default: 5e6, or 6.25e5 with --quick); the standard error "
                                 "falls like 1/sqrt(tokens x samples)")
        parser.add_argument("--samples", type=int, default=None,
                            help="population estimator: independent samples, the error bars' "
                                 "degrees of freedom + 1 (default: 8)")


MODEL = InductionHead()
