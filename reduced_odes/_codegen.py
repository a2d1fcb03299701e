"""A derivation as a plain-Python module: straight-line code after common-subexpression
elimination (the generator behind :func:`reduced_odes._compile.load_system`).

The right-hand side, Jacobian, observables and domain margins are printed with
``math`` only.  If the derivation names a kernels module, the special functions of one
argument tuple are evaluated by one call of that module's cheapest fused kernel that
provides them all.  Numerical Gaussian kernels (:class:`~reduced_odes._quadrature.
GaussianKernel`) become calls of functions generated into the module itself: a NumPy
form (``_gk_*``, the pure path) and a loop form (``_native_gk_*``, which the numba twin
compiles in its place).  Loading the module never imports SymPy.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ._errors import DerivationError
from ._version import __version__

__all__ = ["CODEGEN_VERSION", "CompiledSystem", "generate"]

#: Bump when the generated code changes shape, to invalidate old cache entries.
CODEGEN_VERSION = "5"
@dataclass(frozen=True)
class CompiledSystem:
    """Numerical callables of one model variant's flow in its integration coordinates.

    Every callable takes the state ``y`` (a sequence in ``coordinates`` order)
    and then the model's parameter values, in ``Derivation.parameters`` order.

    Attributes
    ----------
    model, variant : str
    rhs : callable
        ``rhs(t, y, *params) -> list`` of the rates.
    jac : callable
        ``jac(t, y, *params) -> n x n nested list``.
    observables : callable
        ``observables(y, *params) -> [*observables, *domain margins]``.
    margins : callable
        ``margins(y, *params) -> [domain margins]`` alone (each ``> 0`` inside).
    state : callable
        ``state(y, *params) -> [state variables]`` (the coordinate changes undone).
    coordinates : callable
        ``coordinates(x, *params) -> [integration coordinates]`` of a state ``x``.
    coordinate_names, state_names, observable_names, domain_labels : tuple of str
    coordinate_ranges : tuple of str
        For each state variable, the values its coordinate can represent.
    loss : callable
        ``loss(y, *params) -> [L]``, the model's (reduced) loss.
    blocks : tuple of tuple of int
        The coordinate indices of each independent block (:class:`~reduced_odes.Block`),
        or empty.  The module then also defines ``rhs_block<b>`` and ``jac_block<b>``, the
        flow of block ``b`` in its own coordinates.
    log_times : tuple of float or None
        Each block's ``log_time``.
    native : tuple
        A structured system's recipe for its native form
        (:attr:`~reduced_odes.StructuredSystem.native`); empty otherwise.

    Examples
    --------
    Made by :func:`~reduced_odes._compile.load_system`; the deep linear network integrates
    ``ln a, ln b``:

    >>> import math
    >>> from reduced_odes._compile import load_system
    >>> system = load_system("deep_linear")
    >>> system.coordinate_names, system.state_names, system.observable_names
    (('log_a', 'log_b'), ('a', 'b'), ('u', 'loss'))
    >>> y, s = [0.0, 0.0], 2.0  # a = b = 1, target s = 2
    >>> system.rhs(0.0, y, s), system.loss(y, s), system.state([math.log(0.5), 0.0], s)
    ([1.0, 1.0], [0.5], [0.5, 1.0])
    """

    model: str
    variant: str
    rhs: Callable
    jac: Callable
    observables: Callable
    margins: Callable
    state: Callable
    coordinates: Callable
    coordinate_names: tuple[str, ...]
    state_names: tuple[str, ...]
    observable_names: tuple[str, ...]
    domain_labels: tuple[str, ...]
    key: str
    path: Path | None  # None: a structured system, no generated module
    coordinate_ranges: tuple[str, ...] = ()
    loss: Callable | None = None
    blocks: tuple[tuple[int, ...], ...] = ()
    log_times: tuple[float | None, ...] = ()
    native: tuple = ()

    @property
    def size(self) -> int:
        return len(self.coordinate_names)


def _system_from_module(module, path: Path) -> CompiledSystem:
    return CompiledSystem(module.MODEL, module.VARIANT, module.rhs, module.jac,
                          module.observables, module.margins, module.state, module.coordinates,
                          tuple(module.COORDINATES), tuple(module.STATE),
                          tuple(module.OBSERVABLES), tuple(module.DOMAIN_LABELS), module.KEY, path,
                          tuple(module.COORDINATE_RANGES), module.loss,
                          tuple(map(tuple, module.BLOCKS)), tuple(module.LOG_TIMES))


@functools.cache
def _sympy_version() -> str:
    return importlib.metadata.version("sympy")


def _versions() -> str:
    return f"reduced-odes {__version__}; sympy {_sympy_version()}"


def generate(model_name: str, variant: str, derivation) -> tuple[str, str]:
    """Generated module body and its key (a hash of the code it runs, :func:`_module_body`)."""
    import sympy as sp

    d = derivation
    margins = [d.in_coordinates(sp.sympify(c.lhs - c.rhs)) for c in d.domain]
    observables = [d.in_coordinates(e) for e in d.observables.values()] + margins
    jacobian = list(d.jacobian)
    forward = [_forward(d, i) for i in range(len(d.state))]
    blocks = [[d.coordinate_names.index(name) for name in b.coordinates] for b in d.blocks]
    log_times = [b.log_time for b in d.blocks]
    every = [*d.coordinate_rhs, *jacobian, *observables, *d.to_state, *forward, d.loss]
    numerical_imports, numerical = _numerical_kernels(every)

    printer = _printer()
    params = ", ".join(["", *(printer.doprint(s) for s in d.parameters)]) if d.parameters else ""
    unpack_y, unpack_x = _unpack(d.coordinates, "y", printer), _unpack(d.state, "x", printer)
    n = len(d.coordinates)
    kernels = d.kernels
    functions = [
        _function_source("rhs", f"t, y{params}", unpack_y, list(d.coordinate_rhs), kernels),
        _function_source("jac", f"t, y{params}", unpack_y, jacobian, kernels, columns=n),
        _function_source("observables", f"y{params}", unpack_y, observables, kernels),
        _function_source("margins", f"y{params}", unpack_y, margins, kernels),
        _function_source("state", f"y{params}", unpack_y, list(d.to_state), kernels),
        _function_source("coordinates", f"x{params}", unpack_x, forward, kernels),
        _function_source("loss", f"y{params}", unpack_y, [d.in_coordinates(d.loss)], kernels),
        *_block_functions(d, blocks, params, printer, kernels),
    ]
    labels = [f"{sp.sstr(c.lhs - c.rhs)} > 0" for c in d.domain]
    declarations = [
        f"MODEL = {model_name!r}",
        f"VARIANT = {variant!r}",
        f"COORDINATES = {list(d.coordinate_names)!r}",
        f"STATE = {list(d.state_names)!r}",
        f"OBSERVABLES = {list(d.observables)!r}",
        f"DOMAIN_LABELS = {labels!r}",
        f"COORDINATE_RANGES = {list(d.coordinate_ranges)!r}",
        f"BLOCKS = {blocks!r}",
        f"LOG_TIMES = {log_times!r}",
        *numerical,
        *functions,
    ]
    return _module_body(f"for model {model_name!r}, variant {variant!r}",
                        [*numerical_imports, *_kernel_imports(kernels)], declarations)


def _kernel_imports(kernels: str | None) -> list[str]:
    """The import of a model's fused special-function kernels, if it has any."""
    if not kernels:
        return []
    from importlib import import_module

    return [f"from {kernels} import {', '.join(import_module(kernels).FUSED_KERNELS)}"]


