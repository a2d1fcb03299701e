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


def _term_sets() -> list[list]:
    """The terms of each readout set a model uses: each closure's, and stage 1's."""
    sets = []
    for closure in ("linear", "meanfield"):
        sets.append([t for readout in induction_head_readouts(closure)
                     for t in readout.target + readout.model])
    readout = stage1_readout()
    sets.append(list(readout.target + readout.model))
    return [list(dict.fromkeys(terms)) for terms in sets]


def _pairs(which: str) -> list[tuple]:
    """Every pair of terms (``"all"``), the pairs some model multiplies (``"used"``: both in
    one readout set), or the rest (``"across"``: a term of one set with one of another)."""
    sets = _term_sets()
    terms = list(dict.fromkeys(t for terms in sets for t in terms))
    pairs = [(a, b) for i, a in enumerate(terms) for b in terms[i:]]
    used = [(a, b) for a, b in pairs if any(a in terms and b in terms for terms in sets)]
    return {"all": pairs, "used": used,
            "across": [pair for pair in pairs if pair not in used]}[which]


_CLOSED: dict = {}


def _closed_forms(which: str) -> list[tuple]:
    """``(a, b, closed form of E[a b])`` for :func:`_pairs` ``(which)``, each derived once."""
    for a, b in _pairs(which):
        if (a, b) not in _CLOSED:
            _CLOSED[a, b] = expect_product(a, b).value
    return [(a, b, _CLOSED[a, b]) for a, b in _pairs(which)]


# One fixed rational value per parameter name, inside every closure's domain.
_VALUES = {"alpha": sp.Rational(2, 7), "w_star": sp.Rational(1, 5), "w_kq": sp.Rational(1, 6),
           "w_v1": sp.Rational(3, 4), "w_v2": sp.Rational(-2, 3), "p": sp.Rational(2, 5),
           "p_1": sp.Rational(-1, 3)}


def _numeric(expr, length):
    subs = {sym: _VALUES[sym.name] for sym in expr.free_symbols if sym != L}
    return sp.N(expr.subs(subs).subs(L, length), 30)


#: The default run checks, at L = 5, every product a model uses (19 of the 28 pairs; the
#: closed forms are most of the cost, ~1 s each); the pairs across readout sets, which no
#: model multiplies, and the longer sequences run with ``pytest -m slow``.
@pytest.mark.parametrize("length, which", [
    (5, "used"), pytest.param(5, "across", marks=pytest.mark.slow),
    pytest.param(7, "all", marks=pytest.mark.slow),
    pytest.param(9, "all", marks=pytest.mark.slow)])
def test_model_products_match_brute_force(length, which):
    for a, b, closed in _closed_forms(which):
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
