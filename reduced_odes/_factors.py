"""The factors of a Gaussian expectation's integrand, parsed for the rules of
:mod:`reduced_odes._expectation`: each variable's power, step, erf scales and delta, and
the quadratic form of the exponent."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import sympy as sp

from ._errors import DerivationError

__all__ = ["has_activation"]

STEP = "gaussian expectation"
SUPPORTED = (
    "supported factors of a single variable x (c a constant of known sign): polynomials, "
    "exp(quadratic form without linear terms), erf(c*x), Heaviside(c*x), Max(0, c*x) and "
    "DiracDelta(c*x); after Stein's lemma, tilting and conditioning at most two erf/Heaviside "
    "factors may remain in a product (three only if their product is odd)"
)



def _unsupported(detail: str) -> DerivationError:
    return DerivationError(STEP, f"{detail}; {SUPPORTED}")



# --------------------------------------------------------------------------- parsing


@dataclass(frozen=True)
class _Factor:
    """What multiplies one variable ``x``: ``x^power H(x)^step prod erf(s x) delta(x)^delta``."""

    power: int = 0
    step: bool = False
    erfs: tuple[sp.Expr, ...] = ()  # the positive scales s of erf(s x), sorted
    delta: bool = False

    @property
    def trivial(self) -> bool:
        return self == _Factor()


def has_activation(expr: sp.Expr, variables: Sequence[sp.Symbol]) -> bool:
    """Whether ``expr`` applies a function other than ``exp`` to one of ``variables``.

    Examples
    --------
    >>> x, a = sp.symbols("x a")
    >>> has_activation(x**2 * sp.exp(-x**2), [x]), has_activation(sp.erf(a) * sp.erf(x), [x])
    (False, True)
    """
    names = set(variables)
    return any(not isinstance(f, sp.exp) and f.free_symbols & names
               for f in sp.sympify(expr).atoms(sp.core.function.Application))


def _scale(arg: sp.Expr, names: set[sp.Symbol], what: str) -> tuple[sp.Expr, sp.Symbol]:
    """``(c, x)`` with ``arg == c * x``; ``c`` free of the variables and of known sign."""
    inside = arg.free_symbols & names
    if len(inside) != 1:
        raise _unsupported(f"{what}: argument {arg} is not a multiple of a single variable")
    x = inside.pop()
    c = sp.cancel(arg / x)
    if c.free_symbols & names or not (c.is_positive or c.is_negative):
        raise _unsupported(f"{what}: argument {arg} is not c*{x} with c of known sign "
                           "(declare its symbols positive)")
    return c, x


def _normalise(expr: sp.Expr, names: set[sp.Symbol]) -> sp.Expr:
    """Rewrite every activation as ``erf(s x)`` (s > 0), ``Heaviside(x)``, ``DiracDelta(x)``."""

    def relu(*args):
        if len(args) != 2 or sp.S.Zero not in args:
            raise _unsupported(f"Max{args}: only Max(0, c*x) is supported")
        arg = args[1] if args[0] == 0 else args[0]
        return arg * sp.Heaviside(arg)

    def step(arg, *_):  # the value at 0 does not change an expectation
        c, x = _scale(arg, names, "Heaviside")
        return sp.Heaviside(x) if c.is_positive else 1 - sp.Heaviside(x)

    def delta(arg, *order):
        if order and order[0] != 0:
            raise _unsupported(f"DiracDelta({arg}, {order[0]}): derivatives of delta")
        c, x = _scale(arg, names, "DiracDelta")
        return sp.DiracDelta(x) / abs(c)

    def erf(arg):
        c, x = _scale(arg, names, "erf")
        return sp.erf(c * x) if c.is_positive else -sp.erf(-c * x)

    expr = expr.replace(lambda e: isinstance(e, sp.Max) and e.has(*names),
                        lambda e: relu(*e.args))
    for cls, rule in ((sp.Heaviside, step), (sp.DiracDelta, delta), (sp.erf, erf)):
        expr = expr.replace(lambda e, cls=cls: isinstance(e, cls) and e.has(*names),
                            lambda e, rule=rule: rule(*e.args))
    for f in expr.atoms(sp.core.function.Application):
        if f.free_symbols & names and not isinstance(
                f, sp.exp | sp.erf | sp.Heaviside | sp.DiracDelta):
            raise _unsupported(f"factor {f}")
    return expr


def _parse_term(term: sp.Expr, xs: Sequence[sp.Symbol]):
    """``term == coefficient * exp(x^T A x / 2) * prod_j factor_j(x_j)``: the parts."""
    index = {x: i for i, x in enumerate(xs)}
    factors = [_Factor() for _ in xs]
    coefficient, exponent = sp.Integer(1), sp.Integer(0)
    for f in sp.Mul.make_args(term):
        base, power = f.as_base_exp()
        if not f.has(*xs):
            coefficient *= f
        elif isinstance(base, sp.exp) or base == sp.E:
            exponent += (base.args[0] if isinstance(base, sp.exp) else 1) * power
        elif not (power.is_Integer and power > 0):
            raise _unsupported(f"factor {f}")
        elif base in index:
            i = index[base]
            factors[i] = replace(factors[i], power=factors[i].power + int(power))
        elif isinstance(base, sp.Heaviside):
            i = index[base.args[0]]
            factors[i] = replace(factors[i], step=True)
        elif isinstance(base, sp.erf):
            s, x = _scale(base.args[0], set(xs), "erf")
            i = index[x]
            factors[i] = replace(factors[i], erfs=_sorted((*factors[i].erfs, *[s] * int(power))))
        elif isinstance(base, sp.DiracDelta) and power == 1:  # SymPy collects delta^2
            i = index[base.args[0]]
            factors[i] = replace(factors[i], delta=True)
        else:
            raise _unsupported(f"factor {f}")
    return coefficient, tuple(factors), *_quadratic(exponent, xs)


def _sorted(scales) -> tuple[sp.Expr, ...]:
    return tuple(sorted(scales, key=sp.default_sort_key))


def _quadratic(exponent: sp.Expr, xs: Sequence[sp.Symbol]) -> tuple[sp.ImmutableMatrix, sp.Expr]:
    """``(A, c)`` with ``exponent == x^T A x / 2 + c``; linear terms are not supported."""
    n = len(xs)
    if exponent == 0:
        return sp.ImmutableMatrix.zeros(n, n), sp.Integer(0)
    try:
        poly = sp.Poly(sp.expand(exponent), *xs)
    except sp.PolynomialError:
        poly = None
    if poly is None or poly.total_degree() > 2 or any(sum(m) == 1 for m in poly.monoms()):
        raise _unsupported(f"exp({exponent}): the exponent is not a quadratic form in {list(xs)}")
    zero = dict.fromkeys(xs, 0)
    return sp.ImmutableMatrix(sp.hessian(exponent, xs)), sp.expand(exponent.xreplace(zero))
