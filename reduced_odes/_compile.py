"""Compile a derived flow into plain-Python numerical code, cached on disk.

The right-hand side, Jacobian, losses and domain margins are generated as
straight-line Python (``math`` only) after common-subexpression elimination.
All attention functions of one argument pair ``(p, L)`` are evaluated by one
call of a fused kernel of :mod:`reduced_odes._kernels` (which shares their
exponentials); the generated module imports nothing else, so loading it never
imports SymPy.
Parameters (alpha, w_star, L) are runtime arguments, so a new parameter
setting never re-derives or recompiles anything.

Cache layout (``$REDUCED_ODES_CACHE`` or ``$XDG_CACHE_HOME/reduced-odes``):

* ``system-<key>.py``: generated module; ``key`` hashes the expressions,
  the package and SymPy versions and the code-generator version;
* ``index-<derivation>.json``: maps a derivation (closure, versions, source
  hash of the symbolic modules) to its module key, so a warm start loads the
  module without importing SymPy.

Files are written atomically (temporary file + ``os.replace``); a module
whose recorded checksum does not match its body is rebuilt.  Within a process
a loaded system is reused while its index and module files are unchanged.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ._version import __version__

__all__ = ["CompiledSystem", "cache_dir", "load_system"]

#: Bump when the generated code changes shape, to invalidate old cache entries.
CODEGEN_VERSION = "3"
_SYMBOLIC_SOURCES = ("_gaussian.py", "_positions.py", "_model.py", "_losses.py",
                     "_special.py", "_kernels.py", "_flow.py", "_compile.py")
_PACKAGE_DIR = Path(__file__).resolve().parent


@dataclass(frozen=True)
class CompiledSystem:
    """Numerical callables of one closure's flow in coordinates (w_v1, p, w_v2, ln w_kq).

    Attributes
    ----------
    rhs : callable
        ``rhs(t, y, alpha, w_star, L) -> list`` of the four rates.
    jac : callable
        ``jac(t, y, alpha, w_star, L) -> 4x4 nested list``.
    observables : callable
        ``observables(y, alpha, w_star, L) -> [L_G4, L_IH, *domain margins]``.
    domain_labels : tuple of str
        The conditions ``margin > 0`` in the order of the margins.
    margins : callable
        ``margins(y, alpha, w_star, L) -> [domain margins]`` alone (cheap: no
        attention functions, no square roots, so defined outside the domain too).
    """

    closure: str
    rhs: Callable
    jac: Callable
    observables: Callable
    domain_labels: tuple[str, ...]
    key: str
    path: Path
    margins: Callable | None = None


def cache_dir() -> Path:
    """The on-disk cache directory (created on demand)."""
    root = os.environ.get("REDUCED_ODES_CACHE")
    if root is None:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(base, "reduced-odes")
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path


@functools.cache
def _sympy_version() -> str:
    return importlib.metadata.version("sympy")


def _versions() -> str:
    return f"reduced-odes {__version__}; sympy {_sympy_version()}"


def _derivation_key(closure: str) -> str:
    stamps = tuple((name, *_stat(_PACKAGE_DIR / name)) for name in _SYMBOLIC_SOURCES)
    return _derivation_key_of(closure, _versions(), CODEGEN_VERSION, stamps)


@functools.cache
def _derivation_key_of(closure: str, versions: str, codegen: str, stamps: tuple) -> str:
    # ``stamps`` (name, file stat) only keys this in-process memo: the hash covers the bytes.
    digest = hashlib.sha256(f"{closure}|{versions}|{codegen}".encode())
    for name, *_ in stamps:
        digest.update((_PACKAGE_DIR / name).read_bytes())
    return digest.hexdigest()[:24]


def _stat(path: Path) -> tuple[int, ...]:
    """``(inode, mtime_ns, ctime_ns, size)`` of ``path``, or ``()`` if it does not exist."""
    try:
        st = os.stat(path)
    except OSError:
        return ()
    return (st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size)


def _atomic_write(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _body_checksum(body: str) -> str:
    return hashlib.sha256(body.encode()).hexdigest()


def _load_module(path: Path):
    """Import a generated module, or return None if it is missing or corrupt."""
    try:
        text = path.read_text(encoding="utf-8")
        header, body = text.split("\n", 1)
        if header != f"# checksum: {_body_checksum(body)}":
            return None
        spec = importlib.util.spec_from_file_location(f"_reduced_odes_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    except (OSError, ValueError, SyntaxError, ImportError, AttributeError, NameError):
        return None


def _system_from_module(closure: str, module, path: Path) -> CompiledSystem:
    return CompiledSystem(closure, module.rhs, module.jac, module.observables,
                          tuple(module.DOMAIN_LABELS), module.KEY, path, module.margins)


def _generate(flow) -> tuple[str, str]:
    """Generated module body and its expression key."""
    import sympy as sp

    from ._flow import LOG_STATE
    from ._kernels import FUSED_KERNELS
    from ._model import ALPHA, W_KQ, WSTAR
    from ._positions import SEQ_LEN

    log_subs = {W_KQ: sp.exp(LOG_STATE[3])}
    margins = [sp.sympify(c.lhs - c.rhs).subs(log_subs) for c in flow.domain]
    observables = [flow.losses.four_gram, flow.losses.induction]
    observables = [sp.sympify(e).subs(log_subs) for e in observables] + margins
    jacobian = list(flow.log_jacobian)
    key_material = sp.srepr([list(flow.log_rhs), jacobian, observables]) + _versions()
    key = hashlib.sha256((key_material + CODEGEN_VERSION).encode()).hexdigest()[:24]

    state = ", ".join(str(s) for s in LOG_STATE)
    params = ", ".join(str(s) for s in (ALPHA, WSTAR, SEQ_LEN))
    unpack = f"{state} = y.tolist() if hasattr(y, 'tolist') else y"
    functions = [
        _function_source("rhs", f"t, y, {params}", unpack, list(flow.log_rhs)),
        _function_source("jac", f"t, y, {params}", unpack, jacobian, columns=4),
        _function_source("observables", f"y, {params}", unpack, observables),
        _function_source("margins", f"y, {params}", unpack, margins),
    ]
    labels = [f"{sp.sstr(c.lhs - c.rhs)} > 0" for c in flow.domain]
    body = "\n".join([
        f'"""Generated by reduced-odes {__version__} for closure {flow.closure!r}. Do not edit."""',
        "import math",
        f"from reduced_odes._kernels import {', '.join(FUSED_KERNELS)}",
        f"KEY = {key!r}",
        f"DOMAIN_LABELS = {labels!r}",
        *functions,
    ]) + "\n"
    return body, key


def _function_source(name: str, signature: str, unpack: str, exprs: Sequence,
                     columns: int | None = None) -> str:
    import sympy as sp
    from sympy.printing.pycode import PythonCodePrinter

    class _Printer(PythonCodePrinter):
        def _print_Function(self, expr):  # stable special functions by their class name
            args = ", ".join(self._print(a) for a in expr.args)
            return f"{type(expr).__name__}({args})"

        def _print_Pow(self, expr, rational=False):
            # x**(3/2) of a negative float is complex in Python; math.pow raises ValueError
            # like math.sqrt, so evaluating outside the domain fails loudly (same C pow()).
            exponent = expr.exp
            if exponent.is_Rational and not exponent.is_Integer and abs(exponent) != sp.S.Half:
                return f"math.pow({self._print(expr.base)}, {float(exponent)!r})"
            return super()._print_Pow(expr, rational=rational)

    printer = _Printer({"standard": "python3"})
    kernel_lines, exprs = _fuse_attention_calls(list(exprs), printer)
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


def _fuse_attention_calls(exprs: list, printer) -> tuple[list[str], list]:
    """Replace the attention functions of each argument pair by the outputs of one fused
    kernel call (the cheapest of ``FUSED_KERNELS`` that provides all of them).

    Returns the kernel-call lines and the expressions in the new symbols.
    """
    import sympy as sp

    from ._kernels import FUSED_KERNELS, NUMERIC_IMPLEMENTATIONS

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


#: In-process memo: (closure, directory) -> (index stamp, module stamp, system).
_LOADED: dict[tuple[str, str], tuple[tuple, tuple, CompiledSystem]] = {}


def load_system(closure: str, *, directory: Path | None = None) -> CompiledSystem:
    """The compiled flow of ``closure``: from the cache, or derived and compiled now.

    Parameters
    ----------
    closure : {"linear", "meanfield"}
        Softmax closure.
    directory : pathlib.Path, optional
        Cache directory (default :func:`cache_dir`).

    Examples
    --------
    >>> system = load_system("linear")
    >>> rates = system.rhs(0.0, [1e-4, 0.0, 1e-4, -18.4], 0.5, 0.3, 200)
    >>> len(rates)
    4
    """
    directory = Path(directory) if directory is not None else cache_dir()
    index = directory / f"index-{_derivation_key(closure)}.json"
    memo_key = (closure, str(index))
    if memo_key in _LOADED:
        index_stamp, module_stamp, system = _LOADED[memo_key]
        if _stat(index) == index_stamp and _stat(system.path) == module_stamp:
            return system
    try:
        path = directory / json.loads(index.read_text())["module"]
        module = _load_module(path)
        if module is not None:
            return _remember(memo_key, index, _system_from_module(closure, module, path))
    except (OSError, ValueError, KeyError, TypeError):
        pass
    from ._flow import derive_flow

    body, key = _generate(derive_flow(closure))
    path = directory / f"system-{key}.py"
    _atomic_write(path, f"# checksum: {_body_checksum(body)}\n{body}")
    _atomic_write(index, json.dumps({"module": path.name, "closure": closure,
                                     "versions": _versions()}))
    module = _load_module(path)
    if module is None:
        raise RuntimeError(f"generated module {path} failed to load")
    return _remember(memo_key, index, _system_from_module(closure, module, path))


def _remember(memo_key: tuple[str, str], index: Path, system: CompiledSystem) -> CompiledSystem:
    _LOADED[memo_key] = (_stat(index), _stat(system.path), system)
    return system
