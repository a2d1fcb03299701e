"""A user's model whose claims are declared as data (``tests/engine/test_prediction_claims.py``).

A scalar two-layer linear network ``y = a b x`` learning ``y = s x`` by gradient flow on
``(s - a b)^2 / 2``: ``da/dt = b (s - a b)``, ``db/dt = a (s - a b)``.  The origin is a
saddle (eigenvalues ``+-s``; unstable along ``a = b``, stable along ``a = -b``).  Started at
``(1, -1 + delta)`` the run falls onto the saddle along its stable manifold, lingers there,
and escapes along ``a = b`` to the line ``a b = s``; ``T_half`` is where ``a b = s / 2``.

No hook is written for its claims: ``claimed_predictions`` declares the settings and the
tolerances, and the engine predicts the escape from the saddle and the convergence rate.
"""
from __future__ import annotations

from dataclasses import dataclass

from reduced_odes.author import (
    Crossing,
    Model,
    Parameters,
    PredictionClaims,
    SettledRule,
    parameter,
    positive,
)


@dataclass(frozen=True)
class SaddleParams(Parameters):
    s: float = parameter(1.0, positive(100), "target slope")
    delta: float = parameter(1e-6, positive(0.5), "the start's offset off the stable manifold")


class SaddlePassage(Model):
    name = "saddle_passage"
    description = "scalar two-layer linear network passing the saddle at the origin"
    Params = SaddleParams
    phase_order = ("T_half",)
    grids = ("quick",)
    # The escape predicted from the plateau is within 1e-6 of the measured one here; the
    # measured rate is a fit over the run's last decades, 9e-4 off the exact 2 s at s = 2.
    claimed_predictions = PredictionClaims(
        {"quick": [{"delta": 1e-6}, {"delta": 1e-9, "s": 2.0}]}, escape_rtol=0.01,
        rate_rtol=5e-3)

    def derive(self, variant):
        import sympy as sp

        from reduced_odes.author import gradient_flow

        a, b, s = sp.symbols("a b s", real=True)
        loss = (s - a * b) ** 2 / 2
        return gradient_flow((a, b), loss, parameters=(s,), observables={"u": a * b,
                                                                         "loss": loss})

    def parameter_values(self, params, variant):
        return (params.s,)

    def initial_state(self, params, variant):
        return (1.0, -1.0 + params.delta)

    def phases(self, params, variant, initial, thresholds):
        return [Crossing("T_half", "u", params.s / 2)]

    def settled(self, params, variant):
        return SettledRule("abs(u - s_target) - 1e-9 * s_target", {"s_target": params.s})

    def horizon(self, params, variant):
        return 10.0


MODEL = SaddlePassage()
