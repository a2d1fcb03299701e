"""Closed-form Gaussian expectations of ``poly(x) * exp(x^T A x / 2 + b^T x + c)``.

For jointly standard-normal ``x`` and ``I - A`` positive definite,

    E[exp(x^T A x / 2 + b^T x)] = det(I - A)^{-1/2} exp(b^T (I - A)^{-1} b / 2) =: G(b),

and a polynomial prefactor is obtained by differentiating the generating
function: ``E[x^k exp(...)] = d^k G / db^k``.  Every expectation comes with
the conditions under which it exists (Sylvester's criterion on ``I - A``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import reduce

import sympy as sp

# The result type and the rules for activations; ``GaussianExpectation`` is re-exported.
from ._expectation import GaussianExpectation, expectation, has_activation

__all__ = ["GaussianExpectation", "gaussian_expectation"]


def _split_exponential(term: sp.Expr) -> tuple[sp.Expr, sp.Expr]:
    """Split a product into (polynomial prefactor, total exponent)."""
    prefactor, exponent = sp.Integer(1), sp.Integer(0)
    for factor in sp.Mul.make_args(term):
        base, power = factor.as_base_exp()
        if isinstance(base, sp.exp):
            exponent += base.args[0] * power
        elif base == sp.E:
            exponent += power
        else:
            prefactor *= factor
    return prefactor, exponent


def _quadratic_form(exponent: sp.Expr, xs: Sequence[sp.Symbol]):
    """Return (A, b, c) with exponent == x^T A x / 2 + b^T x + c, or raise."""
    poly = sp.Poly(sp.expand(exponent), *xs) if xs else None
    if poly is not None and poly.total_degree() > 2:
        raise ValueError(f"exponent {exponent} is not quadratic in {list(xs)}")
    zero = {x: 0 for x in xs}
    hess = sp.hessian(exponent, xs) if xs else sp.zeros(0, 0)
    grad = sp.Matrix([sp.diff(exponent, x).subs(zero) for x in xs])
    return hess, grad, sp.expand(exponent.subs(zero))


def _minors_positive(m: sp.Matrix) -> tuple[sp.Basic, ...]:
    """Sylvester's criterion: all leading principal minors of ``m`` are > 0."""
    conditions = []
    for k in range(1, m.shape[0] + 1):
        minor = sp.expand(m[:k, :k].det())
        cond = sp.StrictGreaterThan(minor, 0)
        if cond is sp.false:
            raise ValueError(f"expectation diverges: leading minor {minor} <= 0")
        if cond is not sp.true:
            conditions.append(cond)
    return tuple(conditions)


def _expect_term(term: sp.Expr, xs: Sequence[sp.Symbol]) -> GaussianExpectation:
    prefactor, exponent = _split_exponential(term)
    active = [x for x in xs if exponent.has(x) or prefactor.has(x)]
    A, b, c = _quadratic_form(exponent, active)
    n = len(active)
    if n == 0:
        return GaussianExpectation(sp.exp(c) * prefactor, ())
    precision = sp.eye(n) - A
    betas = sp.symbols(f"beta0:{n}")
    beta = sp.Matrix(betas)
    # The generating function of the tilted Gaussian: G(beta) above.
    covariance = precision.inv()
    generating = (beta.T * covariance * beta)[0, 0] / 2
    norm = 1 / sp.sqrt(sp.expand(precision.det()))
    poly = sp.Poly(prefactor, *active)
    total = sp.Integer(0)
    for monom, coeff in poly.terms():
        # d^k/dbeta^k exp(q(beta)) = exp(q) * P(beta); differentiate the P only.
        p_beta = reduce(
            lambda acc, ik: _diff_exp_poly(acc, generating, betas[ik[0]], ik[1]),
            enumerate(monom),
            sp.Integer(1),
        )
        total += coeff * p_beta
    at_b = dict(zip(betas, b, strict=True))
    value = norm * sp.exp(c + generating.subs(at_b)) * total.subs(at_b)
    return GaussianExpectation(value, _minors_positive(precision))


def _diff_exp_poly(p: sp.Expr, q: sp.Expr, var: sp.Symbol, times: int) -> sp.Expr:
    """Return P' with d^times/dvar^times [p exp(q)] = P' exp(q)."""
    for _ in range(times):
        p = sp.expand(sp.diff(p, var) + p * sp.diff(q, var))
    return p


def gaussian_expectation(
    expr: sp.Expr, variables: Iterable[sp.Symbol], covariance: sp.Matrix | None = None
) -> GaussianExpectation:
    """Expectation of ``expr`` over the centred Gaussian ``variables``.

    Without ``covariance`` the variables are independent standard normals and ``expr`` a
    sum of terms ``poly(x) * exp(quadratic(x))`` (symbolic coefficients allowed).  With a
    ``covariance``, or activations (``erf(c*x)``, ``Heaviside(x)``, ``Max(0, x)``,
    ``DiracDelta(x)`` of single variables), :mod:`reduced_odes._expectation` derives it
    (tilting, conditioning, Stein's lemma and Price's theorem); its exponents must then be
    quadratic forms without linear terms.

    Parameters
    ----------
    expr : sympy.Expr
        Integrand.
    variables : iterable of sympy.Symbol
        The Gaussian variables; all other symbols are parameters.
    covariance : sympy.Matrix, optional
        The covariance of ``variables`` (symbolic entries allowed); default the identity.

    Returns
    -------
    GaussianExpectation
        The closed form and the conditions (``I - A`` positive definite, for
        every term) under which it is finite.

    Raises
    ------
    DerivationError
        For activations or products outside what :mod:`reduced_odes._expectation`
        supports (the message lists what is).

    Examples
    --------
    >>> import sympy as sp
    >>> x, y, a = sp.symbols("x y a")
    >>> gaussian_expectation(sp.exp(a * x * y), [x, y]).value
    1/sqrt(1 - a**2)
    >>> gaussian_expectation(x**2, [x]).value
    1

    Over a correlated pair, Price's theorem gives the arcsine law of two erfs:

    >>> b, c = sp.symbols("b c")
    >>> C = sp.Matrix([[a, c], [c, b]])
    >>> g = lambda u: sp.erf(u / sp.sqrt(2))
    >>> gaussian_expectation(g(x) * g(y), [x, y], covariance=C).value
    2*asin(c/(sqrt(a + 1)*sqrt(b + 1)))/pi

    and, with Stein's lemma, the arc-cosine kernel of two ReLUs:

    >>> gaussian_expectation(sp.Max(0, x) * sp.Max(0, y), [x, y], covariance=C).value
    c*(asin(c/(sqrt(a)*sqrt(b)))/(2*pi) + 1/4) + sqrt(a*b - c**2)/(2*pi)
    """
    xs = list(variables)
    if covariance is not None or has_activation(expr, xs):
        return expectation(expr, xs, covariance)
    return _expect_sum(expr, xs)


def _expect_sum(expr: sp.Expr, xs: list[sp.Symbol]) -> GaussianExpectation:
    """The expectation of a sum of ``poly(x) * exp(quadratic(x))`` over standard normals,
    term by term (products of exponentials combined first)."""
    expanded = sp.expand(sp.powsimp(sp.sympify(expr), combine="exp"), power_exp=False)
    terms = [sp.powsimp(t, combine="exp") for t in sp.Add.make_args(expanded)]
    results = [_expect_term(t, xs) for t in terms]
    value = sp.Add(*[r.value for r in results])
    conditions = tuple(dict.fromkeys(c for r in results for c in r.conditions))
    return GaussianExpectation(value, conditions)
