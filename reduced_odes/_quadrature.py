"""Gaussian kernels of any smooth activation: lowered symbolically, integrated numerically.

A kernel is ``E[prod_a prod_k g^(k_a)(u_a)]`` over a centred Gaussian ``u`` with a
covariance of generic entries ``c_a_b``.  Where the rules of
:mod:`reduced_odes._expectation` give a closed form, that is the kernel.  Where they do
not (``tanh``, ``sigmoid``, ``gelu``, ...), the dimension is first lowered symbolically:
Stein's lemma ``E[u_j F] = sum_m c_jm E[d_m F]`` removes every linear factor, so that a
three-point term ``E[g'(u_0) u_1 g(u_2)]`` becomes two two-dimensional kernels; what is
left is an unevaluated :class:`GaussianKernel`, whose derivatives are again kernels by
Price's theorem, ``d E[F] / d c_ab = E[d_a d_b F]`` (half that for ``a = b``), so the
analytic Jacobian needs nothing else.

The compile layer emits each :class:`GaussianKernel` as a call of generated code
(:func:`numpy_source` on the pure path, :func:`loop_source` in the numba twin): the
trapezoidal rule in the whitened variables ``u = L z`` (``L`` the Cholesky factor),
on the grid ``z = h j``, ``|z| <= Z``, with

    h = min(H_MAX, 2 pi d / (l_max ln(1/eps))),   Z = 9,   ln(1/eps) = 36,

``d`` the distance of ``g``'s nearest complex singularity from the real axis (``pi``
for an entire ``g``) and ``l_max`` the largest ``|L_ij|``.  For an integrand analytic
in the strip ``|Im z| < d / l_max`` the rule's error is at most
``2 M / (exp(2 pi d / (l_max h)) - 1)`` per dimension (Trefethen & Weideman 2014,
Thm 5.1; ``M`` bounds the integrand's integral along the strip's edges), here
``~ M e^-36``; the Gaussian tail beyond ``Z`` is ``< e^-40``.  The constants ``M`` are
measured, not proven: the tests hold every built-in smooth activation's kernels to
``1e-10`` relative against mpmath quadrature and the closed forms (see
``docs/kernels.md``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from functools import cache

import sympy as sp
from sympy.core.symbol import Str

from ._activations import activation as _activation
from ._errors import DerivationError

__all__ = ["GaussianKernel", "H_MAX", "LOG_INVERSE_EPS", "TRUNCATION", "kernel_name",
           "kernels_in", "loop_source", "lowered", "numerical_value", "numpy_source", "step"]

#: ``ln(1/eps)``: the rule's exponent (``e^-36 ~ 2e-16``).
LOG_INVERSE_EPS = 36.0
#: Largest step, for an integrand that hardly varies (a tiny variance).
H_MAX = 0.5
#: The grid's half-width in whitened units: ``exp(-Z^2/2) < 3e-18``.
TRUNCATION = 9.0
#: The stand-in singularity distance of an entire activation (measured, docs/kernels.md).
ENTIRE = math.pi

#: A kernel's integrand: for each variable, the derivative orders of its factors.
Orders = tuple[tuple[int, ...], ...]


def step(activation: str) -> float:
    """``2 pi d / ln(1/eps)``: the step ``h`` is this over ``l_max`` (capped at ``H_MAX``).

    Examples
    --------
    >>> round(step("tanh"), 6)
    0.274156
    """
    d = _activation(activation).singularity
    return 2 * math.pi * (ENTIRE if d is None else d) / LOG_INVERSE_EPS


def encode(activation: str, orders: Orders) -> str:
    """The kernel's key: ``"tanh|0,1;2"`` is ``E[g(u_0) g'(u_0) g''(u_1)]``."""
    return f"{activation}|" + ";".join(",".join(map(str, o)) for o in orders)


def decode(key: str) -> tuple[str, Orders]:
    activation, orders = key.split("|")
    return activation, tuple(tuple(int(k) for k in o.split(",")) for o in orders.split(";"))


def _pairs(size: int) -> list[tuple[int, int]]:
    """The covariance entries' order: the upper triangle, row by row."""
    return [(a, b) for a in range(size) for b in range(a, size)]


