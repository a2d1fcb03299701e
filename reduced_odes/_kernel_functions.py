"""One kernel as numbers: vectorised NumPy and numba callables of its covariance entries.

The stable entry point for rates assembled by index (sums over units) instead of
unrolled per size: :func:`gaussian_kernel` gives, for an activation and a factor
pattern, the kernel's expression in the covariance entries ``c_a_b`` (a closed form
where :mod:`reduced_odes._expectation` finds one, else the numerical
:class:`~reduced_odes._quadrature.GaussianKernel` terms of
:func:`~reduced_odes._quadrature.lowered`) together with a NumPy function of
arrays of entries and the source of a scalar function that numba compiles.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache

import numpy as np
import sympy as sp

from ._activations import activation as _activation
from ._errors import DerivationError
from ._expectation import expectation
from ._orthant import KERNEL_NAME, OrthantKernel, has_orthant, orthant_source, orthant_value
from ._quadrature import (
    H_MAX,
    TRUNCATION,
    GaussianKernel,
    decode,
    kernel_name,
    kernels_in,
    loop_source,
    lowered,
    step,
)
from ._quadrature import _numpy_function as _kernel_numpy

__all__ = ["KernelFunctions", "gaussian_kernel", "kernel_expression", "kernel_report",
           "numerical_function"]

#: A factor: ``("g", a)``, ``("dg", a)`` (``g'``) or ``("x", a)`` (``u_a`` itself).
Pattern = tuple[tuple[str, int], ...]


@cache
def kernel_expression(activation: str, pattern: Pattern, size: int) -> tuple[sp.Expr, bool]:
    """``E[prod f(u_a)]`` in the entries ``c_a_b`` (``a <= b``), and whether it is closed.

    The closed form is derived exactly as before numerical kernels existed (the same
    rules, the same expression); only where they find none, the lowered numerical form.

    Examples
    --------
    >>> kernel_expression("erf", (("g", 0), ("g", 1)), 2)
    (2*asin(c_0_1/(sqrt(c_0_0 + 1)*sqrt(c_1_1 + 1)))/pi, True)
    >>> kernel_expression("tanh", (("g", 0), ("g", 1)), 2)[1]
    False
    """
    g = _activation(activation)
    u = sp.symbols(f"u0:{size}", real=True)
    covariance = sp.Matrix(size, size, lambda a, b: sp.Symbol(f"c_{min(a, b)}_{max(a, b)}",
                                                                real=True))
    forms = {"g": g.function, "dg": g.derivative, "x": lambda v: v}
    integrand = sp.Mul(*(forms[kind](u[index]) for kind, index in pattern))
    try:
        return expectation(integrand, u, covariance).value, True
    except DerivationError:
        if not g.smooth:
            raise
    return lowered(activation, pattern, size), False


def entries(size: int) -> tuple[sp.Symbol, ...]:
    """The covariance entries ``c_a_b`` (``a <= b``), row by row: the callables' arguments."""
    return tuple(sp.Symbol(f"c_{a}_{b}", real=True) for a in range(size)
                 for b in range(a, size))


@dataclass(frozen=True)
class KernelFunctions:
    """A kernel's expression and its numerical forms (see :func:`gaussian_kernel`).

    Attributes
    ----------
    expression : sympy.Expr
        In the entries :attr:`arguments`.
    closed_form : bool
        Whether :attr:`expression` is a closed form (else numerical kernels occur in it).
    arguments : tuple of Symbol
        ``c_a_b``, ``a <= b``, row by row.
    numpy : callable
        ``numpy(*entries)``: the kernel at arrays of entries (broadcast together).
    source : str
        Python source (``math`` only) defining :attr:`name` and its helpers, scalars in
        and out: numba compiles it (:meth:`numba`).
    name : str
        The scalar function's name in :attr:`source`.

    Examples
    --------
    >>> k = gaussian_kernel("linear", (("x", 0), ("x", 1)), 2)
    >>> k.expression, k.closed_form, float(k.numpy(1.0, 0.25, 2.0))
    (c_0_1, True, 0.25)
    """

    expression: sp.Expr
    closed_form: bool
    arguments: tuple[sp.Symbol, ...]
    numpy: Callable = field(repr=False)
    source: str = field(repr=False)
    name: str

    def numba(self) -> Callable:
        """:attr:`source` compiled by numba (scalar entries in, a float out)."""
        import math

        import numba

        namespace: dict = {"math": math}
        exec(self.source, namespace)  # noqa: S102  (generated from the declaration)
        helpers = [n for n in namespace if n.startswith("_gk_")]
        for name in [*helpers, self.name]:
            namespace[name] = numba.njit(error_model="numpy")(namespace[name])
        return namespace[self.name]


