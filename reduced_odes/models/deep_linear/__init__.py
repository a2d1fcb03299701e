"""The two-layer scalar linear network of Saxe, McClelland & Ganguli (2014).

``f(x) = a b x`` learns the target ``s x`` from ``x ~ N(0, 1)`` under the
loss ``1/2 E[(s x - a b x)^2]``.  From ``a = b = sigma`` the product
``u = a b`` follows the logistic law ``u(t) = s / (1 + (s/u0 - 1) e^{-2 s t})``
with ``u0 = sigma^2``: a plateau of length ``~ ln(s/sigma^2)/(2s)`` and then
a sigmoidal jump.  The exact solution is the engine's contract test.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..._contract import Crossing, Model, SettledRule
from ..._params import Parameters, parameter, positive

__all__ = ["MODEL", "DeepLinear", "DeepLinearParams"]


@dataclass(frozen=True)
class DeepLinearParams(Parameters):
    """Parameters of the two-layer scalar linear network.

    Examples
    --------
    >>> DeepLinearParams(s=2, sigma=1e-4).s
    2.0
    """

    s: float = parameter(1.0, positive(1e150), "target singular value")
    sigma: float = parameter(1e-3, positive(1e-1), "initial scale: a = b = sigma")


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

    def derive(self, variant: str):
        import sympy as sp

        from ..._gaussian import gaussian_expectation
        from ..._symbolic import assert_conserved, gradient_flow, log_coordinate

        a, b = sp.symbols("a b", positive=True)
        s, x = sp.Symbol("s", positive=True), sp.Symbol("x", real=True)
        loss = gaussian_expectation((s * x - a * b * x) ** 2 / 2, [x]).value
        flow = gradient_flow((a, b), loss, parameters=(s,))
        balance = assert_conserved("a^2 - b^2", a**2 - b**2, (a, b), flow.rhs)
        return gradient_flow((a, b), loss, parameters=(s,), rhs=flow.rhs,
                             coordinates=(log_coordinate(a), log_coordinate(b)),
                             observables={"u": a * b, "loss": sp.factor(loss)}, identities=(balance,))

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
        return 10 * (1 + math.log(params.s / params.sigma**2)) / params.s


MODEL = DeepLinear()