def _module_body(what: str, imports: list[str], declarations: list[str]) -> tuple[str, str]:
    """The generated module (its imports, its ``KEY``, then its declarations) and its key.

    The key hashes the code the module runs (every expression as printed), not the
    expressions' ``srepr`` (a second printing of all of them: a fifth of a derivation)."""
    material = "\n".join([*imports, *declarations, _versions()])
    key = hashlib.sha256((material + CODEGEN_VERSION).encode()).hexdigest()[:24]
    body = "\n".join([f'"""Generated by reduced-odes {__version__} {what}. Do not edit."""',
                      "import math", *imports, f"KEY = {key!r}", *declarations]) + "\n"
    return body, key


def _numerical_kernels(exprs: Sequence) -> tuple[list[str], list[str]]:
    """The imports and function definitions of the numerical Gaussian kernels in ``exprs``:
    each key's NumPy form (the pure path calls it) and its loop form (``_native`` + name,
    which the numba twin compiles under the plain name)."""
    from ._orthant import KERNEL_NAME, has_orthant, orthant_source
    from ._quadrature import kernel_name, kernels_in, loop_source, numpy_source

    keys = kernels_in(exprs)
    sources = []
    if has_orthant(exprs):  # scalar math already: one source serves both paths
        sources += ["\n" + orthant_source(KERNEL_NAME),
                    "\n" + orthant_source(f"_native{KERNEL_NAME}")]
    if not keys:
        return [], sources
    for key in keys:
        sources += ["\n" + numpy_source(key), "\n" + loop_source(key, f"_native{kernel_name(key)}")]
    imports = ["import numpy"]
    if any("scipy.special" in source for source in sources):
        imports.append("import scipy.special")
    return imports, sources


def _unpack(symbols: Sequence, argument: str, printer) -> str:
    """The line binding ``symbols`` from the sequence ``argument`` (a list or an array)."""
    names = ", ".join(printer.doprint(s) for s in symbols)
    trailing = "," if len(symbols) == 1 else ""
    return f"{names}{trailing} = {argument}.tolist() if hasattr({argument}, 'tolist') else " \
           f"{argument}"


