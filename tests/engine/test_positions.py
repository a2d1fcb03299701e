"""Position sums: closed forms against brute-force enumeration at explicit L."""

import pytest
import sympy as sp

from reduced_odes import (
    Fixed,
    Index,
    PositionSum,
    expect_product,
    expect_product_explicit,
    geometric_sum,
    token,
)
from reduced_odes._positions import SEQ_LEN as L
from reduced_odes._positions import SUM_INDEX as s
from reduced_odes.models.induction_head.declaration import induction_head_readouts, stage1_readout

k, n, p = sp.symbols("k n p")


@pytest.mark.parametrize("term", [sp.exp(-p * k), sp.exp(-2 * p * (n - k)), sp.Integer(5),
                                  3 * sp.exp(p * (k + 1))])
def test_geometric_sum_matches_sympy_summation(term):
    closed = geometric_sum(term, k, 2, n + 3)
    reference = sp.summation(term, (k, 2, n + 3))
    for n_val in (1, 4, 9):
        for p_val in (sp.Rational(3, 10), sp.Rational(-7, 5)):
            subs = {n: n_val, p: p_val}
            assert sp.simplify(closed.subs(subs) - reference.subs(subs)) == 0


def _all_terms():
    terms = []
    for closure in ("linear", "meanfield"):
        for readout in induction_head_readouts(closure):
            terms += list(readout.target + readout.model)
    readout = stage1_readout()
    return list(dict.fromkeys(terms + list(readout.target + readout.model)))


def _pairs_with_closed_forms():
    terms = _all_terms()
    return [(a, b, expect_product(a, b).value) for i, a in enumerate(terms) for b in terms[i:]]


_PAIRS = []


# One fixed rational value per parameter name, inside every closure's domain.
_VALUES = {"alpha": sp.Rational(2, 7), "w_star": sp.Rational(1, 5), "w_kq": sp.Rational(1, 6),
           "w_v1": sp.Rational(3, 4), "w_v2": sp.Rational(-2, 3), "p": sp.Rational(2, 5),
           "p_1": sp.Rational(-1, 3)}


def _numeric(expr, length):
    subs = {sym: _VALUES[sym.name] for sym in expr.free_symbols if sym != L}
    return sp.N(expr.subs(subs).subs(L, length), 30)


@pytest.mark.parametrize("length", [5, pytest.param(7, marks=pytest.mark.slow),
                                    pytest.param(9, marks=pytest.mark.slow)])
def test_model_products_match_brute_force(length):
    if not _PAIRS:
        _PAIRS.extend(_pairs_with_closed_forms())
    for a, b, closed in _PAIRS:
        brute = _numeric(expect_product_explicit(a, b, length), length)
        # Both sides are exact rationals/radicals evaluated at 30 digits.
        assert abs(_numeric(closed, length) - brute) <= sp.Float(1e-25) * (1 + abs(brute))


def test_wider_offsets_and_fixed_coincidences_match_brute_force():
    w = sp.Symbol("w", real=True)
    wide = PositionSum(sp.exp(-p * (L - s)), token("s", -2) * token("s") * sp.exp(w * token("L")
                       * token("s", -1)), Index("0", 1), Index("L", -1))
    anchored = Fixed(token("L", -1) * token("L", -3) + token("0", 2))
    for a, b in ((wide, wide), (wide, anchored), (anchored, anchored)):
        closed = expect_product(a, b).value
        for length in (7, 9):
            brute = expect_product_explicit(a, b, length)
            subs = {p: sp.Rational(2, 5), w: sp.Rational(1, 5)}
            assert abs(sp.N((closed.subs(L, length) - brute).subs(subs), 30)) < 1e-25


def test_coincidence_class_counts():
    head = PositionSum(sp.Integer(1), sp.exp(p * token("L") * token("s", -1)) * token("s"),
                       Index("0", 2), Index("L", -1))
    classes = {c.label: c for c in expect_product(head, head).classes}
    assert set(classes) == {"s' = s", "s' = s + 1", "s' = s - 1", "far apart"}
    assert sp.expand(classes["s' = s"].weight_sum - (L - 2)) == 0
    assert sp.expand(classes["s' = s + 1"].weight_sum - (L - 3)) == 0
    assert sp.expand(classes["far apart"].weight_sum - (L - 3) * (L - 4)) == 0
    assert classes["s' = s + 1"].expectation == 0 and classes["far apart"].expectation == 0