@cache
def gaussian_kernel(activation: str, pattern: Pattern, size: int) -> KernelFunctions:
    """The kernel ``E[prod f(u_a)]`` of ``pattern`` over ``size`` Gaussians, as functions.

    Parameters
    ----------
    activation : str
        A registered activation.
    pattern : tuple of (str, int)
        The factors: ``("g", a)``, ``("dg", a)`` or ``("x", a)``, ``0 <= a < size``.
    size : int
        The number of Gaussian variables.

    Returns
    -------
    KernelFunctions

    Examples
    --------
    >>> k = gaussian_kernel("erf", (("g", 0), ("g", 1)), 2)
    >>> k.closed_form, [str(a) for a in k.arguments]
    (True, ['c_0_0', 'c_0_1', 'c_1_1'])
    >>> round(float(k.numpy(1.0, 0.5, 1.0)), 12)  # 2 asin(1/4) / pi
    0.16086124651
    >>> t = gaussian_kernel("tanh", (("g", 0), ("g", 1)), 2)
    >>> [round(v, 10) for v in t.numpy(np.array([1.0, 2.0]), 0.5, 1.0).tolist()]
    [0.1863244132, 0.1467541155]
    """
    expression, closed = kernel_expression(activation, tuple(pattern), size)
    arguments = entries(size)
    name = f"kernel_{activation}_{abs(hash((pattern, size))) % 10**8}"
    return KernelFunctions(expression, closed, arguments, _numpy_form(expression, arguments),
                           _scalar_source(expression, arguments, name), name)


def _numpy_form(expression: sp.Expr, arguments: Sequence[sp.Symbol]) -> Callable:
    """``expression`` on arrays: each numerical kernel evaluated point by point."""
    kernels = sorted(expression.atoms(GaussianKernel), key=sp.default_sort_key)
    orthants = sorted(expression.atoms(OrthantKernel), key=sp.default_sort_key)
    stand_ins = [sp.Dummy() for _ in [*kernels, *orthants]]
    outer = sp.lambdify([*arguments, *stand_ins],
                        expression.xreplace(dict(zip([*kernels, *orthants], stand_ins,
                                                     strict=True))),
                        modules=["scipy", "numpy"])
    position = {a: i for i, a in enumerate(arguments)}
    inner = [(np.vectorize(_kernel_numpy(k.key), otypes=[float]),
              [position[a] for a in k.args[1:]]) for k in kernels]
    # The orthant kernel's arguments are correlations (expressions of the entries).
    correlations = [sp.lambdify(arguments, list(k.args), modules="numpy") for k in orthants]
    orthant = np.vectorize(lambda *r: orthant_value(r), otypes=[float])

    def evaluate(*values):
        values = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in values))
        numerical = [f(*(values[i] for i in where)) for f, where in inner]
        numerical += [orthant(*r(*values)) for r in correlations]
        return np.broadcast_to(outer(*values, *numerical), values[0].shape) * 1.0

    return evaluate


def _scalar_source(expression: sp.Expr, arguments: Sequence[sp.Symbol], name: str) -> str:
    from sympy.printing.pycode import PythonCodePrinter

    class _Printer(PythonCodePrinter):
        def _print_GaussianKernel(self, expr):
            return f"{kernel_name(expr.key)}({', '.join(map(self._print, expr.args[1:]))})"

        def _print_OrthantKernel(self, expr):
            return f"{KERNEL_NAME}({', '.join(map(self._print, expr.args))})"

    printer = _Printer({"standard": "python3"})
    helpers = [loop_source(key) for key in kernels_in([expression])]
    if has_orthant([expression]):
        helpers.append(orthant_source(KERNEL_NAME))
    body = (f"def {name}({', '.join(map(str, arguments))}):\n"
            f"    return {printer.doprint(expression)}")
    return "\n\n".join([*helpers, body])


