"""The :class:`~reduced_odes.author.Model` of the two-stage feature model: what is integrated."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from reduced_odes.author import CommittedFigures, Crossing, Model, SettledRule, roles

from .numerics import targets
from .params import ACTIVATIONS, TwoStageParams, TwoStageThresholds

__all__ = ["MODEL", "TwoStageFeatures", "phase_names"]

#: Relative distance of A and B to A*, B* at which the state is settled.
SETTLE_TOLERANCE = 1e-10
#: Level of ln(b/a) for T_cross.  At t = 0, b = a exactly and a pulls ahead at once; the
#: crossing sought is the later one, so the level sits just above 0 (a time shift ~1e-10).
CROSSING_LEVEL = 1e-12


def phase_names(thresholds: TwoStageThresholds | None = None) -> list[str]:
    """Names of the phases, in the order :meth:`TwoStageFeatures.phases` lists them.

    Examples
    --------
    >>> phase_names()[:3]
    ['T_P', 'T_Q', 'T_cross']
    """
    thresholds = thresholds or TwoStageThresholds()
    at = [f"T_{x}@{level:g}" for x in "PQ" for level in thresholds.levels()]
    return ["T_P", "T_Q", "T_cross", *at]


class TwoStageFeatures(Model):
    """Normalised ReLU attention on disentangled syntactic/semantic tokens (Gong et al.).

    A reconstruction of the paper's model.  The state is ``(v, k_P, q_P, k_Q, q_Q)``; the
    weights are integrated as ``ln k``, ``ln q`` so that ``sigma`` down to ``1e-300`` is
    exact.

    Examples
    --------
    >>> MODEL = TwoStageFeatures()
    >>> MODEL.initial_state(TwoStageParams(sigma=1e-300), "relu")[1]
    -690.7755278982137
    """

    name = "two_stage_features"
    description = ("normalised ReLU attention learning syntax, then semantics "
                   "(reconstruction of Gong et al. 2025)")
    Params = TwoStageParams
    Thresholds = TwoStageThresholds
    variants = ACTIVATIONS
    variant_option = "activation"
    tail = 1.0

    hooks = roles("derivation", "claims", "export", "figures", compare=".ground_truth",
                  functions={"compare": "run_compare"})
    #: The figure data keep DIGITS (5) digits (figures/data.py).
    committed_figures = CommittedFigures(
        digits=5, data=("scaling.json", "trajectory-sigma0.0001.json"))

    def parameter_values(self, params: TwoStageParams, variant: str) -> tuple[float, ...]:
        tau = 1.0 if params.train_value else 0.0
        return (params.gamma, params.mu, params.pi_P, float(params.N), float(params.d_P),
                float(params.d_Q), tau)

    def initial_state(self, params: TwoStageParams, variant: str) -> Sequence[float]:
        log_sigma = math.log(params.sigma)
        return (params.v0, log_sigma, log_sigma, log_sigma, log_sigma)

    def phases(self, params: TwoStageParams, variant: str, initial: Mapping[str, float],
               thresholds: TwoStageThresholds | None) -> list[Crossing]:
        thresholds = thresholds or TwoStageThresholds()
        found = [Crossing("T_P", "A_frac", thresholds.theta)]
        if variant == "relu":
            found += [Crossing("T_Q", "B_frac", thresholds.theta),
                      Crossing("T_cross", "log_b_over_a", CROSSING_LEVEL)]
        for block in ("P", "Q") if variant == "relu" else ("P",):
            series = f"{'A' if block == 'P' else 'B'}_frac"
            found += [Crossing(f"T_{block}@{level:g}", series, level)
                      for level in thresholds.levels()]
        return found

    def settled(self, params: TwoStageParams, variant: str) -> SettledRule:
        """``<= 0`` once ``ln A`` and ``ln B`` are within ``SETTLE_TOLERANCE`` of ``ln A*`` and
        ``ln B*`` (in the coordinates, ``ln A = ln v + ln k_P + ln q_P``).

        The linear control has ``B* = 0``: its Q block never leaves the origin, so only P
        settles (a constant switches Q off: the expression is one per variant)."""
        A_star, B_star = targets(params, variant)
        return SettledRule(
            "max(abs(math.log(v) + log_k_P + log_q_P - log_A_star), "
            "abs(math.log(v) + log_k_Q + log_q_Q - log_B_star) if q_settles > 0 else 0.0)"
            " - tolerance",
            {"log_A_star": math.log(A_star * params.gamma**-2),
             "log_B_star": math.log(B_star * params.mu**-2) if B_star > 0 else 0.0,
             "q_settles": 1.0 if B_star > 0 else 0.0, "tolerance": SETTLE_TOLERANCE})

    def horizon(self, params: TwoStageParams, variant: str) -> float:
        # A first guess only (the engine extends it): the e-folding time of each block at the
        # origin is at least d/(pi^2 scale^2 v0); the escape needs ln(1/sigma^2) of them.
        slowest = max(params.d_P / (params.pi_P**2 * params.gamma**2),
                      params.d_Q / (params.pi_Q**2 * params.mu**2)) / params.v0
        return 4 * (params.ell + 10) * slowest


MODEL = TwoStageFeatures()
