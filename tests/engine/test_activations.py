"""Gaussian expectations of activations against quadrature, Monte Carlo and the literature.

The references are independent of the derivation (tilting, conditioning, Stein,
Price): Gauss-Hermite quadrature after a Cholesky factorisation, polar quadrature
of positively homogeneous integrands with the kinks as breakpoints, Monte Carlo,
Isserlis' theorem by enumerating pairings, and Saad & Solla's (1995) closed forms
typed here.
"""

from __future__ import annotations

import math
from functools import cache, lru_cache

import mpmath as mp
import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.polynomial.hermite_e import hermegauss
from scipy import integrate
from scipy.special import erf

from reduced_odes import DerivationError, _gaussian, activation, gaussian_expectation

u, v, w, y = VARS = sp.symbols("u v w y", real=True)
C4 = sp.Matrix(4, 4, lambda i, k: sp.Symbol(f"C{min(i, k) + 1}{max(i, k) + 1}"))
ERF, RELU = activation("erf"), activation("relu")


def _covariance(rng: np.random.Generator, n: int) -> np.ndarray:
    """A random SPD matrix ``F F^T / n`` from a Gaussian factor ``F`` (variances ~ 1)."""
    factor = rng.normal(size=(n, n))
    return factor @ factor.T / n


def _entries(C: np.ndarray, n: int) -> dict:
    return {C4[i, k]: sp.Float(C[i, k], 30) for i in range(n) for k in range(i, n)}


@cache
def _derived(expr: sp.Expr, n: int):
    """The derived closed form as a 30-digit mpmath function of an ``n x n`` covariance."""
    value = gaussian_expectation(expr, VARS[:n], covariance=C4[:n, :n]).value
    symbols = [C4[i, k] for i in range(n) for k in range(i, n)]
    f = sp.lambdify(symbols, value, "mpmath")

    def at(C: np.ndarray) -> float:
        with mp.workdps(30):
            return float(f(*[mp.mpf(C[i, k]) for i in range(n) for k in range(i, n)]))
    return at


