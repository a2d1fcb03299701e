"""A single-index model on the sphere, with Hermite information exponent ``k``.

A user's model, outside the package: ``reduced-odes scaling --model
examples/single_index.py:MODEL --param d --from 1e2 --to 1e10 --phase T_half --json``.

A student ``w`` on the unit sphere learns the teacher ``y = He_k(w* . x) / sqrt(k!)``
with the same link, from ``x ~ N(0, I_d)``, by gradient flow on the correlation loss.
The loss depends on ``w`` only through the overlap ``m = w . w*``:
``L = 1 - E[He_k(w.x) He_k(w*.x)] / k! = 1 - m^k``; on the sphere the gradient is
projected, so ``dm/dt = (1 - m^2) k m^(k-1)`` (a mobility ``1 - m^2``).  A random
start has ``m0 = d^(-1/2)``, so the dimension enters through the start alone: the
escape from the equator takes ``~ d^((k-2)/2) / (k (k-2))`` for ``k >= 3`` and
``~ ln(d) / 4`` for ``k = 2`` (Ben Arous, Gheissari & Jagannath 2021).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from reduced_odes.author import (
    Crossing,
    Model,
    Parameters,
    interval,
    parameter,
)


@dataclass(frozen=True)
class SingleIndexParams(Parameters):
    """The dimension, which sets the start ``m0 = d^(-1/2)``."""

    d: float = parameter(1e4, interval(4.0, 1e16), "input dimension (start m0 = d^-1/2)")


class SingleIndex(Model):
    """Overlap ``m`` of a spherical student with a ``He_k`` teacher; phase ``T_half``
    (``m = 1/2``).  The variant is the information exponent."""

    name = "single_index"
    description = "single-index model on the sphere, Hermite information exponent k"
    Params = SingleIndexParams
    variants = ("k3", "k4", "k2", "k1")
    variant_option = "exponent"
    phase_order = ("T_half",)

    def derive(self, variant):
        import sympy as sp

        from reduced_odes.author import gradient_flow

        k = int(variant[1:])
        m = sp.Symbol("m", positive=True)
        loss = 1 - m**k
        return gradient_flow((m,), loss, parameters=(), mobility=sp.Matrix([[1 - m**2]]),
                             observables={"loss": loss})

    def parameter_values(self, params, variant):
        return ()

    def initial_state(self, params, variant):
        return (params.d ** -0.5,)

    def phases(self, params, variant, initial, thresholds):
        return [Crossing("T_half", "m", 0.5)]

    def settled(self, params, variant):
        # Settled within 1e-6 of the teacher (m -> 1 exponentially, at rate 2k; the flow
        # vanishes at m = 1, so m stays below it up to round-off: no domain is declared).
        return lambda y: abs(1 - y[0]) - 1e-6

    def horizon(self, params, variant):
        k = int(variant[1:])
        return 10.0 * (1.0 + (params.d ** ((k - 2) / 2) if k > 2 else math.log(params.d)))


MODEL = SingleIndex()
