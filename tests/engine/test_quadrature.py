"""Numerical Gaussian kernels against closed forms, adaptive quadrature and mpmath.

The numerical rule (a trapezoidal grid on the Cholesky-whitened variables, its step
from the activation's nearest complex singularity) is held to the stated 1e-10
relative accuracy against references that share nothing with it: the closed forms the
engine derives for erf (tilting, Stein, Price), QUADPACK's adaptive ``dblquad`` and
mpmath's tanh-sinh quadrature.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp
from scipy import integrate

from reduced_odes._activations import activation
from reduced_odes._kernel_functions import gaussian_kernel, kernel_expression
from reduced_odes._quadrature import GaussianKernel, loop_source, lowered, numerical_value

#: The stated accuracy of a smooth activation's kernel (relative, with the scale 1 + |value|
#: so that a kernel that vanishes at c = 0 is held to 1e-10 absolute there).
STATED = 1e-10

I2 = (("g", 0), ("g", 1))
I3 = (("dg", 0), ("x", 1), ("g", 2))
I4 = (("dg", 0), ("dg", 1), ("g", 2), ("g", 3))


def _covariances(count: int, size: int, seed: int) -> list[np.ndarray]:
    """Random SPD matrices ``F F^T / size`` (variances ~ 1, up to ~ 3)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        factor = rng.normal(size=(size, size))
        out.append(factor @ factor.T / size + 0.05 * np.eye(size))
    return out


def _entries(C: np.ndarray) -> list[float]:
    return [float(C[a, b]) for a in range(len(C)) for b in range(a, len(C))]


def _numerical(activation_name: str, pattern, size: int):
    """The lowered numerical form, even where a closed form exists (erf)."""
    expression = lowered(activation_name, pattern, size)
    symbols = [sp.Symbol(f"c_{a}_{b}", real=True) for a in range(size) for b in range(a, size)]

    def evaluate(values):
        return float(expression.xreplace(dict(zip(symbols, values, strict=True))).evalf())

    return evaluate


def _closed(activation_name: str, pattern, size: int):
    expression, closed = kernel_expression(activation_name, pattern, size)
    assert closed
    symbols = [sp.Symbol(f"c_{a}_{b}", real=True) for a in range(size) for b in range(a, size)]
    return sp.lambdify(symbols, expression, modules=["scipy", "numpy"])


@pytest.mark.parametrize(("pattern", "size", "count"), [(I2, 2, 100), (I3, 3, 100), (I4, 4, 3)])
def test_numerical_erf_kernels_equal_the_closed_forms(pattern, size, count):
    numerical, closed = _numerical("erf", pattern, size), _closed("erf", pattern, size)
    for C in _covariances(count, size, seed=size):
        values = _entries(C)
        exact = closed(*values)
        assert abs(numerical(values) - exact) <= STATED * (1 + abs(exact))


@pytest.mark.slow
def test_numerical_erf_four_point_kernel_at_100_covariances():
    numerical, closed = _numerical("erf", I4, 4), _closed("erf", I4, 4)
    for C in _covariances(100, 4, seed=7):
        exact = closed(*_entries(C))
        assert abs(numerical(_entries(C)) - exact) <= STATED * (1 + abs(exact))


def _dblquad_pair(g, C: np.ndarray) -> float:
    """``E[g(u) g(v)]`` by QUADPACK on the whitened variables, to 1e-13."""
    l00 = math.sqrt(C[0, 0])
    l10 = C[0, 1] / l00
    l11 = math.sqrt(C[1, 1] - l10 * l10)

    def integrand(z1, z0):
        weight = math.exp(-(z0 * z0 + z1 * z1) / 2) / (2 * math.pi)
        return weight * g(l00 * z0) * g(l10 * z0 + l11 * z1)

    value, _ = integrate.dblquad(integrand, -12, 12, -12, 12, epsabs=1e-13, epsrel=1e-13)
    return value


@pytest.mark.parametrize("name", ["tanh", "sigmoid", "gelu", "softplus", "silu"])
def test_smooth_pairs_equal_adaptive_quadrature(name):
    namespace = {"math": math}
    exec(activation(name).scalar_source("g"), namespace)  # noqa: S102  (math only: fast)
    scalar = namespace["g"]
    for C in _covariances(2, 2, seed=11) + [np.array([[3.0, 2.5], [2.5, 3.0]])]:
        reference = _dblquad_pair(scalar, C)
        value = numerical_value(f"{name}|0;0", _entries(C))
        assert abs(value - reference) <= STATED * (1 + abs(reference)), (name, C)


def _mpmath_pair(g, C: np.ndarray):
    """``E[g(u) g(v)]`` by mpmath's tanh-sinh quadrature, nested, on the whitened variables."""
    import mpmath as mp

    l00 = mp.sqrt(C[0, 0])
    l10 = C[0, 1] / l00
    l11 = mp.sqrt(C[1, 1] - l10**2)

    def phi(z):
        return mp.exp(-z * z / 2) / mp.sqrt(2 * mp.pi)

    def inner(z0):
        return phi(z0) * g(l00 * z0) * mp.quad(lambda z1: phi(z1) * g(l10 * z0 + l11 * z1),
                                               [-12, 0, 12])

    return mp.quad(inner, [-12, 0, 12])


@pytest.mark.slow
@pytest.mark.parametrize("name", ["tanh", "sigmoid", "gelu"])
def test_smooth_pairs_equal_mpmath(name):
    import mpmath as mp

    mp.mp.dps = 20
    expression = activation(name).expression
    g = sp.lambdify(sp.Symbol("u", real=True), expression, modules="mpmath")
    for C in _covariances(2, 2, seed=5):
        reference = _mpmath_pair(g, C)
        value = numerical_value(f"{name}|0;0", _entries(C))
        assert abs(value - float(reference)) <= STATED * (1 + abs(float(reference)))


def test_price_derivative_is_the_kernel_of_the_derivatives():
    a, c, b = sp.symbols("a c b", real=True)
    from sympy.core.symbol import Str

    kernel = GaussianKernel(Str("tanh|0;1"), a, c, b)
    point = {a: 1.2, c: 0.4, b: 0.9}
    for entry in (a, c, b):
        derivative = float(kernel.diff(entry).xreplace(point).evalf())
        step = 1e-4  # central difference: error ~ step^2 * third derivative ~ 1e-8
        up = float(kernel.xreplace({**point, entry: point[entry] + step}).evalf())
        down = float(kernel.xreplace({**point, entry: point[entry] - step}).evalf())
        assert derivative == pytest.approx((up - down) / (2 * step), abs=1e-7)


def test_backends_agree():
    pytest.importorskip("numba")
    for pattern, size in ((I2, 2), (I3, 3)):
        kernel = gaussian_kernel("tanh", pattern, size)
        native = kernel.numba()
        for C in _covariances(5, size, seed=3):
            values = _entries(C)
            # The same grid, summed in another order (and the cube's corners, below e^-40,
            # skipped natively): round-off apart.
            assert native(*values) == pytest.approx(float(kernel.numpy(*values)), rel=1e-12)


def test_kinked_activations_are_refused_numerically():
    from reduced_odes import DerivationError

    with pytest.raises(DerivationError, match="kink"):
        lowered("relu", I2, 2)


def test_loop_source_is_plain_math():
    source = loop_source("gelu|1;0")
    assert "numpy" not in source and "math.erf" in source
