"""Expectations of products of sums over sequence positions.

A readout of an attention head is a sum over positions ``s`` of a position
weight ``w(s)`` times a body built from tokens ``x_{s+k}``, ``x_{L+k}`` or
``x_k``.  The expectation of a product of two such sums splits into
index-coincidence classes:

* generic pairs, classified by the offset ``d = s' - s``: each ``d`` at which
  two tokens coincide is its own class (``s' = s``, ``|s - s'| = 1``, ...) and
  every other offset is "far apart";
* isolated special positions where a token meets a fixed token ``x_{L+k}`` or
  falls on the zero padding ``x_k, k <= 0``.

Each class contributes ``(sum of weights over the class) x (Gaussian
expectation of the class)``; the weight sums are geometric and are summed in
closed form in symbolic ``L``.  Results assume ``L`` large enough that
positions anchored at the start and at ``L`` never meet; the test-suite checks
them against brute-force enumeration at small explicit ``L``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import sympy as sp

from ._gaussian import gaussian_expectation

__all__ = [
    "CoincidenceClass",
    "Fixed",
    "Index",
    "PositionSum",
    "ProductExpectation",
    "SEQ_LEN",
    "SUM_INDEX",
    "expect_product",
    "expect_product_explicit",
    "geometric_sum",
    "token",
]

#: Symbolic sequence length and running position.
SEQ_LEN = sp.Symbol("L", positive=True, integer=True)
SUM_INDEX = sp.Symbol("s", integer=True)

_START, _END = "0", "L"


@dataclass(frozen=True)
class Index:
    """A token position ``anchor + offset``.

    ``anchor`` is ``"0"`` (absolute), ``"L"`` (the last position) or the name of
    a running position such as ``"s"``.

    Examples
    --------
    >>> Index("L", -1).as_expr(), Index("s", 2).shift(-1)
    (L - 1, Index(anchor='s', offset=1))
    >>> Index("0", 0).is_padding, Index("0", 1).is_padding  # x_0 = 0 pads the sequence
    (True, False)
    """

    anchor: str
    offset: int

    def shift(self, k: int) -> Index:
        return Index(self.anchor, self.offset + k)

    def as_expr(self) -> sp.Expr:
        base = {_START: sp.Integer(0), _END: SEQ_LEN}.get(self.anchor)
        return (SUM_INDEX if base is None else base) + self.offset

    @property
    def is_padding(self) -> bool:
        return self.anchor == _START and self.offset <= 0


_TOKENS: dict[sp.Symbol, Index] = {}


def token(anchor: str, offset: int = 0) -> sp.Symbol:
    """The token symbol ``x_{anchor + offset}``.

    Examples
    --------
    >>> token("s", -1), token("L"), token("0", 3)
    (x_{s-1}, x_{L}, x_{3})
    """
    idx = Index(anchor, offset)
    sign = "" if anchor == _START or offset == 0 else f"{offset:+d}"
    name = f"x_{{{offset}}}" if anchor == _START else f"x_{{{anchor}{sign}}}"
    sym = sp.Symbol(name, real=True)
    _TOKENS[sym] = idx
    return sym


def _tokens_in(expr: sp.Expr) -> dict[sp.Symbol, Index]:
    return {sym: _TOKENS[sym] for sym in expr.free_symbols if sym in _TOKENS}


def _precedes(a: Index, b: Index) -> int:
    """Sign of ``a - b`` for comparable anchors (``L`` is taken as large)."""
    if a.anchor == b.anchor:
        return (a.offset > b.offset) - (a.offset < b.offset)
    order = {_START: 0, _END: 1}
    if a.anchor in order and b.anchor in order:
        return order[a.anchor] - order[b.anchor]
    raise ValueError(f"positions {a} and {b} cannot be compared")


@dataclass(frozen=True)
class PositionSum:
    """``sum_{s=lo}^{hi} weight(s) * body``; ``body`` uses tokens ``token("s", k)``.

    Examples
    --------
    The sum of ``x_s x_{s-1}`` over ``s = 1 .. L`` (``x_0 = 0``):

    >>> import sympy as sp
    >>> pairs = PositionSum(sp.Integer(1), token("s") * token("s", -1), Index("0", 1),
    ...                     Index("L", 0))
    >>> pairs.offsets, pairs.at(Index("L", 0))
    ([-1, 0], x_{L-1}*x_{L})
    >>> expect_product(pairs, pairs).value
    L - 1
    """

    weight: sp.Expr
    body: sp.Expr
    lo: Index
    hi: Index

    def contains(self, idx: Index) -> bool:
        return _precedes(self.lo, idx) <= 0 <= _precedes(self.hi, idx)

    @property
    def offsets(self) -> list[int]:
        return sorted({i.offset for i in _tokens_in(self.body).values() if i.anchor == "s"})

    def at(self, position: Index) -> sp.Expr:
        """The body with its running anchor ``s`` moved to ``position``."""
        return _move(self.body, "s", position)

    def weight_at(self, position: Index) -> sp.Expr:
        return self.weight.subs(SUM_INDEX, position.as_expr())

    def special_points(self, fixed: Iterable[Index]) -> set[Index]:
        """Positions where a running token hits a fixed token or the padding."""
        points = set()
        for k in self.offsets:
            points |= {f.shift(-k) for f in fixed}
            points |= {Index(_START, j) for j in range(self.lo.offset, -k + 1)
                       if self.lo.anchor == _START}
        return {p for p in points if p.anchor in (_START, _END) and self.contains(p)}


@dataclass(frozen=True)
class Fixed:
    """A term without a position sum; its body uses only fixed tokens.

    Examples
    --------
    >>> import sympy as sp
    >>> last = Fixed(token("L"))
    >>> expect_product(Fixed(token("L") ** 2), Fixed(token("L") ** 2)).value  # E[x^4]
    3
    >>> tokens = PositionSum(sp.Integer(1), token("s"), Index("0", 1), Index("L", 0))
    >>> expect_product(last, tokens).value  # only s = L meets x_L
    1
    """

    body: sp.Expr


def _move(body: sp.Expr, anchor: str, position: Index) -> sp.Expr:
    """Re-anchor tokens ``x_{anchor+k}`` at ``position + k``."""
    subs = {sym: token(position.anchor, position.offset + idx.offset)
            for sym, idx in _tokens_in(body).items() if idx.anchor == anchor}
    return body.xreplace(subs)


@dataclass(frozen=True)
class CoincidenceClass:
    """One generic class of position pairs: its label, weight sum and expectation."""

    label: str
    weight_sum: sp.Expr
    expectation: sp.Expr


@dataclass(frozen=True)
class ProductExpectation:
    """``E[A * B]`` with its domain conditions and the generic coincidence classes."""

    value: sp.Expr
    conditions: tuple[sp.Basic, ...]
    classes: tuple[CoincidenceClass, ...] = field(default=())


class _Accumulator:
    def __init__(self):
        self.conditions: dict[sp.Basic, None] = {}

    def expect(self, expr: sp.Expr) -> sp.Expr:
        """Gaussian expectation with coinciding tokens merged and padding set to 0."""
        subs = {sym: 0 for sym, idx in _tokens_in(expr).items() if idx.is_padding}
        expr = expr.xreplace(subs)
        result = gaussian_expectation(expr, list(_tokens_in(expr)))
        self.conditions.update(dict.fromkeys(result.conditions))
        return result.value


def geometric_sum(term: sp.Expr, index: sp.Symbol, lo: sp.Expr, hi: sp.Expr) -> sp.Expr:
    """Closed form of ``sum_{index=lo}^{hi} term`` for a geometric ``term``.

    Examples
    --------
    >>> import sympy as sp
    >>> k, n, p = sp.symbols("k n p")
    >>> geometric_sum(sp.exp(-p * k), k, 0, n - 1)
    (1 - exp(-p)**n)/(1 - exp(-p))
    >>> geometric_sum(sp.Integer(3), k, 1, n)
    3*n
    """
    ratio = sp.simplify(sp.powsimp(term.subs(index, index + 1) / term, combine="exp"))
    if ratio.has(index):
        raise ValueError(f"{term} is not geometric in {index}")
    count = sp.expand(hi - lo + 1)
    first = sp.powsimp(term.subs(index, lo), combine="exp")
    if ratio == 1:
        return first * count
    return first * (1 - sp.powsimp(ratio**count, combine="exp")) / (1 - ratio)


def _range_sum(weight: sp.Expr, lo: Index, hi: Index, excluded: Iterable[Index]) -> sp.Expr:
    full = geometric_sum(weight, SUM_INDEX, lo.as_expr(), hi.as_expr())
    return full - sum((weight.subs(SUM_INDEX, p.as_expr()) for p in excluded), sp.Integer(0))


def _single_sum(acc, term: PositionSum, fixed_body: sp.Expr, excluded: set[Index]) -> sp.Expr:
    """``sum_{s in range, s not excluded} w(s) E[fixed_body * body(s)]``."""
    fixed = [i for i in _tokens_in(fixed_body * term.body).values() if i.anchor != "s"]
    special = term.special_points(fixed)
    generic = acc.expect(fixed_body * term.body)
    skipped = {p for p in special | excluded if term.contains(p)}
    total = generic * _range_sum(term.weight, term.lo, term.hi, skipped)
    for p in special - excluded:
        total += term.weight_at(p) * acc.expect(fixed_body * term.at(p))
    return total


def _sum_product(acc, a: PositionSum, b: PositionSum) -> tuple[sp.Expr, list]:
    b_t = _move(b.body, "s", Index("t", 0))
    fixed = [i for i in _tokens_in(a.body * b.body).values() if i.anchor in (_START, _END)]
    points_a, points_b = a.special_points(fixed), b.special_points(fixed)
    # Pairs with a special position on either side: single sums over the other.
    total = sp.Integer(0)
    for p in points_a:
        total += a.weight_at(p) * _single_sum(acc, b, a.at(p), set())
    for p in points_b:
        total += b.weight_at(p) * _single_sum(acc, a, b.at(p), points_a)
    # Generic pairs: far apart, plus one class per coinciding offset d.
    far = acc.expect(a.body * b_t)
    far_weight = (_range_sum(a.weight, a.lo, a.hi, points_a)
                  * _range_sum(b.weight, b.lo, b.hi, points_b))
    total += far * far_weight
    classes = []
    diagonal_weight_total = sp.Integer(0)
    for d in sorted({i - j for i in a.offsets for j in b.offsets}):
        lo = a.lo if _precedes(a.lo, b.lo.shift(-d)) >= 0 else b.lo.shift(-d)
        hi = a.hi if _precedes(a.hi, b.hi.shift(-d)) <= 0 else b.hi.shift(-d)
        pair_weight = a.weight * b.weight.subs(SUM_INDEX, SUM_INDEX + d)
        excluded = {p for p in points_a if b.contains(p.shift(d))}
        excluded |= {p.shift(-d) for p in points_b if a.contains(p.shift(-d))}
        weight = _range_sum(pair_weight, lo, hi, excluded)
        expectation = acc.expect(a.body * _move(b.body, "s", Index("s", d)))
        total += (expectation - far) * weight
        diagonal_weight_total += weight
        label = "s' = s" if d == 0 else f"s' = s {'+' if d > 0 else '-'} {abs(d)}"
        classes.append(CoincidenceClass(label, weight, expectation))
    classes.append(CoincidenceClass("far apart", far_weight - diagonal_weight_total, far))
    return total, classes


def expect_product(a: PositionSum | Fixed, b: PositionSum | Fixed) -> ProductExpectation:
    """Closed form of ``E[a * b]`` in symbolic ``L``.

    Examples
    --------
    >>> import sympy as sp
    >>> w = sp.Symbol("w")
    >>> head = PositionSum(sp.Integer(1), sp.exp(w * token("L") * token("s", -1)) * token("s"),
    ...                    Index("0", 2), Index("L", -1))
    >>> expect_product(head, head).value
    (L - 2)/sqrt(1 - 4*w**2)
    """
    acc = _Accumulator()
    classes: list = []
    if isinstance(a, Fixed) and isinstance(b, Fixed):
        value = acc.expect(a.body * b.body)
    elif isinstance(a, Fixed) or isinstance(b, Fixed):
        fixed, summed = (a, b) if isinstance(a, Fixed) else (b, a)
        value = _single_sum(acc, summed, fixed.body, set())
    else:
        value, classes = _sum_product(acc, a, b)
    return ProductExpectation(sp.simplify(value), tuple(acc.conditions), tuple(classes))


def expect_product_explicit(a: PositionSum | Fixed, b: PositionSum | Fixed,
                            length: int) -> sp.Expr:
    """Brute-force ``E[a * b]`` at an explicit ``L``: every position pair enumerated.

    This is the independent reference for :func:`expect_product`.

    Examples
    --------
    >>> import sympy as sp
    >>> pairs = PositionSum(sp.Integer(1), token("s") * token("s", -1), Index("0", 1),
    ...                     Index("L", 0))
    >>> closed_form = expect_product(pairs, pairs).value
    >>> expect_product_explicit(pairs, pairs, 5), closed_form.subs(SEQ_LEN, 5)
    (4, 4)
    """
    def expand(term) -> list[sp.Expr]:
        if isinstance(term, Fixed):
            return [term.body]
        lo = int(term.lo.as_expr().subs(SEQ_LEN, length))
        hi = int(term.hi.as_expr().subs(SEQ_LEN, length))
        return [term.weight_at(Index(_START, s)) * term.at(Index(_START, s))
                for s in range(lo, hi + 1)]

    def absolute(expr):
        subs = {sym: token(_START, int(idx.as_expr().subs(SEQ_LEN, length)))
                for sym, idx in _tokens_in(expr).items()}
        return expr.xreplace(subs).subs(SEQ_LEN, length)

    acc = _Accumulator()
    return sum((acc.expect(absolute(x * y)) for x in expand(a) for y in expand(b)),
               sp.Integer(0))