def numerical_function(arguments: Sequence[sp.Symbol], exprs: Sequence[sp.Expr]) -> Callable:
    """``exprs`` as one Python function of float ``arguments`` returning their list: closed
    forms by ``math``, each numerical :class:`~reduced_odes._quadrature.GaussianKernel` by its
    NumPy rule and each orthant kernel by its Gauss-Legendre rule, evaluated once per call
    (what ``sympy.lambdify`` cannot print).  For a few expressions evaluated a few thousand
    times (a reduced flow's fixed point); compiled systems generate code instead.

    Examples
    --------
    >>> a, c = sp.symbols("a c")
    >>> c00, c01, c11 = entries(2)
    >>> kernel = kernel_expression("tanh", (("g", 0), ("g", 1)), 2)[0]
    >>> f = numerical_function((a, c), [kernel.subs({c00: a, c11: a, c01: c}), a + c])
    >>> [round(v, 10) for v in f(1.0, 0.5)]
    [0.1863244132, 1.5]
    """
    exprs = [sp.sympify(e) for e in exprs]
    found = set().union(*(e.atoms(GaussianKernel, OrthantKernel) for e in exprs))
    numerical = sorted(found, key=sp.default_sort_key)
    stand_ins = [sp.Dummy() for _ in numerical]
    outer = sp.lambdify([*arguments, *stand_ins], [e.xreplace(dict(zip(
        numerical, stand_ins, strict=True))) for e in exprs], modules="math", cse=True)
    # A Gaussian kernel's covariance entries follow its key; an orthant kernel's six
    # correlations are all its arguments.
    rules = [_gaussian_rule(k.key) if isinstance(k, GaussianKernel) else orthant_value
             for k in numerical]
    inner = [sp.lambdify(arguments, list(k.args[1:] if isinstance(k, GaussianKernel)
                                         else k.args), modules="math") for k in numerical]

    def evaluate(*values: float) -> list[float]:
        numbers = [rule(entries(*values)) for rule, entries in zip(rules, inner, strict=True)]
        return [float(v) for v in outer(*values, *numbers)]

    return evaluate


def _gaussian_rule(key: str) -> Callable:
    """The kernel ``key``'s NumPy rule as a function of its list of entries."""
    rule = _kernel_numpy(key)
    return lambda entries: float(rule(*entries))


def kernel_report(exprs: Sequence[sp.Expr]) -> list[str]:
    """What a derivation's expressions compute numerically: one Markdown line per kernel
    (its integrand, dimension, rule, step and bound); every other term is a closed form.

    Examples
    --------
    >>> from reduced_odes._teacher_student import online_sgd_reduction
    >>> sgd = online_sgd_reduction(1, 1, "tanh", learning_rate_terms=False)
    >>> print(kernel_report(list(sgd.rates))[0])
    - `tanh|0,2`: E[g(u_1) g''(u_1)], 1-D, trapezoidal rule on the Cholesky-whitened grid, \
h = min(0.5, 0.27416 / l_max), |z| <= 9: error <= 1e-10 relative (docs/kernels.md)
    """
    lines = []
    for key in kernels_in(exprs):
        activation, orders = decode(key)
        factors = " ".join(f"g{chr(39) * k if k < 4 else f'^({k})'}(u_{a + 1})"
                           for a, variable in enumerate(orders) for k in variable)
        lines.append(f"- `{key}`: E[{factors}], {len(orders)}-D, trapezoidal rule on the "
                     f"Cholesky-whitened grid, h = min({H_MAX}, {step(activation):.5g} / l_max), "
                     f"|z| <= {TRUNCATION:g}: error <= 1e-10 relative (docs/kernels.md)")
    return lines
