"""``E[sign(x_1) sign(x_2) sign(x_3) sign(x_4)]``: four sign factors (ReLU's four-point
term) reduced analytically to one dimension.

The expectation depends on the correlations ``r_ab`` only.  Price's theorem gives its
derivatives in closed form, ``d E / d r_ab = 4 phi_2(0, 0; r_ab) E[s_k s_l | x_a = x_b =
0] = 4 / (2 pi sqrt(1 - r_ab^2)) * (2/pi) asin(r_kl|ab)`` (``r_kl|ab`` the partial
correlation), and along the path that scales ``r_12, r_13, r_14`` by ``t`` from 0
(where ``x_1`` is independent and the expectation vanishes, ``E[sign x_1] = 0``) to 1,

    E = int_0^1 sum_j r_1j (d E / d r_1j)(t) dt,

a one-dimensional integral of a smooth integrand (the covariance stays positive definite
on the path: it is a convex combination of two that are).  It is evaluated by
Gauss-Legendre quadrature with ``NODES`` nodes; the tests hold it to 1e-10 against the
closed form of block-diagonal correlations and against Monte Carlo.

The closed-form rules (``_expectation._odd_factors``) leave four sign factors of four
distinct variables as an :class:`OrthantKernel` of their correlations; generated code
calls :data:`KERNEL_NAME`, defined in the module by :func:`orthant_source` (the pure path)
and again as ``_native`` + :data:`KERNEL_NAME` (the loop form the numba twin compiles).
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp

__all__ = ["KERNEL_NAME", "NODES", "OrthantKernel", "has_orthant", "orthant_source",
           "orthant_value"]

#: Gauss-Legendre nodes on [0, 1]: the integrand is analytic on a neighbourhood of it.
NODES = 48
#: The Gauss-Legendre nodes and weights on [-1, 1].
_RULE = np.polynomial.legendre.leggauss(NODES)
#: The generated function's name (a ``_gk_`` prefix: compiled with the Gaussian kernels).
KERNEL_NAME = "_gk_orthant4"
#: The pairs of the six correlations, in argument order.
PAIRS = ((0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3))


def _partial(r: dict, a: int, b: int, k: int, m: int):
    """The correlation of ``x_k, x_m`` given ``x_a, x_b`` (unit variances)."""
    sqrt = sp.sqrt if any(isinstance(v, sp.Basic) for v in r.values()) else np.sqrt
    det = 1 - r[a, b] ** 2

    def cond(i, j):
        return r[i, j] - (r[i, a] * r[j, a] - r[a, b] * (r[i, a] * r[j, b] + r[i, b] * r[j, a])
                          + r[i, b] * r[j, b]) / det

    return cond(k, m) / sqrt(cond(k, k) * cond(m, m))


def _table(values) -> dict:
    r = {}
    for (a, b), v in zip(PAIRS, values, strict=True):
        r[a, b] = r[b, a] = v
    for a in range(4):
        r[a, a] = 1
    return r


def _derivative(values, index: int):
    """``d E / d r_ab`` for the pair ``PAIRS[index]``: Price's theorem."""
    a, b = PAIRS[index]
    k, m = (i for i in range(4) if i not in (a, b))
    r = _table(values)
    symbolic = any(isinstance(v, sp.Basic) for v in values)
    # NumPy on numbers: one call covers every quadrature node (``orthant_value``).
    asin, sqrt, pi = (sp.asin, sp.sqrt, sp.pi) if symbolic else (np.arcsin, np.sqrt, math.pi)
    return 4 / (pi * sqrt(1 - r[a, b] ** 2)) * asin(_partial(r, a, b, k, m)) / pi


def orthant_value(values) -> float:
    """``E[s_1 s_2 s_3 s_4]`` at the correlations ``values`` (``PAIRS`` order).

    Examples
    --------
    >>> round(orthant_value([0.5, 0.0, 0.0, 0.0, 0.0, 0.5]), 12)  # (2/pi asin 1/2)^2
    0.111111111111
    """
    nodes, weights = _RULE
    t = (nodes + 1) / 2  # every node at once
    scaled = [v * t if pair[0] == 0 else v for v, pair in zip(values, PAIRS, strict=True)]
    with np.errstate(invalid="ignore", divide="ignore"):
        integrand = sum(values[j] * _derivative(scaled, j) for j in range(3))
        total = float(np.dot(weights / 2, integrand))
    if not math.isfinite(total):  # as ``math`` on the scalar path: out of the domain raises
        raise ValueError(f"math domain error: correlations {list(values)!r} are no "
                         f"correlation matrix's")
    return total


class OrthantKernel(sp.Function):
    """``E[sign(x_1) sign(x_2) sign(x_3) sign(x_4)]`` of the six correlations ``r_ab``
    (``a < b``, row by row): numerical, its derivatives closed forms (Price).

    Examples
    --------
    >>> r = sp.symbols("r12 r13 r14 r23 r24 r34")
    >>> OrthantKernel(*r).diff(r[0]).has(OrthantKernel)
    False
    """

    nargs = 6

    def fdiff(self, argindex: int = 1) -> sp.Expr:
        return _derivative(list(self.args), argindex - 1)

    def _eval_evalf(self, prec):
        if not all(arg.is_number for arg in self.args):
            return None
        return sp.Float(orthant_value([float(arg) for arg in self.args]), prec)


def orthant_source(name: str) -> str:
    """``def name(r01, ..., r23)``: :func:`orthant_value` in ``math`` only (numba compiles it)."""
    nodes, weights = np.polynomial.legendre.leggauss(NODES)
    args = [f"r{a}{b}" for a, b in PAIRS]
    symbols = sp.symbols(" ".join(args))
    t = sp.Symbol("t")
    scaled = [s * t if pair[0] == 0 else s for s, pair in zip(symbols, PAIRS, strict=True)]
    integrand = sum(symbols[j] * _derivative(scaled, j) for j in range(3))
    from sympy.printing.pycode import PythonCodePrinter

    body = PythonCodePrinter({"standard": "python3"}).doprint(integrand)
    lines = [f"def {name}({', '.join(args)}):", "    total = 0.0"]
    lines.append(f"    for i in range({NODES}):")
    lines.append(f"        t = 0.5 * ({tuple(map(float, nodes))!r}[i] + 1.0)")
    lines.append(f"        total += 0.5 * {tuple(map(float, weights))!r}[i] * ({body})")
    lines.append("    return total")
    return "\n".join(lines)


def has_orthant(exprs) -> bool:
    """Whether an :class:`OrthantKernel` occurs in any of ``exprs``.

    Examples
    --------
    >>> has_orthant([OrthantKernel(*sp.symbols("a:f")) + 1]), has_orthant([sp.Integer(1)])
    (True, False)
    """
    return any(sp.sympify(e).has(OrthantKernel) for e in exprs)
