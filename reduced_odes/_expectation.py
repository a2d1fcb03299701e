"""Closed-form Gaussian expectations of products of activations.

For a centred Gaussian vector ``x`` with a (symbolic) covariance ``C``, the
expectation of a product of single-variable factors -- polynomials,
``exp(quadratic form)``, ``erf(c x)``, ``Heaviside(x)``, ``Max(0, x)`` and
``DiracDelta(x)`` -- is derived by four generic rules, applied until none is left:

* Gaussian tilting: ``E[exp(x^T A x / 2) F] = det(I - C_SS A_SS)^{-1/2} E'[F]``
  with ``C' = C + C[:, S] A_SS (I - C_SS A_SS)^{-1} C[S, :]``, ``S`` the
  variables the exponent involves (only an ``|S| x |S|`` inverse);
* conditioning: ``E[delta(x_j) F] = p_j(0) E[F | x_j = 0]``, the conditional
  covariance being the Schur complement;
* Stein's lemma: ``E[x_j F] = sum_m C_jm E[d_m F]`` (``erf'`` is a Gaussian
  factor, ``Max(0, x)' = Heaviside(x)``, ``Heaviside' = DiracDelta``);
* what is left is a product of ``erf`` and ``Heaviside`` factors.  With
  ``Heaviside(x) = (1 + sign(x)) / 2`` every factor is odd, so a product of an
  odd number of them vanishes, and a pair is given by Price's theorem,
  ``d/dC_12 E[f(x_1) h(x_2)] = E[f'(x_1) h'(x_2)]``, the right side being derived
  by the rules above and integrated by SymPy from ``C_12 = 0``.  Four or more
  such factors have no closed form and raise :class:`DerivationError`.

Every variance and determinant the rules divide by is carried as a positive
symbol while deriving, so that square roots of ratios split; the symbols are
replaced by what they stand for at the end.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cache

import sympy as sp

from ._errors import DerivationError
from ._factors import (
    STEP,
    _Factor,
    _normalise,
    _parse_term,
    _unsupported,
    has_activation,
)
from ._orthant import OrthantKernel

__all__ = ["GaussianExpectation", "expectation", "has_activation"]

@dataclass(frozen=True)
class GaussianExpectation:
    """An expectation together with its domain of validity.

    Attributes
    ----------
    value : sympy.Expr
        The closed form.
    conditions : tuple of sympy.Boolean
        Strict inequalities (leading principal minors of ``I - A`` positive)
        that must all hold for the expectation to be finite.

    Examples
    --------
    >>> a = sp.Symbol("a")
    >>> e = GaussianExpectation(1 / sp.sqrt(1 - a**2), (1 - a**2 > 0,))
    >>> e.holds_at({a: 0.5}), e.holds_at({a: 2})
    (True, False)
    """

    value: sp.Expr
    conditions: tuple[sp.Basic, ...]

    def holds_at(self, subs: dict) -> bool:
        """Whether every condition holds after substituting ``subs``."""
        return all(bool(cond.subs(subs)) for cond in self.conditions)


class _NoClosedForm(Exception):
    """A product of this many (an even number >= 4) erf/sign factors remained."""


# --------------------------------------------------------------------------- the rules


def _tidy(expr: sp.Expr) -> sp.Expr:
    """Combine the bases of square roots so that positive factors split off them."""
    return expr.replace(
        lambda e: e.is_Pow and e.exp.is_Rational and not e.exp.is_Integer and e.base.has(sp.Add),
        lambda e: sp.Pow(sp.together(e.base), e.exp))


def _drop(matrix: sp.ImmutableMatrix, keep: Sequence[int]) -> sp.ImmutableMatrix:
    return sp.ImmutableMatrix(matrix.extract(list(keep), list(keep)))


def _symmetric(n: int, entry: Callable[[int, int], sp.Expr]) -> sp.ImmutableMatrix:
    """The symmetric matrix with the given upper triangle (one expression per pair)."""
    upper = {(i, k): entry(i, k) for i in range(n) for k in range(i, n)}
    return sp.ImmutableMatrix(n, n, lambda i, k: upper[min(i, k), max(i, k)])


class _Derivation:
    """One expectation's derivation: the positive symbols it introduced, and a memo."""

    def __init__(self) -> None:
        self.stands_for: dict[sp.Dummy, sp.Expr] = {}
        self.conditions: list[sp.Basic] = []
        self.memo: dict = {}

    def positive(self, expr: sp.Expr, name: str) -> sp.Expr:
        """``expr`` itself if SymPy knows it is positive, else a positive symbol for it."""
        if expr.is_positive:
            return expr
        symbol = sp.Dummy(name, positive=True)
        self.stands_for[symbol] = expr
        return symbol

    def resolve(self, expr: sp.Expr) -> sp.Expr:
        """Replace the positive symbols by what they stand for, newest first."""
        expr = _tidy(expr)
        for symbol in reversed(list(self.stands_for)):
            expr = _tidy(expr.xreplace({symbol: self.stands_for[symbol]}))
        return expr

    def expect(self, factors: tuple[_Factor, ...], A: sp.ImmutableMatrix,
               C: sp.ImmutableMatrix) -> sp.Expr:
        """``E[exp(x^T A x / 2) prod_j factor_j(x_j)]`` for ``x ~ N(0, C)``."""
        keep = [i for i, f in enumerate(factors) if not f.trivial or any(A.row(i))]
        if len(keep) < len(factors):  # marginalise the variables nothing depends on
            factors, A, C = tuple(factors[i] for i in keep), _drop(A, keep), _drop(C, keep)
        if not any(f.step for f in factors) and sum(f.power + len(f.erfs) for f in factors) % 2:
            return sp.Integer(0)  # odd under x -> -x
        key = (factors, A, C)
        if key not in self.memo:
            if any(A):
                self.memo[key] = self._tilt(factors, A, C)
            elif any(f.delta for f in factors):
                self.memo[key] = self._condition(factors, C)
            elif any(f.power for f in factors):
                self.memo[key] = self._stein(factors, C)
            else:
                self.memo[key] = self._odd_factors(factors, C)
        return self.memo[key]

    def _tilt(self, factors, A, C) -> sp.Expr:
        S = [i for i in range(A.rows) if any(A.row(i))]
        A_SS, C_S = A.extract(S, S), C.extract(S, list(range(C.rows)))
        M = sp.eye(len(S)) - C.extract(S, S) * A_SS
        self._convergence(A_SS, C.extract(S, S))
        det = self.positive(sp.expand(M.det()), "det")
        correction = C_S.T * A_SS * M.adjugate() * C_S
        tilted = _symmetric(C.rows, lambda i, k: sp.expand(det * C[i, k] + correction[i, k]) / det)
        zero = sp.ImmutableMatrix.zeros(A.rows, A.cols)
        return self.expect(factors, zero, tilted) / sp.sqrt(det)

    def _convergence(self, A_SS: sp.Matrix, C_SS: sp.Matrix) -> None:
        """Finite iff ``C_SS^{-1} - A_SS`` (congruent to ``C_SS - C_SS A_SS C_SS``) is > 0."""
        if A_SS.is_diagonal() and all(d.is_nonpositive for d in A_SS.diagonal()):
            return  # a Gaussian damping factor: always finite
        M = C_SS - C_SS * A_SS * C_SS
        for k in range(1, M.rows + 1):
            minor = sp.expand(M[:k, :k].det())
            cond = sp.StrictGreaterThan(minor, 0)
            if cond is sp.false:
                raise ValueError(f"expectation diverges: minor {minor} <= 0")
            if cond is not sp.true:
                self.conditions.append(cond)

    def _condition(self, factors, C) -> sp.Expr:
        j = next(i for i, f in enumerate(factors) if f.delta)
        here = factors[j]
        if here.power or here.erfs:
            return sp.Integer(0)  # x^k and erf vanish at x = 0
        if here.step:
            raise _unsupported("DiracDelta(x)*Heaviside(x): the value of Heaviside at 0 "
                               "is a convention, not an expectation")
        variance = self.positive(C[j, j], "var")
        rest = [i for i in range(C.rows) if i != j]
        schur = _symmetric(len(rest), lambda i, k: sp.expand(
            variance * C[rest[i], rest[k]] - C[rest[i], j] * C[j, rest[k]]) / variance)
        zero = sp.ImmutableMatrix.zeros(len(rest), len(rest))
        density = 1 / sp.sqrt(2 * sp.pi * variance)
        return density * self.expect(tuple(factors[i] for i in rest), zero, schur)

    def _stein(self, factors, C) -> sp.Expr:
        j = next(i for i, f in enumerate(factors) if f.power)
        factors = list(factors)
        factors[j] = replace(factors[j], power=factors[j].power - 1)
        total = sp.Integer(0)
        for m in range(C.rows):
            if C[j, m] == 0:
                continue
            for coefficient, derived, exponent in _derivatives(factors[m]):
                new = (*factors[:m], derived, *factors[m + 1:])
                A = sp.ImmutableMatrix(C.rows, C.cols,
                                       lambda i, k, m=m, e=exponent: e if i == k == m else 0)
                total += C[j, m] * coefficient * self.expect(new, A, C)
        return total

    def _odd_factors(self, factors, C) -> sp.Expr:
        """``E[prod erf(s x_i) H(x_j)]`` with ``H = (1 + sign) / 2``, by parity and Price."""
        erfs = [("erf", s, i) for i, f in enumerate(factors) for s in f.erfs]
        steps = [i for i, f in enumerate(factors) if f.step]
        total = sp.Integer(0)
        for signs in itertools.product((False, True), repeat=len(steps)):
            atoms = erfs + [("sign", sp.Integer(1), i) for i, on in zip(steps, signs, strict=True)
                            if on]
            weight = sp.Rational(1, 2 ** len(steps))
            if len(atoms) == 0:
                total += weight
            elif len(atoms) == 2:
                total += weight * _pair(atoms, C)
            elif len(atoms) == 4 and _four_signs(atoms):
                total += weight * _orthant(atoms, C)
            elif len(atoms) % 2 == 0:
                raise _NoClosedForm(len(atoms))
        return total


