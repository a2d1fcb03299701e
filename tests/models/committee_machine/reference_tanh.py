"""The committee machine with ``g = tanh`` at ``eta -> 0``, by quadrature: the independent
reference of the tanh runs (only tests import it).

The flow is ``reference.py``'s (Saad & Solla's sums over units), with ``I2 = E[g(u_a) g(u_b)]``
and ``I3 = E[g'(u_a) u_b g(u_c)]`` computed here, not taken from the package: ``u_b`` is
regressed on ``(u_a, u_c)`` (``E[u_b | u_a, u_c] = alpha u_a + beta u_c``), so that ``I3`` is
the two-dimensional ``E[g'(u_a) (alpha u_a + beta u_c) g(u_c)]``; every two-dimensional
expectation is the trapezoidal rule on the whitened plane ``u = L z`` (``L`` the Cholesky
factor), ``z`` on ``[-10, 10]`` in steps of ``0.2``, and a one-dimensional one where the two
fields coincide.  For an integrand analytic in a strip of half-width ``d`` around the real
axis the rule's error is ``~exp(-2 pi d / h)``: tanh's poles at ``i pi/2`` put ``d >= 1.3`` for
variances up to ``1.4``, an error ~1e-17, checked against erf's closed forms by
``test_quadrature_equals_erf_closed_forms``.
"""

from __future__ import annotations

import numpy as np
from scipy.special import erf

from .reference import pack, unpack

_Z = np.arange(-10.0, 10.0 + 1e-9, 0.2)
_W = 0.2 * np.exp(-_Z**2 / 2) / np.sqrt(2 * np.pi)

FUNCTIONS = {
    "tanh": (np.tanh, lambda u: 1.0 - np.tanh(u) ** 2),
    "erf": (lambda u: erf(u / np.sqrt(2)), lambda u: np.sqrt(2 / np.pi) * np.exp(-u**2 / 2)),
}


def expectation(f, C: np.ndarray) -> float:
    """``E[f(u_1, u_2)]`` for ``u ~ N(0, C)``, ``C`` 2 x 2 (``f`` on arrays)."""
    a = np.sqrt(C[0, 0])
    if C[0, 0] * C[1, 1] - C[0, 1] ** 2 <= 1e-14 * C[0, 0] * C[1, 1]:  # u_2 = (C01/C00) u_1
        u = a * _Z
        return float(np.sum(_W * f(u, C[0, 1] / C[0, 0] * u)))
    b = C[0, 1] / a
    c = np.sqrt(C[1, 1] - b * b)
    z1, z2 = _Z[:, None], _Z[None, :]
    return float(np.sum(_W[:, None] * _W[None, :] * f(a * z1, b * z1 + c * z2)))


def i2(C: np.ndarray, a: int, b: int, activation: str) -> float:
    g, _ = FUNCTIONS[activation]
    return expectation(lambda x, y: g(x) * g(y), C[np.ix_([a, b], [a, b])])


def i3(C: np.ndarray, a: int, b: int, c: int, activation: str) -> float:
    g, dg = FUNCTIONS[activation]
    S = C[np.ix_([a, c], [a, c])]
    target = C[[a, c], b]
    # Regression of u_b on (u_a, u_c); where u_a = u_c (a == c) onto u_a alone.
    coef = (np.linalg.solve(S, target) if a != c else np.array([target[0] / S[0, 0], 0.0]))
    return expectation(lambda x, y: dg(x) * (coef[0] * x + coef[1] * y) * g(y), S)


def rhs(y: np.ndarray, K: int, M: int, activation: str = "tanh") -> np.ndarray:
    """``d(Q, R)/dt`` at ``eta -> 0`` (``T = I``), packed as ``reference.pack``."""
    Q, R = unpack(y, K, M)
    C = np.block([[Q, R], [R.T, np.eye(M)]])
    s = [-1.0] * K + [1.0] * M
    F = K + M

    def delta(i: int, b: int) -> float:  # E[g'(l_i) u_b (phi* - phi)]
        return sum(s[f] * i3(C, i, b, f, activation) for f in range(F))

    dQ = np.array([[delta(i, k) + delta(k, i) for k in range(K)] for i in range(K)])
    dR = np.array([[delta(i, K + n) for n in range(M)] for i in range(K)])
    return pack(dQ, dR)


def eps_g(y: np.ndarray, K: int, M: int, activation: str = "tanh") -> float:
    Q, R = unpack(y, K, M)
    C = np.block([[Q, R], [R.T, np.eye(M)]])
    s = [-1.0] * K + [1.0] * M
    return 0.5 * sum(s[f] * s[h] * i2(C, f, h, activation)
                     for f in range(K + M) for h in range(K + M))