class GaussianKernel(sp.Function):
    """``E[prod_a prod_k g^(k)(u_a)]``, computed numerically: ``GaussianKernel(key, *c)``.

    ``key`` (a :class:`sympy.Str`) names the activation and the factors' derivative
    orders; ``c`` are the covariance's upper triangle, row by row.

    Examples
    --------
    >>> a, c, b = sp.symbols("a c b")
    >>> from sympy.core.symbol import Str
    >>> k = GaussianKernel(Str("tanh|0;0"), a, c, b)
    >>> k.diff(c)
    GaussianKernel(tanh|1;1, a, c, b)
    >>> k.diff(a)
    GaussianKernel(tanh|0;2, b, c, a)/2
    >>> round(float(k.subs({a: 1, c: 0.5, b: 1})), 10)
    0.1863244132
    """

    @classmethod
    def eval(cls, key, *entries):
        """Never a value; the variables put in a canonical order (one name per kernel)."""
        canonical = _canonical(key.name, entries)
        if canonical != (key.name, entries):
            return cls(Str(canonical[0]), *canonical[1])
        return None

    @property
    def key(self) -> str:
        return self.args[0].name

    def fdiff(self, argindex: int = 1) -> sp.Expr:
        """Price's theorem: the derivative in an entry is a sum of kernels."""
        activation, orders = decode(self.key)
        a, b = _pairs(len(orders))[argindex - 2]
        terms = {}
        for first in _differentiate(orders, a):
            for both in _differentiate(first, b):
                terms[both] = terms.get(both, 0) + 1
        half = sp.Rational(1, 2) if a == b else 1
        return sum((half * n * GaussianKernel(Str(encode(activation, o)), *self.args[1:])
                    for o, n in terms.items()), sp.Integer(0))

    def _eval_derivative(self, s):  # the key is no function of anything
        return sum((arg.diff(s) * self.fdiff(i + 2) for i, arg in enumerate(self.args[1:])
                    if arg.has(s)), sp.Integer(0))

    def _eval_evalf(self, prec):
        if not all(arg.is_number for arg in self.args[1:]):
            return None
        value = numerical_value(self.key, [float(arg) for arg in self.args[1:]])
        return sp.Float(value, prec)


def _canonical(key: str, entries: tuple) -> tuple[str, tuple]:
    """The kernel's variables permuted to the least (orders, entries) order."""
    activation, orders = decode(key)
    size = len(orders)
    if size == 1:
        return key, tuple(entries)
    pairs = _pairs(size)
    entry = {**dict(zip(pairs, entries, strict=True)),
             **{(b, a): e for (a, b), e in zip(pairs, entries, strict=True)}}
    best = None
    for perm in itertools.permutations(range(size)):
        candidate = (tuple(orders[p] for p in perm),
                     tuple(entry[perm[a], perm[b]] for a, b in pairs))
        rank = (candidate[0], [sp.default_sort_key(e) for e in candidate[1]])
        if best is None or rank < best[0]:
            best = (rank, candidate)
    return encode(activation, best[1][0]), best[1][1]


def _differentiate(orders: Orders, a: int):
    """``d/du_a`` of the product: one term per factor at ``a`` (product rule)."""
    for j in range(len(orders[a])):
        raised = list(orders[a])
        raised[j] += 1
        yield (*orders[:a], tuple(sorted(raised)), *orders[a + 1:])


# --------------------------------------------------------------------------- lowering


