"""The induction-head model of Wang, Yu, E & Wu (arXiv 2410.11474), section 5.

A two-layer attention-only transformer learns a 4-gram plus an in-context
2-gram.  Training goes through four phases: the 4-gram is learned (T_I), a
long plateau, the abrupt emergence of the induction head (T_II, T_em,
T_III), convergence.  The softmax normaliser has no closed-form expectation,
so two closures (the model's variants) are derived: ``linear`` (the
paper's) and ``meanfield``.

Modules: ``declaration`` (the heads as data), ``losses`` and ``flow`` (the
derivation), ``special`` and ``kernels`` (the stable attention functions),
``predictions`` and ``claims`` (Theorem 5.5), ``sgd``, ``attention`` and
``compare`` (exact-softmax ground truth), ``export`` and ``figures``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from ..._contract import Crossing, Model
from .params import CLOSURE_WSTAR_LIMITS, ModelParams, PhaseThresholds

__all__ = ["CLOSURE_WSTAR_LIMITS", "MODEL", "InductionHead", "ModelParams", "PhaseThresholds",
           "derive_flow", "derive_losses", "derive_predictions", "derive_stage1_flow",
           "derive_stage1_loss"]

#: The symbolic half, imported on first use (warm starts never import SymPy).
_LAZY = {"derive_flow": "flow", "derive_stage1_flow": "flow", "derive_losses": "losses",
         "derive_stage1_loss": "losses", "derive_predictions": "predictions"}


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f".{_LAZY[name]}", __name__), name)

#: Phase IV is taken as reached once w_kq is within this relative distance of
#: w_star; the run then continues for as long again (``tail``), so that the
#: exponential decay of L_IH and the algebraic tail t * L_G4 -> 1/4 are both resolved.
NEAR_FIXED_POINT = 1e-6


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

    def check(self, params: ModelParams, variant: str) -> None:
        params.check_closure(variant)

    def derive(self, variant: str):
        from .flow import derivation

        return derivation(variant)

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

    def settled(self, params: ModelParams, variant: str):
        target = math.log(params.wstar)
        return lambda y: abs(y[3] - target) - NEAR_FIXED_POINT

    def horizon(self, params: ModelParams, variant: str) -> float:
        return 1e3 * params.L / params.alpha**2

    # -- verify: Theorem 5.5 ------------------------------------------------------------
    grids = ("quick", "default", "full")

    def verify_settings(self, grid: str, variants: Sequence[str]):
        from .claims import grid_settings

        return grid_settings(grid, variants)

    def measure(self, setting: dict) -> dict:
        from .claims import measure_setting

        return measure_setting(setting)

    def claims(self, records: list[dict], variants: Sequence[str]) -> list:
        from .claims import evaluate_claims

        return [claim for variant in variants for claim in evaluate_claims(records, variant)]

    def verify_metadata(self) -> dict:
        from .claims import GRIDS, REGIME_SEPARATION, TOLERANCES

        return {"grid_values": GRIDS, "tolerances": TOLERANCES,
                "regime_separation": REGIME_SEPARATION}

    # -- derive, figures, compare ----------------------------------------------------------
    def export_derivations(self, directory: Path) -> list[Path]:
        from .export import export_derivations

        return export_derivations(directory)

    def figures(self, out: Path, data: Path, formats: Sequence[str]) -> list[Path]:
        from .figures import make_figures

        return make_figures(out, data, formats, "all", "default")

    def compare(self, *, quick: bool, out: Path) -> dict:
        from ..._provenance import versions
        from ..._results import write_json
        from .compare import compare_closures, sgd_overlay

        result = compare_closures(quick=quick)
        write_json(out / f"compare-{'quick' if quick else 'full'}.json",
                   {**result, "versions": versions()})
        write_json(out / "compare-overlay.json", sgd_overlay())
        return result

    def format_compare(self, result: dict) -> str:
        from .compare import format_markdown

        return format_markdown(result)


MODEL = InductionHead()