def _four_signs(atoms) -> bool:
    """Four sign factors of four distinct variables: :mod:`reduced_odes._orthant`'s kernel."""
    return all(kind == "sign" for kind, _, _ in atoms) and len({i for *_, i in atoms}) == 4


def _orthant(atoms, C) -> sp.Expr:
    """``E[sign(x_i) sign(x_j) sign(x_k) sign(x_l)]``: the orthant kernel of their correlations."""
    index = sorted(i for *_, i in atoms)
    return OrthantKernel(*(C[a, b] / sp.sqrt(C[a, a] * C[b, b])
                           for a, b in itertools.combinations(index, 2)))


def _derivatives(factor: _Factor):
    """``d/dx factor(x)`` as ``(coefficient, factor, added exponent)``: ``exp(e x^2 / 2)``."""
    if factor.power:
        yield factor.power, replace(factor, power=factor.power - 1), 0
    if factor.step and not factor.power:  # x^k delta(x) = 0 for k > 0
        yield 1, replace(factor, step=False, delta=True), 0
    for s in dict.fromkeys(factor.erfs):
        rest = list(factor.erfs)
        rest.remove(s)
        yield (factor.erfs.count(s) * 2 * s / sp.sqrt(sp.pi),
               replace(factor, erfs=tuple(rest)), -2 * s**2)