def _block_functions(d, blocks: list[list[int]], params: str, printer,
                     kernels: str | None) -> list[str]:
    """``rhs_block<b>`` and ``jac_block<b>`` of each block: its flow and Jacobian in its own
    coordinates (``y`` holds only those; the others do not occur, as ``gradient_flow``
    asserted)."""
    functions = []
    for b, index in enumerate(blocks):
        unpack = _unpack([d.coordinates[i] for i in index], "y", printer)
        rates = [d.coordinate_rhs[i] for i in index]
        jacobian = [d.jacobian[i, j] for i in index for j in index]
        functions += [
            _function_source(f"rhs_block{b}", f"t, y{params}", unpack, rates, kernels),
            _function_source(f"jac_block{b}", f"t, y{params}", unpack, jacobian, kernels,
                             columns=len(index))]
    return functions


def _forward(derivation, i: int):
    """Coordinate ``i`` as a function of the state (the inverse of ``to_state[i]``)."""
    import sympy as sp

    coordinate, state = derivation.coordinates[i], derivation.state[i]
    if coordinate == state:
        return state
    solutions = [s for s in sp.solve(sp.Eq(derivation.to_state[i], state), coordinate)
                 if sp.simplify(derivation.to_state[i].subs(coordinate, s) - state) == 0]
    if not solutions:
        raise DerivationError("coordinate change",
                              f"cannot invert {state} = {derivation.to_state[i]}")
    return solutions[0]


def _printer():
    import sympy as sp
    from sympy.printing.pycode import PythonCodePrinter

    class _Printer(PythonCodePrinter):
        def _print_GaussianKernel(self, expr):  # a call of the generated numerical kernel
            from ._quadrature import kernel_name

            args = ", ".join(self._print(a) for a in expr.args[1:])
            return f"{kernel_name(expr.key)}({args})"

        def _print_OrthantKernel(self, expr):  # ReLU's four sign factors, generated too
            from ._orthant import KERNEL_NAME

            return f"{KERNEL_NAME}({', '.join(self._print(a) for a in expr.args)})"

        def _print_Function(self, expr):  # special functions by their class name
            args = ", ".join(self._print(a) for a in expr.args)
            return f"{type(expr).__name__}({args})"

        def _print_Pow(self, expr, rational=False):
            # x**(3/2) of a negative float is complex in Python; math.pow raises ValueError
            # like math.sqrt, so evaluating outside the domain fails loudly (same C pow()).
            exponent = expr.exp
            if exponent.is_Rational and not exponent.is_Integer and abs(exponent) != sp.S.Half:
                return f"math.pow({self._print(expr.base)}, {float(exponent)!r})"
            return super()._print_Pow(expr, rational=rational)

    return _Printer({"standard": "python3"})


def _function_source(name: str, signature: str, unpack: str, exprs: Sequence,
                     kernels: str | None, columns: int | None = None) -> str:
    import sympy as sp

    printer = _printer()
    kernel_lines, exprs = ([], list(exprs)) if not kernels else _fuse_kernel_calls(
        list(exprs), printer, kernels)
    # A flat list: SymPy skips CSE inside nested lists.
    replacements, reduced = sp.cse(list(exprs), symbols=sp.numbered_symbols("_c"))
    lines = [f"\ndef {name}({signature}):", f"    {unpack}", *kernel_lines]
    lines += [f"    {sym} = {printer.doprint(e)}" for sym, e in replacements]
    items = [printer.doprint(e) for e in reduced]
    if columns:
        rows = [items[i:i + columns] for i in range(0, len(items), columns)]
        lines.append("    return [" + ", ".join("[" + ", ".join(r) + "]" for r in rows) + "]")
    else:
        lines.append("    return [" + ", ".join(items) + "]")
    return "\n".join(lines)


def _fuse_kernel_calls(exprs: list, printer, kernels: str) -> tuple[list[str], list]:
    """Replace the special functions of each argument tuple by the outputs of one fused
    kernel call (the cheapest of the module's ``FUSED_KERNELS`` that provides all of them).

    Returns the kernel-call lines and the expressions in the new symbols.
    """
    from importlib import import_module

    import sympy as sp

    module = import_module(kernels)
    FUSED_KERNELS, NUMERIC_IMPLEMENTATIONS = module.FUSED_KERNELS, module.NUMERIC_IMPLEMENTATIONS

    calls: dict[tuple, dict[str, sp.Basic]] = {}
    for expr in exprs:
        for call in sp.sympify(expr).atoms(sp.Function):
            if type(call).__name__ in NUMERIC_IMPLEMENTATIONS:
                calls.setdefault(call.args, {})[type(call).__name__] = call
    lines, subs = [], {}
    for i, args in enumerate(sorted(calls, key=sp.default_sort_key)):
        used = calls[args]
        kernel = next(k for k, provides in FUSED_KERNELS.items() if set(used) <= set(provides))
        targets = []
        for class_name in FUSED_KERNELS[kernel]:
            if class_name in used:
                symbol = sp.Symbol(f"_{class_name}{i}")
                subs[used[class_name]] = symbol
                targets.append(symbol.name)
            else:
                targets.append("_")
        arguments = ", ".join(printer.doprint(a) for a in args)
        lines.append(f"    {', '.join(targets)} = {kernel}({arguments})")
    return lines, [sp.sympify(e).xreplace(subs) for e in exprs]


