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

from reduced_odes._activations import ACTIVATIONS, activation
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


#: Covariances (upper triangles) per kernel size: unit and unequal variances, a strong
#: negative correlation; the three-variable one small, so that the plain-Python loops stay
#: cheap (h = H_MAX there).
_FORM_COVARIANCES = {1: [[1.0], [2.5]],
                     2: [[1.0, 0.5, 1.0], [2.0, 0.3, 0.7], [0.5, -0.45, 0.5]],
                     3: [[0.3, 0.1, -0.05, 0.25, 0.08, 0.35]]}
#: Orders per size: a third derivative, a variable with two factors, three variables.
_FORM_ORDERS = {1: "3", 2: "0,1;2", 3: "1;0;2"}
_SMOOTH = [name for name, g in ACTIVATIONS.items() if g.smooth]


@pytest.mark.parametrize("name", _SMOOTH)
def test_numpy_form_equals_the_loop_form(name):
    """The pure path's NumPy kernel (common subexpressions bound once, powers as products,
    the sum contracted one variable at a time) against the plain loops of ``loop_source``,
    run as Python: two codes of the same rule."""
    polynomial = name.startswith("he")
    for size, orders in _FORM_ORDERS.items():
        key = f"{name}|{orders}"
        namespace = {"math": math}
        exec(loop_source(key, "loop"), namespace)  # noqa: S102  (generated by the engine)
        for entries in _FORM_COVARIANCES[size]:
            # Hermite products (degree up to 15) grow fast enough that the loops' skipped
            # corners beyond |z| = 9 count at unit variances: held at a fifth of them.
            entries = [0.2 * e for e in entries] if polynomial else entries
            value, loop = numerical_value(key, entries), namespace["loop"](*entries)
            # Both sum the same grid (the loops skip the corners, weight < e^-40) in other
            # orders and other arithmetic: round-off of up to ~10^5 terms, 1e-13.  The Hermite
            # polynomials' values cancel (he6 has coefficients up to 45; measured 2e-12).
            tolerance = 1e-11 if polynomial else 1e-13
            assert abs(value - loop) <= tolerance * (1 + abs(loop)), (key, entries, value, loop)


def test_kinked_activations_are_refused_numerically():
    from reduced_odes import DerivationError

    with pytest.raises(DerivationError, match="kink"):
        lowered("relu", I2, 2)


def test_loop_source_is_plain_math():
    source = loop_source("gelu|1;0")
    assert "numpy" not in source and "math.erf" in source


@pytest.mark.slow
def test_a_numerical_activation_runs_alike_on_both_backends():
    """The committee machine with tanh (numerical kernels in the rates and the Jacobian):
    the pure path's NumPy kernels and the twin's loop kernels give the same phases."""
    pytest.importorskip("numba")
    from reduced_odes import SolverConfig, solve
    from reduced_odes.models.committee_machine import MODEL, CommitteeParams

    def phases(backend: str) -> dict:
        return solve(CommitteeParams(), "tanh", SolverConfig(backend=backend), model=MODEL).phases

    pure, native = phases("python"), phases("numba")
    for name, value in pure.items():
        # Two integrators (LSODA, the native BDF) at rtol 1e-10: the phases' relative
        # condition is O(10), as for erf (tests/models/committee_machine/test_cm_backends.py).
        assert abs(native[name] / value - 1) < 1e-8, (name, value, native[name])


def test_numerical_kernels_are_read_back_from_the_symbolic_cache(tmp_path, monkeypatch):
    from reduced_odes._compile import cached_symbolic

    monkeypatch.setenv("REDUCED_ODES_CACHE", str(tmp_path))
    kernel = lowered("tanh", I2, 2)
    cached_symbolic("deep_linear", "default", "kernel-test", lambda: {"k": kernel})
    read = cached_symbolic("deep_linear", "default", "kernel-test", lambda: {"k": 0})["k"]
    assert read == kernel and isinstance(read, GaussianKernel)


