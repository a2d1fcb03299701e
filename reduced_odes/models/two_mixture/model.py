"""The :class:`~reduced_odes.author.Model` of the two-mixture model: what is integrated."""

from __future__ import annotations

import math

from reduced_odes import ParameterError
from reduced_odes.author import CommittedFigures, Crossing, Model, SettledRule, roles

from .numerics import initial_moments, phi_source, reduced_loss, square_optimum
from .params import LOSSES, TwoMixtureParams, initial_theta

__all__ = ["MODEL", "TwoMixture"]

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
    hooks = roles("derivation", "claims", "export", "figures", compare=".ground_truth")
    #: The figure data keep DIGITS (5) digits (figures/data.py); scaling.json integrates
    #: 14 settings.
    committed_figures = CommittedFigures(
        digits=5, data=("stages.json", "separation.json", "algorithm1.json"),
        slow_data=("scaling.json",))

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
        if variant == "logistic":
            _check_logistic_reach(params)
        if params.protocol == "algorithm1":
            # Stage I trains the neurons from A(0); stage II the attention from theta0 (stage I
            # leaves it there): a stage that would end where it starts has no duration.
            for name, level, start in (("A_I", params.A_I, A0), ("theta_II", params.theta_II,
                                                                 theta0)):
                if not level > start:
                    raise ParameterError(f"{name}={level!r} with protocol='algorithm1' must "
                                         f"exceed its value at the start, {start:.10g}")

    def integrate(self, params: TwoMixtureParams, variant: str, solver, thresholds, initial):
        """Algorithm 1 as one stitched trajectory of its three stages; None for the joint flow."""
        if params.protocol != "algorithm1":
            return None
        from .algorithm1 import run_algorithm1

        return run_algorithm1(params, variant, solver, initial)

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
        the terms on and off, so the expression is one for every setting.

        ``A``, ``theta`` and the loss are written in the coordinates as ``composite`` and
        ``reduced_loss`` (``numerics``) compute them, operation for operation: the compiled
        observables agree with them only to round-off, which would move the root of the
        rule, and so the run's end and output grid, in the last digits."""
        levels = {"all": (params.A1, params.theta2, params.L3),
                  "neurons": (params.A_I, None, None),
                  "attention": (None, params.theta_II, None)}[params.train]
        names = ("A_level", "theta_level", "loss_level")
        constants = {name: 0.0 if level is None else float(level)
                     for name, level in zip(names, levels, strict=True)}
        constants.update({f"{name}_on": float(level is not None)
                          for name, level in zip(("A", "theta", "loss"), levels, strict=True)})
        constants.update(A_scale=params.mu * params.sigma**2, kappa=float(params.kappa))
        A = "(A_scale * zeta_scaled / (2 * math.sqrt(2)))"
        theta = "math.tanh(kappa * math.exp(log_q + log_k) / 2)"
        loss = (f"(0.5 * {phi_source(variant, A)} + "
                f"0.5 * {phi_source(variant, f'({A} * {theta})')})")
        return SettledRule(
            f"max(A_level - {A} if A_on > 0 else -math.inf, "
            f"theta_level - {theta} if theta_on > 0 else -math.inf, "
            f"{loss} - loss_level if loss_on > 0 else -math.inf)", constants)

    def horizon(self, params: TwoMixtureParams, variant: str) -> float:
        # The stage times scale as ln(1/A0)/lambda1 + (4/kappa) ln(1/ell0).
        rate = params.mu / (2 * math.sqrt(2))
        A0 = params.mu * params.sigma**2 / (2 * math.sqrt(2))
        ell0 = params.kappa * params.sigma_att**2
        return 2 * (math.log(1 / A0) / rate + 4 * math.log(1 / ell0) / params.kappa + 10)


#: Largest ``(mu/kappa) (1 + theta)/(1 - theta)`` the logistic loss reaches by the engine's
#: horizon t = 1e18, theta being the attention level that ends the run (measured over mu in
#: [0.01, 100]: 210 is reached at theta = 0.5, 225 is not at theta = 0.8).
LOGISTIC_REACH = 200.0


def _check_logistic_reach(params: TwoMixtureParams) -> None:
    """ParameterError if the logistic run's ending attention level is out of its reach: the
    margin grows only like ln t, the slower the larger mu/kappa and theta."""
    if params.protocol == "algorithm1" or params.train == "attention":
        name = "theta_II"
    elif params.train == "all":
        name = "theta2"
    else:  # the neurons alone: no attention level ends the run
        return
    level = getattr(params, name)
    reach = params.mu / params.kappa * (1 + level) / (1 - level)
    if reach > LOGISTIC_REACH:
        raise ParameterError(f"{name}={level!r} with mu={params.mu!r}, kappa={params.kappa!r} "
                             f"and the logistic loss: (mu/kappa)(1 + {name})/(1 - {name}) = "
                             f"{reach:.4g}; allowed: <= {LOGISTIC_REACH:g} (the attention "
                             f"margin grows like ln t and reaches no more by t = 1e18)")


MODEL = TwoMixture()