def lowered(activation: str, pattern: Sequence[tuple[str, int]], size: int) -> sp.Expr:
    """``E[prod f(u_a)]`` in the entries ``c_a_b``, as a sum of :class:`GaussianKernel`.

    ``pattern`` lists factors ``(kind, a)``: ``"g"``, ``"dg"`` (``g'``) or ``"x"``
    (``u_a`` itself) of variable ``a < size``.  Linear factors are removed by Stein's
    lemma; variables without factors are marginalised.

    Examples
    --------
    >>> lowered("tanh", (("dg", 0), ("g", 2), ("x", 1)), 3)
    c_0_1*GaussianKernel(tanh|0;2, c_2_2, c_0_2, c_0_0) + \
c_1_2*GaussianKernel(tanh|1;1, c_0_0, c_0_2, c_2_2)
    """
    g = _activation(activation)
    if not g.smooth:
        raise DerivationError("gaussian kernel", f"activation {activation!r} has a kink: its "
                                                 f"numerical kernels would not reach the "
                                                 f"stated accuracy")
    orders = [[] for _ in range(size)]
    linear = [0] * size
    for kind, a in pattern:
        if kind == "x":
            linear[a] += 1
        else:
            orders[a].append({"g": 0, "dg": 1}[kind])
    entry = {(a, b): sp.Symbol(f"c_{a}_{b}", real=True) for a, b in _pairs(size)}
    covariance = {**entry, **{(b, a): s for (a, b), s in entry.items()}}
    return sp.expand(_stein(activation, tuple(map(tuple, orders)), tuple(linear), covariance))


def _stein(activation: str, orders: Orders, linear: tuple[int, ...], c: dict) -> sp.Expr:
    """``E[prod_a u_a^linear_a prod_k g^(k)(u_a)]``, Stein's lemma on the linear factors."""
    j = next((a for a, n in enumerate(linear) if n), None)
    if j is None:
        return _kernel(activation, orders, c)
    linear = (*linear[:j], linear[j] - 1, *linear[j + 1:])
    total = sp.Integer(0)
    for m in range(len(orders)):
        if linear[m]:  # d/du_m of u_m^p
            fewer = (*linear[:m], linear[m] - 1, *linear[m + 1:])
            total += c[j, m] * linear[m] * _stein(activation, orders, fewer, c)
        for raised in _differentiate(orders, m):
            total += c[j, m] * _stein(activation, raised, linear, c)
    return total


def _kernel(activation: str, orders: Orders, c: dict) -> sp.Expr:
    """The kernel of the variables that carry a factor (the others marginalised)."""
    keep = [a for a, o in enumerate(orders) if o]
    if not keep:
        return sp.Integer(1)
    entries = [c[keep[a], keep[b]] for a, b in _pairs(len(keep))]
    key = encode(activation, tuple(tuple(sorted(orders[a])) for a in keep))
    return GaussianKernel(Str(key), *entries)


# --------------------------------------------------------------------------- code


def kernel_name(key: str) -> str:
    """The generated function's name: ``_gk_<activation>_<orders>``."""
    activation, orders = decode(key)
    return f"_gk_{activation}_" + "_".join("x".join(map(str, o)) for o in orders)


def _factor(activation: str, orders: tuple[int, ...], variable: str, printer) -> str:
    g = _activation(activation)
    product = sp.Mul(*(g.symbolic_order(k) for k in orders))
    # pi as a number: the generated code needs no constants module.
    return printer.doprint(product.xreplace({sp.Symbol("u", real=True): sp.Symbol(variable),
                                             sp.pi: sp.Float(math.pi, 17)}))


def _cholesky_lines(size: int) -> list[str]:
    """``l_a_b`` from the arguments ``c_a_b`` (a zero pivot: a degenerate direction)."""
    lines = []
    for a in range(size):
        for b in range(a + 1):
            dot = "".join(f" - l_{a}_{k} * l_{b}_{k}" for k in range(b))
            if a == b:
                lines.append(f"    l_{a}_{a} = math.sqrt(max(c_{a}_{a}{dot}, 0.0))")
            else:
                lines.append(f"    l_{a}_{b} = (c_{b}_{a}{dot}) / l_{b}_{b} if l_{b}_{b} > 0.0 "
                             f"else 0.0")
    entries = ", ".join(f"abs(l_{a}_{b})" for a in range(size) for b in range(a + 1))
    lines.append(f"    h = min({H_MAX!r}, {{step!r}} / max({entries}, 1e-300))")
    return lines


