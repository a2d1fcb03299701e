"""A user's single-index model with a slow escape (``tests/engine/test_native_slow_escape.py``).

The overlap ``m`` of a student with its target on the sphere, under a target of information
exponent ``k``: ``dm/dt = m^(k-1) (1 - m^2)``, the gradient flow of
``-(m^k/k - m^(k+2)/(k+2))``, from a random start ``m0 = d^(-1/2)``.  For ``k >= 3`` the
escape is polynomial, not exponential: ``T_half`` grows like ``d^((k-2)/2)``, so the run
crosses many decades of ``t`` on a slow plateau and escapes in a window of width
``~1/m^(k-2)`` at a time ``t`` of ``1e7`` to ``1e14``.
"""
from __future__ import annotations

from dataclasses import dataclass

from reduced_odes.author import Crossing, Model, Parameters, SettledRule, parameter, positive


@dataclass(frozen=True)
class EscapeParams(Parameters):
    d: float = parameter(1e4, positive(1e300), "dimension: the start has m0 = d^(-1/2)")
    k: float = parameter(3.0, positive(10), "information exponent")


class SlowEscape(Model):
    name = "slow_escape"
    description = "single-index escape with information exponent k"
    Params = EscapeParams
    phase_order = ("T_half",)
    tail = 0.0

    def derive(self, variant):
        import sympy as sp

        from reduced_odes.author import gradient_flow

        # positive: the domain is m > 0 (another model's order parameter ``m`` in the same
        # process would not matter: the marks are per derivation, _derivation_scope).
        m, k = sp.Symbol("m", positive=True), sp.Symbol("k", positive=True)
        loss = -(m**k / k - m**(k + 2) / (k + 2))
        return gradient_flow((m,), loss, parameters=(k,), domain=[m > 0])

    def parameter_values(self, params, variant):
        return (params.k,)

    def initial_state(self, params, variant):
        return (params.d ** -0.5,)

    def phases(self, params, variant, initial, thresholds):
        return [Crossing("T_half", "m", 0.5)]

    def settled(self, params, variant):
        return SettledRule("abs(m - 1) - 1e-9")

    def horizon(self, params, variant):
        return 1.0


MODEL = SlowEscape()
