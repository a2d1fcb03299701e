"""The :class:`~reduced_odes.Model` of the two-stage feature model: what the engine integrates."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from ..._contract import Crossing, Model, SettledRule
from .mixture import numeric_optimum
from .params import ACTIVATIONS, TwoStageParams, TwoStageThresholds

__all__ = ["TwoStageFeatures", "phase_names", "targets"]

#: Relative distance of A and B to A*, B* at which the state is settled.
SETTLE_TOLERANCE = 1e-10
#: Level of ln(b/a) for T_cross.  At t = 0, b = a exactly and a pulls ahead at once; the
#: crossing sought is the later one, so the level sits just above 0 (a time shift ~1e-10).
CROSSING_LEVEL = 1e-12


def _activation(variant: str) -> Callable[[float], float]:
    return (lambda s: max(0.0, s)) if variant == "relu" else (lambda s: s)


def targets(params: TwoStageParams, variant: str = "relu") -> tuple[float, float]:
    """``(A*, B*)``, the minimisers of ``L_P`` and ``L_Q``, without SymPy.

    Examples
    --------
    >>> [round(x, 6) for x in targets(TwoStageParams())]
    [3.657143, 6.564103]
    """
    return _targets(params.pi_P, params.gamma, params.mu, params.N, variant)


@functools.lru_cache(maxsize=1024)
def _targets(pi_P: float, gamma: float, mu: float, N: float,
             variant: str) -> tuple[float, float]:
    # Memoised: the stop rule asks on every run, and the six mixture expectations behind
    # it cost more than a native run; a sweep mostly varies other parameters (sigma, v0,
    # the dimensions), so the same optima recur.
    args = (pi_P, gamma, mu, N, _activation(variant))
    return numeric_optimum("P", *args), numeric_optimum("Q", *args)


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

    grids = ("quick", "default", "full")

    def verify_settings(self, grid: str, variants: Sequence[str]) -> tuple[list[dict], list[dict]]:
        from .claims import verify_settings

        return verify_settings(grid, variants)

    def measure(self, setting: dict) -> dict:
        from .claims import measure

        return measure(setting)

    def claims(self, records: list[dict], variants: Sequence[str]) -> list:
        from .claims import claims

        return claims(records, variants)

    def verify_metadata(self) -> dict:
        from .claims import verify_metadata

        return verify_metadata()

    def export_derivations(self, directory) -> list:
        from .export import export_derivations

        return export_derivations(directory)

    def figure_data(self, data: Path) -> list[Path]:
        from .figures import figure_data

        return figure_data(data)

    def figures(self, out: Path, data: Path, formats: Sequence[str]) -> list[Path]:
        from .figures import draw_figures

        return draw_figures(out, data, formats)

    def compare(self, *, quick: bool, out: Path, executor=None, workers=None) -> dict:
        from ..._provenance import versions
        from ..._results import write_json
        from .compare import compare

        result = compare(quick=quick, workers=workers, executor=executor)
        write_json(Path(out) / f"compare-{self.name}-{'quick' if quick else 'full'}.json",
                   {**result, "versions": versions()})
        return result

    def format_compare(self, result: dict) -> str:
        from .compare import format_compare

        return format_compare(result)

    def derive(self, variant: str):
        from .declaration import derivation

        return derivation(variant)

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
