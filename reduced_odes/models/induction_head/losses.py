"""Population losses derived from the model declarations.

``L = 1/2 E||f* - f||^2`` is expanded into products of position sums, each
evaluated in closed form by :mod:`reduced_odes._positions`.  The 4-gram loss
is then rewritten in the stable attention functions ``Phi`` and ``Psi`` of
:mod:`reduced_odes.models.induction_head.special`, after checking that the two forms are equal.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import sympy as sp

from reduced_odes.author import SEQ_LEN, assert_same, expect_product

from .declaration import (
    ALPHA,
    W_V1,
    P,
    Readout,
    induction_head_readouts,
    stage1_readout,
)
from .special import Phi, Psi

__all__ = ["DerivedLoss", "InductionHeadLosses", "derive_losses", "partial_loss"]


@dataclass(frozen=True)
class DerivedLoss:
    """A partial loss and the conditions under which its expectation exists."""

    expr: sp.Expr
    conditions: tuple[sp.Basic, ...]


def partial_loss(readout: Readout) -> DerivedLoss:
    """``1/2 E[(sum target - sum model)^2]`` of one readout, in closed form.

    Examples
    --------
    >>> from reduced_odes.models.induction_head.declaration import induction_head_readouts
    >>> g4, ih = induction_head_readouts("meanfield")
    >>> partial_loss(ih).expr.has(SEQ_LEN)
    True
    """
    signed = [(1, t) for t in readout.target] + [(-1, t) for t in readout.model]
    total, conditions = sp.Integer(0), {}
    for i, (sign_a, a) in enumerate(signed):
        for j, (sign_b, b) in enumerate(signed[i:], start=i):
            product = expect_product(a, b)
            multiplicity = 1 if i == j else 2  # E[ab] = E[ba]
            total += multiplicity * sign_a * sign_b * product.value
            conditions.update(dict.fromkeys(product.conditions))
    return DerivedLoss(total / 2, tuple(conditions))


@dataclass(frozen=True)
class InductionHeadLosses:
    """Derived Stage-II partial losses of the induction-head model for one closure.

    Attributes
    ----------
    four_gram : sympy.Expr
        ``L_G4(w_v1, p)`` in the stable functions ``Phi``, ``Psi``.
    four_gram_exp : sympy.Expr
        The same loss as derived, in elementary functions.
    induction : sympy.Expr
        ``L_IH(w_v2, w_kq)`` under the closure.
    domain : tuple of sympy.Boolean
        Conditions on ``w_kq`` and ``w_star`` for the expectations to exist.
    """

    closure: str
    four_gram: sp.Expr
    four_gram_exp: sp.Expr
    induction: sp.Expr
    domain: tuple[sp.Basic, ...]

    @property
    def total(self) -> sp.Expr:
        return self.four_gram + self.induction


def _in_stable_functions(loss: sp.Expr, weight: sp.Symbol, slope: sp.Symbol,
                         length: sp.Expr) -> sp.Expr:
    """Rewrite ``c2 w^2 + c1 w + c0`` with ``c2 = Psi/2`` and ``c1 = -alpha Phi``.

    Each identification is checked (symbolically or to 30 digits) before use.
    """
    poly = sp.Poly(sp.expand(loss), weight)
    if poly.degree() != 2:
        raise AssertionError(f"4-gram loss is not quadratic in {weight}: {loss}")
    c2, c1, c0 = (poly.coeff_monomial(weight**k) for k in (2, 1, 0))
    phi, psi = Phi(slope, length), Psi(slope, length)
    slope_range = {slope: (-3.0, 3.0)}
    assert_same(c2, psi.rewrite(sp.exp) / 2, domain=slope_range, symbolic=False)
    assert_same(c1, -ALPHA * phi.rewrite(sp.exp), domain=slope_range, symbolic=False)
    return sp.Rational(1, 2) * (psi * weight**2 - 2 * ALPHA * phi * weight) + c0


@cache
def derive_losses(closure: str) -> InductionHeadLosses:
    """Derive ``L_G4`` and ``L_IH`` of the Stage-II model under ``closure``.

    Examples
    --------
    >>> losses = derive_losses("linear")
    >>> for condition in sorted(str(c) for c in losses.domain):
    ...     print(condition)
    -w_kq**2 - 2*w_kq*w_star - w_star**2 + 1 > 0
    -w_kq**2 - w_star**2 + 1 > 0
    1 - 4*w_kq**2 > 0
    1 - 4*w_star**2 > 0
    """
    g4_readout, ih_readout = induction_head_readouts(closure)
    g4, ih = partial_loss(g4_readout), partial_loss(ih_readout)
    stable = _in_stable_functions(g4.expr, W_V1, P, SEQ_LEN)
    # Conditions implied by others (e.g. 1 - w^2 > 0 given 1 - 4w^2 > 0) are kept
    # only if they are not implied by the tighter ones on the same variables.
    domain = _tightest(ih.conditions)
    return InductionHeadLosses(closure, stable, g4.expr, ih.expr, domain)


def _tightest(conditions: tuple[sp.Basic, ...]) -> tuple[sp.Basic, ...]:
    """Drop conditions implied by another one that involves the same symbols."""
    kept = []
    for cond in conditions:
        implied = any(
            other is not cond and other.free_symbols == cond.free_symbols
            and _implies(other, cond)
            for other in conditions
        )
        if not implied:
            kept.append(cond)
    return tuple(sorted(kept, key=str))


def _implies(stronger: sp.Basic, weaker: sp.Basic) -> bool:
    """``stronger => weaker`` for conditions ``f > 0`` polynomial in one variable."""
    symbols = list(stronger.free_symbols)
    if len(symbols) != 1:
        return False
    (x,) = symbols
    region_strong = sp.solve_univariate_inequality(stronger, x, relational=False)
    region_weak = sp.solve_univariate_inequality(weaker, x, relational=False)
    return region_strong.is_subset(region_weak) and region_strong != region_weak


@cache
def derive_stage1_loss() -> sp.Expr:
    """Stage-I loss ``L_I(p_1)`` (spec section 4), derived like the others.

    Examples
    --------
    >>> loss = derive_stage1_loss()
    >>> symbol = {s.name: s for s in loss.free_symbols}
    >>> sorted(symbol)
    ['L', 'alpha', 'p_1']
    >>> at_L10 = loss.subs({symbol["L"]: 10, symbol["alpha"]: 1})
    >>> uniform = at_L10.subs(symbol["p_1"], sp.Rational(1, 10**6))  # attention on 8 positions
    >>> round(float(uniform), 4)  # (1 - 1/8)/2
    0.4375
    """
    return partial_loss(stage1_readout()).expr