def _signature(name: str, size: int) -> str:
    return f"def {name}({', '.join(f'c_{a}_{b}' for a, b in _pairs(size))}):"


#: Integer powers up to this are printed as products (see :func:`_numpy_printer`).
_POWER_LIMIT = 16


def _numpy_printer():
    """The SciPy printer, ``x**k`` (``x`` a symbol, integer ``k != 2``, ``1 < |k| <=
    _POWER_LIMIT``) printed as a product: NumPy raises an array to any integer power but 2
    and -1 by ``pow``, ~50x the cost of a product (round-off apart, the same value).
    Squares stay ``x**2``: NumPy squares, in place when ``x`` is a temporary."""
    from sympy.printing.numpy import SciPyPrinter

    class _Printer(SciPyPrinter):
        def _print_Pow(self, expr, rational=False):
            k = expr.exp
            if not (_pow_is_slow(k) and abs(k) <= _POWER_LIMIT and expr.base.is_Symbol):
                return super()._print_Pow(expr, rational)
            product = "*".join([self._print(expr.base)] * abs(int(k)))
            return f"({product})" if k > 0 else f"(1/({product}))"

    return _Printer({"fully_qualified_modules": True})


def _pow_is_slow(k: sp.Expr) -> bool:
    """Whether NumPy computes ``x**k`` of an array by ``pow`` (its fast paths: 2, -1)."""
    return bool(k.is_Integer and abs(k) > 1 and k != 2)


def _factor_lines(activation: str, orders: tuple[int, ...], a: int, printer) -> list[str]:
    """``f<a> = ...``, the product of variable ``a``'s factors on its grid ``u<a>``, each
    common subexpression bound once (``tanh(u)`` in ``2 (tanh(u)^2 - 1) tanh(u)``: the
    activation calls are the kernel's cost) and so is every base of a power NumPy would
    compute by ``pow``."""
    variable = sp.Symbol(f"u{a}")
    g = _activation(activation)
    # pi as a number: the generated code needs no constants module.
    product = sp.Mul(*(g.symbolic_order(k) for k in orders)).xreplace(
        {sp.Symbol("u", real=True): variable, sp.pi: sp.Float(math.pi, 17)})
    # A base listed as an output of its own occurs twice, so cse binds it to a symbol.
    bases = sorted({p.base for p in product.atoms(sp.Pow)
                    if _pow_is_slow(p.exp) and not p.base.is_Symbol},
                   key=sp.default_sort_key)
    bound, (reduced, *_) = sp.cse([product, *bases], symbols=sp.numbered_symbols(f"t{a}_"))
    lines = [f"    {name} = {printer.doprint(value)}" for name, value in bound]
    if reduced.free_symbols:
        return [*lines, f"    f{a} = {printer.doprint(reduced)}"]
    return [*lines, f"    f{a} = numpy.full(u{a}.shape, {float(reduced)!r})"]


def _grid_axis(b: int, dims: int) -> str:
    """The grid ``z`` along axis ``b`` of a ``dims``-dimensional array (broadcast)."""
    return "z" if b == dims - 1 else f"z.reshape({', '.join(['-1'] + ['1'] * (dims - b - 1))})"


