"""The Gaussian expectation engine against quadrature, Monte Carlo and spec section 5."""

import math

import numpy as np
import pytest
import sympy as sp
from scipy import integrate

from reduced_odes import gaussian_expectation

x, y, z = sp.symbols("x y z", real=True)
a, b, c = sp.symbols("a b c", real=True)
DENSITY = 1 / math.sqrt(2 * math.pi)


def _quad_1d(poly, exponent):
    """Integral of poly(u) exp(exponent(u)) against N(0, 1); exponents combined (no overflow)."""
    value, _ = integrate.quad(lambda u: poly(u) * DENSITY * math.exp(exponent(u) - u * u / 2),
                              -np.inf, np.inf, epsabs=1e-13, epsrel=1e-12)
    return value


def _quad_2d(f):
    # The integrands decay like exp(-(1 - |A|) r^2 / 2) with |A| <= 0.5: +-14 loses < 1e-20.
    value, _ = integrate.dblquad(
        lambda v, u: f(u, v) * DENSITY**2 * math.exp(-(u * u + v * v) / 2),
        -14, 14, -14, 14, epsabs=1e-12, epsrel=1e-11)
    return value


@pytest.mark.parametrize("a_val,b_val", [(0.3, 0.0), (-0.7, 0.4), (0.5, -1.1)])
def test_one_variable_against_quadrature(a_val, b_val):
    expr = (x**3 - 2 * x + 1) * sp.exp(a * x**2 / 2 + b * x)
    closed = gaussian_expectation(expr, [x]).value.subs({a: a_val, b: b_val})
    reference = _quad_1d(lambda u: u**3 - 2 * u + 1, lambda u: a_val * u * u / 2 + b_val * u)
    assert float(closed) == pytest.approx(reference, rel=1e-10)  # quad's own accuracy ~1e-12


@pytest.mark.parametrize("a_val,c_val", [(0.3, 0.1), (-0.45, 0.2)])
def test_two_variables_against_quadrature(a_val, c_val):
    expr = x * y**3 * sp.exp(a * x * y + c * x**2 / 2) + y**2
    closed = gaussian_expectation(expr, [x, y]).value.subs({a: a_val, c: c_val})
    reference = _quad_2d(lambda u, v: u * v**3 * math.exp(a_val * u * v + c_val * u * u / 2)
                         + v * v)
    assert float(closed) == pytest.approx(reference, rel=1e-8)  # dblquad tolerance 1e-11 + box


def test_three_variables_against_monte_carlo():
    w = 0.15
    expr = z**2 * x * sp.exp(w * x * y + w * y * z) * (1 + y)
    closed = float(gaussian_expectation(expr, [x, y, z]).value)
    rng = np.random.default_rng(1)
    u, v, s = rng.standard_normal((3, 2_000_000))
    samples = s**2 * u * np.exp(w * u * v + w * v * s) * (1 + v)
    mean, stderr = samples.mean(), samples.std() / math.sqrt(samples.size)
    assert abs(closed - mean) < 4 * stderr  # 4-sigma: false failure rate ~6e-5


def test_spec_identities():
    assert sp.simplify(gaussian_expectation(sp.exp(a * x * y), [x, y]).value
                       - (1 - a**2) ** sp.Rational(-1, 2)) == 0
    assert sp.simplify(gaussian_expectation(sp.exp(c * x**2), [x]).value
                       - (1 - 2 * c) ** sp.Rational(-1, 2)) == 0


def test_cross_terms_with_a_lone_linear_token_vanish():
    # Spec section 5: the larger index enters exactly once, linearly.
    expr = sp.exp(a * x * y) * z * sp.exp(b * x * z) * sp.Symbol("u", real=True)
    u = sp.Symbol("u", real=True)
    assert gaussian_expectation(expr, [x, y, z, u]).value == 0


def test_domain_conditions_are_returned_and_checked():
    result = gaussian_expectation(sp.exp(a * x * y), [x, y])
    assert result.holds_at({a: 0.5}) and not result.holds_at({a: 1.2})
    with pytest.raises(ValueError, match="diverges"):
        gaussian_expectation(sp.exp(x**2), [x])


def test_rejects_non_quadratic_exponent():
    with pytest.raises(ValueError, match="not quadratic"):
        gaussian_expectation(sp.exp(x**3), [x])
