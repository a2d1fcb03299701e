"""The two-mixture classification model (a reconstruction of Yang, Wang, Lee & Liang, ICLR 2025).

A symmetric two-headed transformer with ReLU neurons learns a two-mixture of
linear classification with a hidden correspondence between words: the
identifier ``c_k`` names the mixture ``k`` and the label is the sign of
mixture ``k``'s signal token.  In the mean-field limit, on the manifold of
mirror heads and sign-paired neurons, gradient flow reduces exactly to five
scalars ``(zeta, N, M, q, k)``; training passes through three stages (neurons
align, attention learns the correspondence, convergence), marked by the
phases ``T1`` (A >= 1/2), ``T2`` (theta >= 1/2) and ``T3`` (loss <= 0.005).

The loss (``square`` or ``logistic``) is the model's variant; every other
convention is a parameter (:class:`TwoMixtureParams`).
"""

from __future__ import annotations

import math
from pathlib import Path

from ..._contract import Crossing, Model, SettledRule
from ..._params import ParameterError
from .numeric import initial_moments, reduced_loss, square_optimum
from .params import LOSSES, TwoMixtureParams, initial_theta

__all__ = ["MODEL", "TwoMixture", "TwoMixtureParams"]

#: Gates (neurons, attention) of the blocks each single flow trains.
GATES = {"all": (1.0, 1.0), "neurons": (1.0, 0.0), "attention": (0.0, 1.0)}


class TwoMixture(Model):
    """Mean-field two-headed transformer on the two-mixture task: ``(zeta, N, M, q, k)``.

    Examples
    --------
    >>> MODEL.variants, MODEL.variant_option
    (('square', 'logistic'), 'loss')
    >>> MODEL.initial_state(TwoMixtureParams(), "square")[0]
    1.0
    """

    name = "two_mixture"
    description = ("two-mixture linear classification by a symmetric two-headed transformer "
                   "(reconstruction of Yang et al. 2025)")
    Params = TwoMixtureParams
    variants = LOSSES
    variant_option = "loss"
    #: Run on for 100 x the time all three stages were reached: the late-time
    #: checks of the algebraic convergence go to 100 T2.
    tail = 100.0

    def check(self, params: TwoMixtureParams, variant: str) -> None:
        """Thresholds that the loss makes unreachable raise :class:`ParameterError`."""
        theta0 = initial_theta(params.kappa, params.sigma_att)
        if variant == "square":
            # With the attention at its initial margin, A cannot pass A*(theta0).
            reachable, _ = square_optimum(theta0)
            for name in ("A1", "A_I"):
                value = getattr(params, name)
                if not value < reachable:
                    raise ParameterError(f"{name}={value!r} is outside the open interval "
                                         f"(0, {reachable:.10g}) = (0, A*(theta0)) of the "
                                         f"square loss")
        A0 = initial_moments(params)["zeta"] * params.mu / (2 * math.sqrt(2))
        start = float(reduced_loss(variant, A0, theta0))
        if not params.L3 < start:
            raise ParameterError(f"L3={params.L3!r} is outside the open interval "
                                 f"(0, {start:.10g}) = (0, L(0))")
        if params.protocol == "algorithm1" and params.train != "all":
            raise ParameterError(f"train={params.train!r} with protocol='algorithm1', whose "
                                 f"stages choose the trained block; allowed: train=all")

    def integrate(self, params: TwoMixtureParams, variant: str, solver, thresholds, initial):
        """Algorithm 1 as one stitched trajectory of its three stages; None for the joint flow."""
        if params.protocol != "algorithm1":
            return None
        from .algorithm1 import run_algorithm1

        return run_algorithm1(params, variant, solver, initial)

    def derive(self, variant: str):
        from .declaration import derivation

        return derivation(variant)

    def parameter_values(self, params: TwoMixtureParams, variant: str) -> tuple[float, ...]:
        return (params.mu, params.kappa, params.sigma, *GATES[params.train])

    def initial_state(self, params: TwoMixtureParams, variant: str) -> list[float]:
        m = initial_moments(params)
        return [m["zeta"] / params.sigma**2, math.log(m["N"]), math.log(m["M"]),
                math.log(m["q"]), math.log(m["k"])]

    def phases(self, params, variant, initial, thresholds) -> list[Crossing]:
        return [Crossing("T1", "A", params.A1), Crossing("T2", "theta", params.theta2),
                Crossing("T3", "loss", params.L3, direction=-1),
                Crossing("T_AI", "A", params.A_I), Crossing("T_thetaII", "theta", params.theta_II)]

    def settled(self, params: TwoMixtureParams, variant: str) -> SettledRule:
        """``<= 0`` once the stages that ``params.train`` trains have ended: all of T1, T2
        and T3 (``A >= A1``, ``theta >= theta2``, ``loss <= L3``), or, for a single block,
        its own Algorithm 1 stage (``A >= A_I`` or ``theta >= theta_II``).  Constants switch
        the terms on and off, so the expression is one for every setting."""
        levels = {"all": (params.A1, params.theta2, params.L3),
                  "neurons": (params.A_I, None, None),
                  "attention": (None, params.theta_II, None)}[params.train]
        names = ("A_level", "theta_level", "loss_level")
        constants = {name: 0.0 if level is None else float(level)
                     for name, level in zip(names, levels, strict=True)}
        constants.update({f"{name}_on": float(level is not None)
                          for name, level in zip(("A", "theta", "loss"), levels, strict=True)})
        return SettledRule(
            "max(A_level - A if A_on > 0 else -math.inf, "
            "theta_level - theta if theta_on > 0 else -math.inf, "
            "loss - loss_level if loss_on > 0 else -math.inf)", constants)

    def horizon(self, params: TwoMixtureParams, variant: str) -> float:
        # The stage times scale as ln(1/A0)/lambda1 + (4/kappa) ln(1/ell0).
        rate = params.mu / (2 * math.sqrt(2))
        A0 = params.mu * params.sigma**2 / (2 * math.sqrt(2))
        ell0 = params.kappa * params.sigma_att**2
        return 2 * (math.log(1 / A0) / rate + 4 * math.log(1 / ell0) / params.kappa + 10)

    # -- derive, figures, compare ------------------------------------------------------
    def export_derivations(self, directory: Path) -> list[Path]:
        from .export import export_derivations

        return export_derivations(directory)

    def figure_data(self, data: Path) -> list[Path]:
        from .figures import figure_data

        return figure_data(data)

    def figures(self, out: Path, data: Path, formats) -> list[Path]:
        from .figures import draw_figures

        return draw_figures(out, data, formats)

    def compare(self, *, quick: bool, out: Path) -> dict:
        from .compare import compare

        return compare(quick, out)

    def format_compare(self, result: dict) -> str:
        from .compare import format_compare

        return format_compare(result)

    # -- verify ---------------------------------------------------------------------------
    grids = ("quick", "default", "full")

    def verify_settings(self, grid: str, variants):
        from .claims import verify_settings

        return verify_settings(grid, variants)

    def measure(self, setting: dict) -> dict:
        from .claims import measure

        return measure(setting)

    def claims(self, records, variants):
        from .claims import claims

        return claims(records, variants)

    def verify_metadata(self) -> dict:
        from .claims import TOLERANCES

        tolerances = {k: {"tolerance": v, "reason": r} for k, (v, r) in TOLERANCES.items()}
        return {"tolerances": tolerances,
                "regime": "kappa/mu <= 2 (spec section 6); balanced averaged init",
                "reconstruction": "the paper's model is unrecoverable: see the spec, section 0"}


MODEL = TwoMixture()