def test_orthant_kernels_are_read_back_from_the_symbolic_cache(tmp_path, monkeypatch):
    # Read back as an undefined function, ReLU's symmetric flow at eta > 0 had a Jacobian of
    # unprintable derivatives on every run after the first.
    import sympy as sp

    from reduced_odes._compile import cached_symbolic
    from reduced_odes._orthant import OrthantKernel

    monkeypatch.setenv("REDUCED_ODES_CACHE", str(tmp_path))
    q, c = sp.symbols("q c", real=True)
    kernel = OrthantKernel(c / q, c / q, c, c, 0, c / q)
    cached_symbolic("deep_linear", "default", "orthant-test", lambda: {"k": kernel})
    read = cached_symbolic("deep_linear", "default", "orthant-test", lambda: {"k": 0})["k"]
    assert read == kernel and isinstance(read, OrthantKernel)
    assert not read.diff(c).atoms(sp.Derivative)


@pytest.mark.parametrize("name", ["gelu", "he3"])
def test_closed_forms_of_other_activations_equal_the_numerical_rule(name):
    # GELU = u Phi(u) and the Hermite polynomials have closed-form pairs (Stein, tilting,
    # Price): the rule, which never sees them, must agree to the stated accuracy.
    closed = _closed(name, I2, 2)
    for C in _covariances(20, 2, seed=13):
        exact = closed(*_entries(C))
        value = numerical_value(f"{name}|0;0", _entries(C))
        assert abs(value - exact) <= STATED * (1 + abs(exact)), (name, C)


def _correlations(C: np.ndarray) -> list[float]:
    d = np.sqrt(np.diag(C))
    R = C / np.outer(d, d)
    return [float(R[a, b]) for a, b in ((0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3))]


def test_four_signs_factorise_for_block_diagonal_correlations():
    from reduced_odes._orthant import orthant_value

    for r12, r34 in ((0.5, 0.5), (-0.9, 0.3), (0.99, -0.7)):
        exact = (2 / math.pi * math.asin(r12)) * (2 / math.pi * math.asin(r34))
        assert abs(orthant_value([r12, 0, 0, 0, 0, r34]) - exact) <= STATED


def test_four_signs_equal_a_monte_carlo_estimate_within_its_interval():
    from reduced_odes._orthant import orthant_source, orthant_value

    rng = np.random.default_rng(17)
    for C in _covariances(3, 4, seed=19):
        x = rng.multivariate_normal(np.zeros(4), C, size=400_000, method="cholesky")
        signs = np.prod(np.sign(x), axis=1)
        value = orthant_value(_correlations(C))
        # 5 standard errors: a 1-in-1.7-million false alarm.
        assert abs(signs.mean() - value) <= 5 * signs.std() / math.sqrt(signs.size)
        namespace = {"math": math}
        exec(orthant_source("f"), namespace)  # noqa: S102  (the loop form numba compiles)
        assert namespace["f"](*_correlations(C)) == pytest.approx(value, rel=1e-13)


def test_four_signs_derivatives_are_prices():
    from reduced_odes._orthant import OrthantKernel, orthant_value

    r = sp.symbols("r0:6")
    point = _correlations(_covariances(1, 4, seed=23)[0])
    for j in range(6):
        derivative = float(OrthantKernel(*r).diff(r[j]).xreplace(dict(zip(r, point,
                                                                         strict=True))))
        step = 1e-5  # central difference: error ~ step^2 * third derivative ~ 1e-10
        up, down = list(point), list(point)
        up[j] += step
        down[j] -= step
        assert derivative == pytest.approx((orthant_value(up) - orthant_value(down)) /
                                           (2 * step), abs=1e-8)


# --------------------------------------------------------------------------- ReLU, split at kinks


def _relu_mean(m: np.ndarray, s: float) -> np.ndarray:
    """``E[relu(m + s z)]``, ``z ~ N(0, 1)``."""
    from scipy.special import ndtr

    a = m / s
    return m * ndtr(a) + s * np.exp(-0.5 * a * a) / math.sqrt(2 * math.pi)


