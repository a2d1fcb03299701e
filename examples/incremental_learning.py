"""Incremental learning in a deep linear network: two modes, learned one after the other.

A user's model, outside the package: ``reduced-odes solve --model
examples/incremental_learning.py:MODEL --json``.  It imports what it uses to
write a model from :mod:`reduced_odes.author`, as the built-in models do.

The network ``f(x) = a1 b1 x1 + a2 b2 x2`` learns the target ``s1 x1 + s2 x2``
from ``x ~ N(0, I_2)`` under ``1/2 E[(target - f)^2]``, from ``a_i = b_i =
sigma``.  The two modes decouple, and each follows the logistic law of Saxe
et al. (2014): mode ``i`` is learned at ``T_i = ln(s_i/sigma^2 - 1)/(2 s_i)``, so
the stronger mode (``s1 > s2``) comes first and the weaker one after a plateau.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from reduced_odes.author import (
    Crossing,
    Model,
    ParameterError,
    Parameters,
    parameter,
    positive,
)


@dataclass(frozen=True)
class IncrementalParams(Parameters):
    """Singular values of the target and the initial scale."""

    s1: float = parameter(2.0, positive(1e6), "stronger singular value (learned first)")
    s2: float = parameter(0.5, positive(1e6), "weaker singular value (learned second)")
    sigma: float = parameter(1e-3, positive(0.1), "initial scale: a_i = b_i = sigma")

    def check(self) -> None:
        if not self.s1 > self.s2:
            raise ParameterError(f"s1={self.s1!r} must be > s2={self.s2!r}")


class IncrementalLearning(Model):
    """Two modes of a deep linear network; phases ``T_1``, ``T_2``: each mode half learned."""

    name = "incremental_learning"
    description = "deep linear network learning two modes in turn (Saxe et al. 2014)"
    Params = IncrementalParams
    phase_order = ("T_1", "T_2")

    def derive(self, variant):
        import sympy as sp

        from reduced_odes.author import (
            assert_conserved,
            gaussian_expectation,
            gradient_flow,
            log_coordinate,
        )

        a1, b1, a2, b2 = sp.symbols("a1 b1 a2 b2", positive=True)
        s1, s2 = sp.symbols("s1 s2", positive=True)
        x1, x2 = sp.symbols("x1 x2", real=True)
        error = (s1 - a1 * b1) * x1 + (s2 - a2 * b2) * x2
        loss = gaussian_expectation(error**2 / 2, [x1, x2]).value
        state = (a1, b1, a2, b2)
        flow = gradient_flow(state, loss, parameters=(s1, s2))
        laws = [assert_conserved(f"a{i}^2 - b{i}^2", a**2 - b**2, state, flow.rhs)
                for i, (a, b) in enumerate(((a1, b1), (a2, b2)), 1)]
        return gradient_flow(state, loss, parameters=(s1, s2), rhs=flow.rhs,
                             coordinates=[log_coordinate(v) for v in state],
                             observables={"u1": a1 * b1, "u2": a2 * b2, "loss": sp.factor(loss)},
                             identities=laws)

    def parameter_values(self, params, variant):
        return (params.s1, params.s2)

    def initial_state(self, params, variant):
        return (math.log(params.sigma),) * 4

    def phases(self, params, variant, initial, thresholds):
        return [Crossing("T_1", "u1", params.s1 / 2), Crossing("T_2", "u2", params.s2 / 2)]

    def settled(self, params, variant):
        # Both modes within 1e-9 (relative) of their targets: ln a_i + ln b_i = ln s_i.
        t1, t2 = math.log(params.s1), math.log(params.s2)
        return lambda y: max(abs(y[0] + y[1] - t1), abs(y[2] + y[3] - t2)) - 1e-9

    def horizon(self, params, variant):
        return 10 * (1 + math.log(1 / params.sigma**2)) / params.s2


MODEL = IncrementalLearning()