# --------------------------------------------------------------------------- Price's theorem

_a, _b = sp.symbols("a b", positive=True)
_c = sp.Symbol("c", real=True)
_s1, _s2 = sp.symbols("s1 s2", positive=True)


def _pair(atoms, C) -> sp.Expr:
    """``E[f(x_i) h(x_j)]`` for two odd factors (the same variable allowed)."""
    (kind1, s1, i), (kind2, s2, j) = sorted(atoms, key=lambda a: a[0])
    formula = _pair_formula(kind1, kind2)
    return formula.xreplace({_a: C[i, i], _b: C[j, j], _c: C[i, j], _s1: s1, _s2: s2})


@cache
def _pair_formula(kind1: str, kind2: str) -> sp.Expr:
    """``E[f(x) h(y)]``, ``f, h`` in {erf(s x), sign(x)}, covariance ``[[a, c], [c, b]]``.

    Price's theorem: ``d/dc E[f h] = E[f' h']``; at ``c = 0`` the expectation
    factorises into ``E[f] E[h] = 0`` (both odd).
    """
    t = sp.Dummy("t", real=True)
    coefficient, factors, exponents = sp.Integer(1), [], []
    for kind, s in ((kind1, _s1), (kind2, _s2)):
        if kind == "erf":  # erf(s x)' = 2 s exp(-s^2 x^2) / sqrt(pi)
            coefficient *= 2 * s / sp.sqrt(sp.pi)
            factors.append(_Factor())
            exponents.append(-2 * s**2)
        else:  # sign(x)' = 2 delta(x)
            coefficient *= 2
            factors.append(_Factor(delta=True))
            exponents.append(0)
    derivation = _Derivation()
    derivative = derivation.resolve(coefficient * derivation.expect(
        tuple(factors), sp.ImmutableMatrix(sp.diag(*exponents)),
        sp.ImmutableMatrix([[_a, t], [t, _b]])))
    at_zero = _one_point(kind1, _s1, _a) * _one_point(kind2, _s2, _b)
    formula = at_zero + _integrate_from_zero(derivative, t, _c)
    if sp.simplify(sp.diff(formula, _c) - derivative.xreplace({t: _c})) != 0:
        raise DerivationError(STEP, f"Price's theorem: {formula} does not integrate {derivative}")
    return formula