def _split_at_kinks(kinds: tuple[str, ...], C: np.ndarray, nodes: int = 40,
                    Z: float = 10.0) -> float:
    """``E[prod_a f_a(u_a)]`` (``f`` a ReLU ``"g"``, a step ``"dg"`` or ``u`` itself ``"x"``;
    the last a ReLU), independently of the engine: nested Gauss-Legendre over the whitened
    ``z_0 ... z_{n-2}`` (``u = L z``), each split where its factor has its kink, so that
    every piece is smooth; the last variable, a ReLU given the others, in closed form."""
    n, L = len(kinds), np.linalg.cholesky(C)
    x, w = np.polynomial.legendre.leggauss(nodes)
    zs, weight = np.zeros((1, 0)), np.ones(1)
    for a in range(n - 1):
        shift = zs @ L[a, :a]
        kink = np.clip(-shift / L[a, a], -Z, Z)
        grown_z, grown_w = [], []
        for lo, hi in ((np.full_like(kink, -Z), kink), (kink, np.full_like(kink, Z))):
            half = (hi - lo)[:, None] / 2
            z = (lo + hi)[:, None] / 2 + half * x
            u = shift[:, None] + L[a, a] * z
            factor = {"g": np.maximum(u, 0.0), "dg": (u > 0) * 1.0, "x": u}[kinds[a]]
            density = np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)
            grown_z.append(np.concatenate([np.repeat(zs, nodes, axis=0), z.reshape(-1, 1)], 1))
            grown_w.append((weight[:, None] * half * w * density * factor).reshape(-1))
        zs, weight = np.concatenate(grown_z), np.concatenate(grown_w)
        zs, weight = zs[weight != 0], weight[weight != 0]
    return float(np.sum(weight * _relu_mean(zs @ L[n - 1, :n - 1], L[n - 1, n - 1])))


def _relu_kernel(pattern, size: int):
    kernel = gaussian_kernel("relu", pattern, size)
    return lambda C: float(kernel.numpy(*_entries(C)))


@pytest.mark.parametrize(("pattern", "kinds", "count"), [
    (I2, ("g", "g"), 100), (I3, ("dg", "x", "g"), 100), (I4, ("dg", "dg", "g", "g"), 3)])
def test_relu_kernels_equal_quadrature_split_at_the_kinks(pattern, kinds, count):
    """I2, I3 (closed forms) at 100 covariances, I4 (the orthant kernel) at 3 here and at 100
    in the slow suite, each to 1e-10 against the kink-split quadrature."""
    # The reference converges spectrally on each smooth piece: 40 nodes agree with 80 to
    # 1e-15, so the stated 1e-10 is the kernels' own accuracy.
    kernel = _relu_kernel(pattern, len(kinds))
    for C in _covariances(count, len(kinds), seed=29 + len(kinds)):
        reference = _split_at_kinks(kinds, C)
        assert abs(kernel(C) - reference) <= STATED * (1 + abs(reference)), C


@pytest.mark.slow
def test_relu_four_point_kernel_at_100_covariances():
    kernel = _relu_kernel(I4, 4)
    for C in _covariances(100, 4, seed=31):
        reference = _split_at_kinks(("dg", "dg", "g", "g"), C)
        assert abs(kernel(C) - reference) <= STATED * (1 + abs(reference)), C


@pytest.mark.slow
def test_relu_four_point_kernel_has_the_orthant_term_and_both_backends_agree():
    pytest.importorskip("numba")
    from reduced_odes._orthant import OrthantKernel

    kernel = gaussian_kernel("relu", I4, 4)
    assert kernel.closed_form and kernel.expression.has(OrthantKernel)
    native = kernel.numba()
    for C in _covariances(3, 4, seed=37):
        # The same Gauss-Legendre sum, in the same order: round-off apart.
        assert native(*_entries(C)) == pytest.approx(float(kernel.numpy(*_entries(C))),
                                                     rel=1e-13)


def test_relu_four_point_kernel_equals_monte_carlo_within_its_interval():
    kernel = _relu_kernel(I4, 4)
    rng = np.random.default_rng(41)
    C = _covariances(1, 4, seed=43)[0]
    u = rng.multivariate_normal(np.zeros(4), C, size=400_000, method="cholesky")
    samples = (u[:, 0] > 0) * (u[:, 1] > 0) * np.maximum(u[:, 2], 0) * np.maximum(u[:, 3], 0)
    # 5 standard errors: a 1-in-1.7-million false alarm.
    assert abs(samples.mean() - kernel(C)) <= 5 * samples.std() / math.sqrt(samples.size)
