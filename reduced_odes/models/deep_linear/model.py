"""The :class:`~reduced_odes.author.Model` of the two-layer scalar linear network."""

from __future__ import annotations

import math

from reduced_odes.author import Crossing, Model, SettledRule, roles

from .params import DeepLinearParams

__all__ = ["MODEL", "DeepLinear"]


class DeepLinear(Model):
    """``a, b`` trained by gradient flow on ``1/2 E[(s x - a b x)^2]``; phase ``T_half``.

    Examples
    --------
    >>> from reduced_odes import solve
    >>> traj = solve(DeepLinearParams(s=2, sigma=1e-4))
    >>> round(traj.phases["T_half"], 6) == round(math.log(2 / 1e-8 - 1) / 4, 6)
    True
    """

    name = "deep_linear"
    description = "two-layer scalar linear network (Saxe, McClelland & Ganguli 2014)"
    Params = DeepLinearParams
    phase_order = ("T_half",)
    hooks = roles("derivation")

    def parameter_values(self, params, variant):
        return (params.s,)

    def initial_state(self, params, variant):
        return (math.log(params.sigma), math.log(params.sigma))

    def phases(self, params, variant, initial, thresholds):
        return [Crossing("T_half", "u", params.s / 2)]

    def settled(self, params, variant):
        # u within 1e-9 (relative) of s, in the log coordinates: ln a + ln b = ln s.
        return SettledRule("abs(log_a + log_b - target) - 1e-9", {"target": math.log(params.s)})

    def horizon(self, params, variant):
        """``10 (1 + |ln(s / sigma^2)|) / s``: the logistic ``u`` takes ``ln(s/sigma^2) / (2s)``
        to rise from ``sigma^2`` to ``s``, and a start above ``s`` decays to it on the time
        scale ``1/s``; so the horizon is > 0 and finite for every allowed setting (the
        declared ranges keep ``s / sigma^2`` within ``[1e-10, 1e300]``).

        Examples
        --------
        >>> MODEL.horizon(DeepLinearParams(s=1e-3, sigma=0.06), "default") > 0
        True
        >>> MODEL.horizon(DeepLinearParams(s=9.9e99, sigma=1e-100), "default") < math.inf
        True
        """
        return 10 * (1 + abs(math.log(params.s / params.sigma**2))) / params.s


MODEL = DeepLinear()