def _grid(points: np.ndarray, weights: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
    """The tensor grid of a 1-D rule in ``d`` dimensions: nodes ``(d, n^d)``, weights."""
    nodes = np.stack(np.meshgrid(*[points] * d, indexing="ij")).reshape(d, -1)
    return nodes, np.prod(np.stack(np.meshgrid(*[weights] * d, indexing="ij")).reshape(d, -1), 0)


@cache
def _hermite_rule(nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Hermite nodes and weights for ``N(0, 1)`` (NumPy takes ~50 ms to compute them)."""
    z, weights = hermegauss(nodes)
    return z, weights / math.sqrt(2 * math.pi)


def _gauss_hermite(C: np.ndarray, f, nodes: int) -> float:
    """``E[f(x)]``, ``x = L z``, by tensor Gauss-Hermite in ``z`` (in 4-D one slab per node)."""
    z, weights = _hermite_rule(nodes)
    d = C.shape[0]
    L = np.linalg.cholesky(C)
    if d <= 3:
        grid, grid_w = _grid(z, weights, d)
        return float(np.sum(grid_w * f(*(L @ grid))))
    rest, rest_w = _grid(z, weights, d - 1)
    total = 0.0
    for z1, w1 in zip(z, weights, strict=True):
        x = L @ np.vstack([np.full(rest.shape[1], z1), rest])
        total += w1 * np.sum(rest_w * f(*x))
    return total


def _converged_gauss_hermite(C, f, nodes: int, more: int, tol: float) -> float:
    """Gauss-Hermite with ``nodes``, checked against ``more`` nodes.

    The integrands are entire, so the error decays faster than any power of the
    number of nodes: the change from ``nodes`` to ``more`` bounds the error.
    """
    coarse, fine = _gauss_hermite(C, f, nodes), _gauss_hermite(C, f, more)
    assert abs(fine - coarse) < tol, f"Gauss-Hermite not converged: {fine - coarse:.2e}"
    return fine


def _polar(C: np.ndarray, h, degree: int) -> float:
    """``E[h(x)]`` for a 2-D ``x ~ N(0, C)`` and ``h`` positively homogeneous of ``degree``.

    With ``x = L r e(theta)`` the radial integral is ``E[r^k] = 2^{k/2} Gamma(1 + k/2)``;
    the angular one is done by mpmath between the kinks (where a row of ``L`` is
    orthogonal to ``e(theta)``), so that each piece is smooth.
    """
    with mp.workdps(30):
        L = mp.cholesky(mp.matrix(C.tolist()))
        kinks = set()
        for i in range(2):
            zero = mp.atan2(-L[i, 0], L[i, 1]) % mp.pi
            kinks |= {zero, zero + mp.pi}
        points = [mp.mpf(0), *sorted(kinks), 2 * mp.pi]

        def angular(theta):
            e = (mp.cos(theta), mp.sin(theta))
            return h(*(L[i, 0] * e[0] + L[i, 1] * e[1] for i in range(2)))
        radial = 2 ** mp.mpf(degree / 2) * mp.gamma(1 + mp.mpf(degree) / 2)
        return float(radial * mp.quad(angular, points) / (2 * mp.pi))


def _relu(t):
    return t if t > 0 else 0 * t


def _step(t):
    return 1 if t > 0 else 0


# ---------------------------------------------------------------- I2: erf pair and ReLU pair

def _cases(seed: int, count: int, n: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [_covariance(rng, n) for _ in range(count)]


ERF_PAIR = ERF.function(u) * ERF.function(v)
RELU_PAIR = RELU.function(u) * RELU.function(v)


def _check_erf_pair(C):
    reference = _converged_gauss_hermite(
        C, lambda a, b: erf(a / math.sqrt(2)) * erf(b / math.sqrt(2)), 120, 160, 1e-14)
    # GH converged to < 1e-14 (checked), the closed form at 30 digits: 1e-12 is comfortable.
    assert _derived(ERF_PAIR, 2)(C) == pytest.approx(reference, abs=1e-12)


def _check_relu_pair(C):
    reference = _polar(C, lambda a, b: _relu(a) * _relu(b), degree=2)
    # Smooth pieces integrated by mpmath at 30 digits: the reference is good to ~1e-25.
    assert _derived(RELU_PAIR, 2)(C) == pytest.approx(reference, abs=1e-12)


def test_erf_pair_against_gauss_hermite_at_100_covariances():
    for C in _cases(11, 100, 2):
        _check_erf_pair(C)


def test_relu_pair_against_polar_quadrature_at_100_covariances():
    for C in _cases(12, 100, 2):
        _check_relu_pair(C)


@pytest.mark.parametrize("C", _cases(13, 5, 2))
def test_step_pair_and_step_relu_against_polar_quadrature(C):
    # Orthant probability (degree 0) and E[H(u) Max(0, v)] (degree 1); tolerance as above.
    step_pair = sp.Heaviside(u) * sp.Heaviside(v)
    assert _derived(step_pair, 2)(C) == pytest.approx(
        _polar(C, lambda a, b: _step(a) * _step(b), 0), abs=1e-12)
    step_relu = sp.Heaviside(u) * RELU.function(v)
    assert _derived(step_relu, 2)(C) == pytest.approx(
        _polar(C, lambda a, b: _step(a) * _relu(b), 1), abs=1e-12)


# ---------------------------------------------------------------- I3 and I4 for erf

def _saad_solla_i3(C) -> float:
    """Saad & Solla 1995: ``E[g'(u) v g(w)]`` for erf, typed from the paper."""
    C11, C12, C13, C23, C33 = C[0, 0], C[0, 1], C[0, 2], C[1, 2], C[2, 2]
    L3 = (1 + C11) * (1 + C33) - C13**2
    return 2 / math.pi / math.sqrt(L3) * (C23 * (1 + C11) - C12 * C13) / (1 + C11)


def _saad_solla_i4(C) -> float:
    """Saad & Solla 1995: ``E[g'(u) g'(v) g(w) g(y)]`` for erf, typed from the paper."""
    (C11, C12, C13, C14), (_, C22, C23, C24), (_, _, C33, C34), (_, _, _, C44) = C.tolist()
    L4 = (1 + C11) * (1 + C22) - C12**2
    L0 = (L4 * C34 - C23 * C24 * (1 + C11) - C13 * C14 * (1 + C22)
          + C12 * C13 * C24 + C12 * C14 * C23)
    L1 = L4 * (1 + C33) - C23**2 * (1 + C11) - C13**2 * (1 + C22) + 2 * C12 * C13 * C23
    L2 = L4 * (1 + C44) - C24**2 * (1 + C11) - C14**2 * (1 + C22) + 2 * C12 * C14 * C24
    return 4 / (math.pi**2 * math.sqrt(L4)) * math.asin(L0 / math.sqrt(L1 * L2))


I3 = ERF.derivative(u) * v * ERF.function(w)
I4 = ERF.derivative(u) * ERF.derivative(v) * ERF.function(w) * ERF.function(y)


def _g(t):
    return erf(t / math.sqrt(2))


def _dg(t):
    return math.sqrt(2 / math.pi) * np.exp(-t * t / 2)


@pytest.mark.parametrize("C", _cases(14, 20, 3))
def test_i3_against_saad_solla(C):
    assert _derived(I3, 3)(C) == pytest.approx(_saad_solla_i3(C), abs=1e-12)  # float64 typed form


@pytest.mark.parametrize("C", _cases(15, 20, 4))
def test_i4_against_saad_solla(C):
    assert _derived(I4, 4)(C) == pytest.approx(_saad_solla_i4(C), abs=1e-12)  # float64 typed form


@pytest.mark.parametrize("C", _cases(16, 3, 3))
def test_i3_against_gauss_hermite(C):
    reference = _converged_gauss_hermite(C, lambda a, b, c: _dg(a) * b * _g(c), 60, 80, 1e-14)
    assert _derived(I3, 3)(C) == pytest.approx(reference, abs=1e-12)  # GH converged to 1e-14


@pytest.mark.parametrize("C", _cases(17, 2, 4))
def test_i4_against_gauss_hermite(C):
    f = lambda a, b, c, d: _dg(a) * _dg(b) * _g(c) * _g(d)  # noqa: E731
    reference = _converged_gauss_hermite(C, f, 40, 48, 1e-13)
    assert _derived(I4, 4)(C) == pytest.approx(reference, abs=1e-12)  # GH converged to 1e-13


def test_i4_against_monte_carlo():
    C = _cases(18, 1, 4)[0]
    rng = np.random.default_rng(5)
    x = np.linalg.cholesky(C) @ rng.standard_normal((4, 2_000_000))
    samples = _dg(x[0]) * _dg(x[1]) * _g(x[2]) * _g(x[3])
    mean, stderr = samples.mean(), samples.std() / math.sqrt(samples.size)
    assert abs(_derived(I4, 4)(C) - mean) < 5 * stderr  # 5 sigma: false failure rate ~6e-7


def test_i4_with_a_repeated_variable_is_the_limit_of_the_general_form():
    # E[g'(u)^2 g(w) g(y)]: two Gaussian factors on one variable (one tilt of twice the weight).
    C3 = _cases(19, 1, 3)[0]
    expr = ERF.derivative(u) ** 2 * ERF.function(v) * ERF.function(w)
    embedded = C3[np.ix_([0, 0, 1, 2], [0, 0, 1, 2])]  # u duplicated: C11 = C12 = C22
    assert _derived(expr, 3)(C3) == pytest.approx(_saad_solla_i4(embedded), abs=1e-12)


def test_erf_squared_and_one_variable_base_cases():
    a = sp.Symbol("a", positive=True)
    C1 = sp.Matrix([[a]])
    g = ERF.function(u)
    assert gaussian_expectation(g, [u], covariance=C1).value == 0
    assert gaussian_expectation(sp.Heaviside(u), [u], covariance=C1).value == sp.Rational(1, 2)
    assert sp.simplify(gaussian_expectation(RELU.function(u), [u], covariance=C1).value
                       - sp.sqrt(a / (2 * sp.pi))) == 0
    # The arcsine law at c = a = b (Saad & Solla's I2 on the diagonal).
    assert sp.simplify(gaussian_expectation(g**2, [u], covariance=C1).value
                       - 2 / sp.pi * sp.asin(a / (1 + a))) == 0
    assert gaussian_expectation(g**3, [u], covariance=C1).value == 0  # odd


# ---------------------------------------------------------------- ReLU three-point terms

RELU_I3 = RELU.derivative(u) * v * RELU.function(w)


def _regressed(C: np.ndarray, inner: list[int], outer: int) -> np.ndarray:
    """Coefficients of ``E[x_outer | x_inner]`` (Gaussian regression: ``C_oi C_ii^{-1}``)."""
    return np.linalg.solve(C[np.ix_(inner, inner)], C[inner, outer])


@pytest.mark.parametrize("C", _cases(20, 10, 3))
def test_relu_three_point_against_polar_quadrature(C):
    # E[H(u) v Max(0, w)] = E[H(u) Max(0, w) E[v | u, w]]: a degree-2 integrand in (u, w).
    beta = _regressed(C, [0, 2], 1)
    reference = _polar(C[np.ix_([0, 2], [0, 2])],
                       lambda a, c: _step(a) * _relu(c) * (beta[0] * a + beta[1] * c), 2)
    assert _derived(RELU_I3, 3)(C) == pytest.approx(reference, abs=1e-12)  # mpmath, 30 digits


def test_relu_three_point_against_monte_carlo():
    C = _cases(23, 1, 3)[0]
    rng = np.random.default_rng(6)
    x = np.linalg.cholesky(C) @ rng.standard_normal((3, 2_000_000))
    samples = (x[0] > 0) * x[1] * np.maximum(x[2], 0)
    mean, stderr = samples.mean(), samples.std() / math.sqrt(samples.size)
    assert abs(_derived(RELU_I3, 3)(C) - mean) < 5 * stderr  # 5 sigma: false failure rate ~6e-7


@pytest.mark.parametrize("four_point", [
    RELU.derivative(u) * RELU.derivative(v) * RELU.function(w) * RELU.function(y),
    sp.Heaviside(u) * sp.Heaviside(v) * sp.Heaviside(w) * sp.Heaviside(y),
])
def test_four_sign_factors_reduce_to_the_orthant_kernel(four_point):
    """ReLU's four-point term has no closed form: its four sign factors become the orthant
    kernel (its values are checked against quadrature and Monte Carlo in test_quadrature.py)."""
    from reduced_odes._orthant import OrthantKernel

    assert gaussian_expectation(four_point, VARS, covariance=C4).value.has(OrthantKernel)


# ---------------------------------------------------------------- linear: Isserlis


def _isserlis(indices: list[int], C: sp.Matrix) -> sp.Expr:
    """``E[prod x_i]``: the sum over perfect matchings of products of covariances."""
    if not indices:
        return sp.Integer(1)
    first, rest = indices[0], indices[1:]
    return sp.Add(*[C[first, rest[k]] * _isserlis(rest[:k] + rest[k + 1:], C)
                    for k in range(len(rest))])


@pytest.mark.parametrize("indices", [[0, 1], [0, 1, 2, 3], [0, 0, 1, 1], [0, 0, 0, 0],
                                     [0, 1, 1, 2, 3, 3], [0, 0, 0, 1, 2, 3], [0, 1, 2]])
def test_linear_moments_are_isserlis(indices):
    expr = sp.Mul(*[VARS[i] for i in indices])
    derived = gaussian_expectation(expr, VARS, covariance=C4).value
    assert sp.expand(derived - _isserlis(indices, C4)) == 0


def test_linear_activation_terms():
    g = activation("linear")
    assert gaussian_expectation(g.function(u) * g.function(v), VARS, covariance=C4).value \
        == C4[0, 1]
    i4 = g.derivative(u) * g.derivative(v) * g.function(w) * g.function(y)
    assert gaussian_expectation(i4, VARS, covariance=C4).value == C4[2, 3]


# ---------------------------------------------------------------- other factors


def test_delta_is_the_density_at_zero_times_the_conditional_expectation():
    C = _cases(24, 1, 2)[0]
    value = _derived(sp.DiracDelta(u) * v**2 * ERF.function(v) ** 2, 2)(C)
    det = C[0, 0] * C[1, 1] - C[0, 1] ** 2

    def joint_density_at_u0(b):  # the bivariate normal density at (0, b)
        return mp.exp(-C[0, 0] * b * b / (2 * det)) / (2 * mp.pi * mp.sqrt(det))
    with mp.workdps(30):
        reference = mp.quad(lambda b: joint_density_at_u0(b) * b**2 * mp.erf(b / mp.sqrt(2))**2,
                            [-mp.inf, 0, mp.inf])
    assert value == pytest.approx(float(reference), abs=1e-12)  # mpmath at 30 digits


def test_gaussian_factor_with_a_cross_term_against_dblquad():
    C = _cases(25, 1, 2)[0]
    k = sp.Rational(1, 5)
    expr = sp.exp(k * u * v - u**2 / 4) * ERF.function(u) * RELU.function(v) * v
    result = gaussian_expectation(expr, [u, v], covariance=sp.Matrix(C.tolist()))
    det, P = np.linalg.det(C), np.linalg.inv(C)

    def integrand(b, a):  # Max(0, v) v = v^2 on v > 0: integrated there only, no kink
        density = math.exp(-(P[0, 0] * a * a + 2 * P[0, 1] * a * b + P[1, 1] * b * b) / 2)
        return math.exp(0.2 * a * b - a * a / 4) * _g(a) * b * b * density
    # The integrand decays like the tilted Gaussian N(0, (C^{-1} - A)^{-1}), A the exponent's
    # Hessian: 15 of its standard deviations lose < 1e-45.
    tilted = np.linalg.inv(P - np.array([[-0.5, 0.2], [0.2, 0.0]]))
    half = 15 * math.sqrt(tilted.diagonal().max())
    reference, _ = integrate.dblquad(integrand, -half, half, 0, half, epsabs=1e-13, epsrel=1e-12)
    reference /= 2 * math.pi * math.sqrt(det)
    assert float(result.value) == pytest.approx(reference, abs=1e-10)  # dblquad's 1e-12 + box


def test_a_growing_exponential_carries_its_convergence_condition():
    a, k = sp.symbols("a k", positive=True)
    result = gaussian_expectation(sp.exp(k * u**2 / 2) * sp.Heaviside(u), [u],
                                  covariance=sp.Matrix([[a]]))
    # E[exp(k u^2 / 2) H(u)] = (1 - k a)^{-1/2} / 2, finite iff k a < 1.
    assert sp.simplify(result.value - 1 / (2 * sp.sqrt(1 - k * a))) == 0
    assert result.holds_at({a: 2, k: sp.Rational(1, 4)})
    assert not result.holds_at({a: 2, k: 1})
    with pytest.raises(ValueError, match="diverges"):
        gaussian_expectation(sp.exp(u**2) * sp.Heaviside(u), [u], covariance=sp.eye(1))


@given(st.lists(st.floats(-2, 2), min_size=4, max_size=4),
       st.floats(0.1, 3), st.floats(0.1, 3))
@settings(max_examples=40, deadline=None)
def test_scaled_erf_pair_is_the_arcsine_law(factor, s, t):
    # E[erf(s u) erf(t v)] = (2/pi) asin(2 s t c / sqrt((1 + 2 s^2 a)(1 + 2 t^2 b))), typed.
    F = np.array(factor).reshape(2, 2)
    C = F @ F.T + 0.01 * np.eye(2)
    a, b, c = C[0, 0], C[1, 1], C[0, 1]
    expected = 2 / math.pi * math.asin(2 * s * t * c / math.sqrt((1 + 2 * s * s * a)
                                                                 * (1 + 2 * t * t * b)))
    assert _scaled_pair()(a, b, c, s, t) == pytest.approx(expected, abs=1e-12)  # float64


@lru_cache(maxsize=1)
def _scaled_pair():
    a, b, c = sp.symbols("a b c", real=True)
    s, t = sp.symbols("s t", positive=True)
    value = gaussian_expectation(sp.erf(s * u) * sp.erf(t * v), [u, v],
                                 covariance=sp.Matrix([[a, c], [c, b]])).value
    return sp.lambdify((a, b, c, s, t), value, "math")


def test_negative_scales_and_reflected_steps():
    a, b, c = sp.symbols("a b c", positive=True)
    C = sp.Matrix([[a, c], [c, b]])

    def E(expr):
        return gaussian_expectation(expr, [u, v], covariance=C).value

    assert sp.simplify(E(sp.erf(-2 * u) * sp.erf(v)) + E(sp.erf(2 * u) * sp.erf(v))) == 0
    assert sp.simplify(E(sp.Heaviside(-u) * sp.Heaviside(v))
                       - (sp.Rational(1, 2) - E(sp.Heaviside(u) * sp.Heaviside(v)))) == 0
    assert sp.simplify(E(sp.Max(0, -u)) - E(sp.Max(0, u))) == 0  # relu(-u) = relu(u) - u


# ---------------------------------------------------------------- errors and the old path


@pytest.mark.parametrize("expr, match", [
    (sp.tanh(u), "factor tanh"),
    (sp.erf(u + v), "not a multiple of a single variable"),
    (sp.erf(sp.Symbol("k") * u), "known sign"),
    (sp.exp(u) * sp.erf(v), "not a quadratic form"),
    (sp.DiracDelta(u) * sp.Heaviside(u), "convention"),
    (sp.erf(u) * sp.erf(v) * sp.erf(w) * sp.erf(y), "no closed form"),
    (sp.Max(u, v), "only Max\\(0, c\\*x\\)"),
    (sp.DiracDelta(u, 1), "derivatives of delta"),
])
def test_unsupported_factors_say_what_is_supported(expr, match):
    with pytest.raises(DerivationError, match=match) as error:
        gaussian_expectation(expr, VARS, covariance=C4)
    assert "supported factors of a single variable" in str(error.value)


def test_odd_products_vanish_by_parity():
    assert gaussian_expectation(sp.erf(u) * sp.erf(v) * sp.erf(w), VARS, covariance=C4).value == 0


def test_unknown_activation_lists_the_allowed_names():
    with pytest.raises(DerivationError, match="allowed: erf, gelu, he1, .* tanh"):
        activation("swish")


def test_bad_covariance():
    with pytest.raises(ValueError, match="covariance: shape"):
        gaussian_expectation(u * v, [u, v], covariance=sp.eye(3))
    with pytest.raises(ValueError, match="not symmetric"):
        gaussian_expectation(u * v, [u, v], covariance=sp.Matrix([[1, 2], [3, 1]]))


def test_independent_normal_path_is_unchanged(monkeypatch):
    # Without a covariance or activations the old engine answers alone.
    def refuse(*_):
        raise AssertionError("dispatched")
    monkeypatch.setattr(_gaussian, "expectation", refuse)  # where the dispatch finds it
    k = sp.Symbol("k")
    assert gaussian_expectation(sp.exp(k * u * v), [u, v]).value == 1 / sp.sqrt(1 - k**2)


def test_identity_covariance_agrees_with_the_independent_engine():
    k = sp.Symbol("k")
    expr = (u**3 * v - 2 * v**2 + 1) * sp.exp(k * u**2 / 2 + k * u * v / 3)
    old = gaussian_expectation(expr, [u, v])
    new = gaussian_expectation(expr, [u, v], covariance=sp.eye(2))
    assert sp.simplify(old.value - new.value) == 0
    for k_val in (sp.Rational(1, 2), sp.Rational(-3, 2), 2):
        assert old.holds_at({k: k_val}) == new.holds_at({k: k_val})


def test_activation_numeric_forms_match_the_symbolic_ones():
    grid = np.linspace(-3, 3, 13)
    s = sp.Symbol("s", real=True)
    for name in ("erf", "relu", "linear"):
        g = activation(name)
        f = sp.lambdify(s, g.function(s), ["scipy", "numpy"])
        df = sp.lambdify(s, g.derivative(s).rewrite(sp.Piecewise)
                         if name == "relu" else g.derivative(s), ["scipy", "numpy"])
        assert np.allclose(g.numeric(grid), f(grid) + 0 * grid, atol=1e-15)  # float64 round-off
        nonzero = grid[grid != 0]  # relu' at 0 is a convention
        assert np.allclose(g.numeric_derivative(nonzero), df(nonzero) + 0 * nonzero, atol=1e-15)