def _one_point(kind: str, s: sp.Expr, variance: sp.Expr) -> sp.Expr:
    """``E[erf(s x)]`` or ``E[sign(x)] = 2 E[Heaviside(x)] - 1`` for ``x ~ N(0, variance)``."""
    factor = _Factor(erfs=(s,)) if kind == "erf" else _Factor(step=True)
    value = _Derivation().expect((factor,), sp.ImmutableMatrix([[0]]),
                                 sp.ImmutableMatrix([[variance]]))
    return value if kind == "erf" else 2 * value - 1


def _integrate_from_zero(integrand: sp.Expr, t: sp.Symbol, upper: sp.Symbol) -> sp.Expr:
    """``int_0^upper integrand dt`` for ``integrand = K / sqrt(P - Q t^2)``, ``P, Q > 0``.

    SymPy integrates this form cleanly when ``P`` and ``Q`` are positive
    symbols; ``P``, ``Q`` are then substituted back (factored, for readability).
    """
    K, radicand = sp.Integer(1), None
    for f in sp.Mul.make_args(integrand):
        if not f.has(t):
            K *= f
        elif f.is_Pow and f.exp == sp.Rational(-1, 2) and radicand is None:
            radicand = f.base
        else:
            raise DerivationError(STEP, f"Price's theorem: cannot integrate {integrand} in {t}")
    poly = sp.Poly(radicand, t)
    P, Q = poly.coeff_monomial(1), -poly.coeff_monomial(t**2)
    if poly.degree() != 2 or poly.coeff_monomial(t) != 0 or not (P.is_positive and Q.is_positive):
        raise DerivationError(STEP, f"Price's theorem: cannot integrate {integrand} in {t}")
    p, q = sp.symbols("p q", positive=True)
    primitive = sp.integrate(1 / sp.sqrt(p - q * t**2), (t, 0, upper))
    return K * primitive.xreplace({p: sp.factor(P), q: sp.factor(Q)})


# --------------------------------------------------------------------------- entry point


def _covariance(covariance, n: int) -> sp.ImmutableMatrix:
    if covariance is None:
        return sp.ImmutableMatrix.eye(n)
    C = sp.ImmutableMatrix(covariance)
    if C.shape != (n, n):
        raise ValueError(f"covariance: shape {C.shape}, expected ({n}, {n}) for {n} variables")
    if any(sp.expand(C[i, k] - C[k, i]) != 0 for i in range(n) for k in range(i)):
        raise ValueError(f"covariance: {C.tolist()} is not symmetric")
    return C


def expectation(expr: sp.Expr, variables: Sequence[sp.Symbol], covariance=None):
    """``E[expr]`` for the centred Gaussian ``variables`` with the given covariance.

    The engine behind :func:`reduced_odes.gaussian_expectation` when a
    covariance is given or ``expr`` contains activations; see the module
    docstring for the rules.

    Parameters
    ----------
    expr : sympy.Expr
        A sum of products of the supported factors (see ``SUPPORTED``).
    variables : sequence of sympy.Symbol
        The Gaussian variables; every other symbol is a parameter.
    covariance : sympy.Matrix, optional
        Their covariance (symbolic entries allowed); the identity if omitted.

    Returns
    -------
    GaussianExpectation

    Raises
    ------
    DerivationError
        For a factor outside the supported set, or a product without a closed form.

    Examples
    --------
    >>> x, y, a, b, c = sp.symbols("x y a b c")
    >>> C = sp.Matrix([[a, c], [c, b]])
    >>> expectation(sp.Heaviside(x) * sp.Heaviside(y), [x, y], C).value
    asin(c/(sqrt(a)*sqrt(b)))/(2*pi) + 1/4
    >>> expectation(x * sp.erf(y / sp.sqrt(2)), [x, y], C).value
    sqrt(2)*c/(sqrt(pi)*sqrt(b + 1))
    """
    xs = list(variables)
    if len(set(xs)) != len(xs):
        raise ValueError(f"variables: {xs} has repeated entries")
    C = _covariance(covariance, len(xs))
    expanded = sp.expand(_normalise(sp.sympify(expr), set(xs)))
    derivation = _Derivation()
    total = sp.Integer(0)
    for term in sp.Add.make_args(expanded):
        coefficient, factors, A, constant = _parse_term(term, xs)
        try:
            total += coefficient * sp.exp(constant) * derivation.expect(factors, A, C)
        except _NoClosedForm as missing:
            raise _unsupported(
                f"E[{term}] has no closed form: Stein's lemma, tilting and conditioning leave "
                f"a product of {missing.args[0]} factors erf(c*x) or sign(x) = 2*Heaviside(x) - 1"
            ) from None
    conditions = tuple(dict.fromkeys(derivation.resolve(c) for c in derivation.conditions))
    return GaussianExpectation(derivation.resolve(total), conditions)
