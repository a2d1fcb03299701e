"""The derivation: the Gaussian expectation of the loss, its gradient flow, the balance law."""

from __future__ import annotations

import sympy as sp

from reduced_odes.author import (
    Derivation,
    assert_conserved,
    gaussian_expectation,
    gradient_flow,
    log_coordinate,
)

__all__ = ["derivation"]


def derivation(variant: str = "default") -> Derivation:
    """The flow of ``(a, b)`` in ``(ln a, ln b)``, with ``u = a b`` and the loss observed.

    Examples
    --------
    >>> derivation().coordinate_names
    ('log_a', 'log_b')
    """
    a, b = sp.symbols("a b", positive=True)
    s, x = sp.Symbol("s", positive=True), sp.Symbol("x", real=True)
    loss = gaussian_expectation((s * x - a * b * x) ** 2 / 2, [x]).value
    flow = gradient_flow((a, b), loss, parameters=(s,))
    balance = assert_conserved("a^2 - b^2", a**2 - b**2, (a, b), flow.rhs)
    return gradient_flow((a, b), loss, parameters=(s,), rhs=flow.rhs,
                         coordinates=(log_coordinate(a), log_coordinate(b)),
                         observables={"u": a * b, "loss": sp.factor(loss)}, identities=(balance,))