def numpy_source(key: str) -> str:
    """The pure path's kernel: the trapezoidal grid as broadcast NumPy arrays.

    Variable ``a``'s factors are evaluated on its own grid ``u_a = sum_b<=a L_ab z_b``
    (``a + 1`` dimensions); the weighted sum is taken one variable at a time, the last
    first (``f_a * s`` contracted with the weights ``w``), so no array is larger than
    the last variable's factor.

    Examples
    --------
    >>> print(numpy_source("tanh|1;0").splitlines()[0])
    def _gk_tanh_1_0(c_0_0, c_0_1, c_1_1):
    >>> print("\\n".join(numpy_source("tanh|0;2").splitlines()[-5:]))
        t1_0 = numpy.tanh(u1)
        f1 = 2*t1_0*(t1_0**2 - 1)
        s = f1 @ w
        s = (f0 * s) @ w
        return float(s)
    """
    activation, orders = decode(key)
    size, printer = len(orders), _numpy_printer()
    lines = [_signature(kernel_name(key), size),
             *(line.format(step=step(activation)) for line in _cholesky_lines(size)),
             f"    n = int({TRUNCATION!r} / h)",
             "    z = h * numpy.arange(-n, n + 1.0)",
             f"    w = h * {1 / math.sqrt(2 * math.pi)!r} * numpy.exp(-0.5 * z * z)"]
    for a in range(size):
        grid = " + ".join(f"l_{a}_{b} * {_grid_axis(b, a + 1)}" for b in range(a + 1))
        lines += [f"    u{a} = {grid}", *_factor_lines(activation, orders[a], a, printer)]
    lines.append(f"    s = f{size - 1} @ w")
    lines += [f"    s = (f{a} * s) @ w" for a in reversed(range(size - 1))]
    lines.append("    return float(s)")
    return "\n".join(lines)


def loop_source(key: str, name: str | None = None) -> str:
    """The native kernel: the same grid in loops (scalars only; the corners of the cube
    beyond ``|z| = Z``, where the weight is below ``e^-40``, skipped).

    Examples
    --------
    >>> print(loop_source("tanh|0;0").splitlines()[0])
    def _gk_tanh_0_0(c_0_0, c_0_1, c_1_1):
    """
    from sympy.printing.pycode import PythonCodePrinter

    activation, orders = decode(key)
    size, printer = len(orders), PythonCodePrinter({"standard": "python3"})
    lines = [_signature(name or kernel_name(key), size),
             *(line.format(step=step(activation)) for line in _cholesky_lines(size)),
             "    total = 0.0", "    r0 = 0.0", "    w0 = 1.0"]
    for a in range(size):
        pad = "    " * (a + 1)
        lines += [f"{pad}m{a} = int(math.sqrt(max({TRUNCATION * TRUNCATION!r} - r{a}, 0.0)) / h)",
                  f"{pad}for i{a} in range(-m{a}, m{a} + 1):",
                  f"{pad}    z{a} = h * i{a}",
                  f"{pad}    r{a + 1} = r{a} + z{a} * z{a}",
                  f"{pad}    u{a} = " + " + ".join(f"l_{a}_{b} * z{b}" for b in range(a + 1)),
                  f"{pad}    w{a + 1} = w{a} * "
                  f"({_factor(activation, orders[a], f'u{a}', printer)})"]
    pad = "    " * (size + 1)
    lines.append(f"{pad}total += w{size} * math.exp(-0.5 * r{size})")
    lines.append(f"    return total * (h * {1 / math.sqrt(2 * math.pi)!r}) ** {size}")
    return "\n".join(lines)


@cache
def _numpy_function(key: str):
    import numpy
    import scipy.special

    namespace = {"math": math, "numpy": numpy, "scipy": scipy}
    exec(numpy_source(key), namespace)  # noqa: S102  (generated from the declaration)
    return namespace[kernel_name(key)]


def numerical_value(key: str, entries: Sequence[float]) -> float:
    """The kernel ``key`` at the covariance entries ``entries`` (NumPy rule).

    Examples
    --------
    >>> round(numerical_value("erf|0;0", [1.0, 0.5, 1.0]), 12)  # 2 asin(1/4) / pi
    0.16086124651
    """
    return _numpy_function(key)(*entries)


def kernels_in(exprs: Sequence[sp.Expr]) -> list[str]:
    """The keys of every :class:`GaussianKernel` in ``exprs``, sorted."""
    found = set()
    for expr in exprs:
        found.update(k.key for k in sp.sympify(expr).atoms(GaussianKernel))
    return sorted(found)

