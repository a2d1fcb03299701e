"""The numba twin of a compiled system: generated mechanically from the Python module.

The twin of ``system-<key>.py`` is ``native-<twin key>.py`` in the same cache
directory.  It holds the system's functions, rewritten by an AST transformation
so that numba can compile them: the state is read by index, the parameters
arrive as one array, and the results are written into an output array instead
of returned as a list.  The expressions themselves are not touched, so both
backends evaluate the same arithmetic.  Each is wrapped as a C callback, and the
twin hands their addresses, as its *system tuple*, to the native integrator
(:mod:`reduced_odes._native._bdf`), which is compiled once for every system: a
new system compiles only its own functions (and a process that makes many runs of one
twin, the integrator for its legs' size:
:func:`~reduced_odes._native._engines.engine_for`).  Everything is ``cache=True``: numba
keeps its machine code beside the twin (and beside the integrator), so a warm
start compiles nothing.

The twin key hashes the system module, the integrator source, the kernels
module's source, the numba version and the model's native stop rule, so a
change to any of them makes a new twin.  On the integrator's first compile, with
a core idle, another process compiles its scans meanwhile
(:mod:`reduced_odes._native._precompile`), and the run loads them from the cache.
Processes sharing a cache compile a twin, and the integrator, once between them
(:func:`compiled_once`).
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import importlib
import inspect
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

from .._compile import CompiledSystem, write_cache_files
from .._io import exclusive
from . import _engines
from ._engines import ENGINE, cached, engine_for, import_twin

__all__ = ["compiled_once", "engine_once", "import_twin", "load_twin", "twin_source"]

#: Bump when the twin's shape changes.
TWIN_VERSION = "11"
#: Generated functions, with the leading arguments they keep (``t`` for the flow).
_FUNCTIONS = {"rhs": ("t", "y"), "jac": ("t", "y"), "margins": ("y",), "state": ("y",),
              "observables": ("y",)}
_DECORATOR = "@njit(**_JIT)"


def _indexed(name: str, *index: int) -> ast.Subscript:
    key = ast.Constant(index[0]) if len(index) == 1 else ast.Tuple(
        [ast.Constant(i) for i in index], ast.Load())
    return ast.Subscript(ast.Name(name, ast.Load()), key, ast.Store())


def _unpacked(targets: ast.expr, source: str) -> list[ast.stmt]:
    """``a, b = <source>`` as ``a = source[0]; b = source[1]``."""
    names = targets.elts if isinstance(targets, ast.Tuple) else [targets]
    return [ast.Assign([ast.Name(n.id, ast.Store())], ast.Subscript(
        ast.Name(source, ast.Load()), ast.Constant(i), ast.Load())) for i, n in enumerate(names)]


def _stores(value: ast.expr) -> list[ast.stmt]:
    """``return [e0, ...]`` (or ``[[e00, ...], ...]``) as ``out[i] = ei`` (``out[i, j]``)."""
    rows = value.elts
    if rows and all(isinstance(r, ast.List) for r in rows):
        return [ast.Assign([_indexed("out", i, j)], e)
                for i, r in enumerate(rows) for j, e in enumerate(r.elts)]
    return [ast.Assign([_indexed("out", i)], e) for i, e in enumerate(rows)]


def _kept(name: str) -> tuple[str, ...] | None:
    """The leading arguments a generated function keeps; None if the twin has no use for it."""
    if name.startswith(("rhs_block", "jac_block")):
        return _FUNCTIONS["rhs"]
    return _FUNCTIONS.get(name)


def _native_function(node: ast.FunctionDef) -> ast.FunctionDef:
    kept = _kept(node.name)
    parameters = [a.arg for a in node.args.args[len(kept):]]
    unpack, *body, result = node.body
    assert isinstance(unpack, ast.Assign) and isinstance(result, ast.Return), node.name
    statements = _unpacked(unpack.targets[0], kept[-1])
    if parameters:
        statements += _unpacked(ast.Tuple([ast.Name(p) for p in parameters], ast.Store()),
                                "args")
    node.args.args = [ast.arg(a) for a in (*kept, "args", "out")]
    node.body = statements + body + _stores(result.value)
    node.decorator_list = []
    return node


def _numerical_kernels(tree: ast.Module) -> str:
    """The loop forms of the module's numerical Gaussian kernels (``_native_gk_*``), compiled
    under the names the generated functions call (their NumPy forms' names)."""
    kernels = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("_native_gk_"):
            node.name = node.name[len("_native"):]
            kernels.append(f"{_DECORATOR}\n{ast.unparse(node)}")
    return "\n\n".join(kernels)


def _kernel_imports(tree: ast.Module) -> tuple[list[str], str]:
    """The twin's kernel bindings, and the kernels modules' sources (for the key)."""
    lines, sources = [], []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [a.name for a in node.names]
            lines.append(f"{', '.join(names)}, = jit_kernels({node.module!r}, {names!r})")
            sources.append(inspect.getsource(importlib.import_module(node.module)))
    return lines, "".join(sources)


def _block_dispatch(count: int) -> str:
    """``block_rhs`` and ``block_jac(t, y, args, out, block)``: the flow of block ``block``,
    or of the whole system if it has no blocks, so that one compiled integrator serves
    every block (and a system with blocks compiles no whole-system flow).  Inlined where
    they are called, so that the call is to the block's own flow."""
    parts = []
    for kind in ("rhs", "jac"):
        lines = ["@njit(**_INLINE)", f"def block_{kind}(t, y, args, out, block):"]
        for b in range(count - 1):
            lines += [f"    if block == {b}:", f"        {kind}_block{b}(t, y, args, out)",
                      "        return"]
        lines.append(f"    {kind}_block{count - 1}(t, y, args, out)" if count else
                     f"    {kind}(t, y, args, out)")
        parts.append("\n".join(lines))
    return "\n\n\n".join(parts)


def _leg_size(system: CompiledSystem) -> int:
    """The coordinates each leg of a run steps, if the same for every leg; else 0."""
    sizes = {len(block) for block in system.blocks} or {system.size}
    return sizes.pop() if len(sizes) == 1 else 0


def _guards(expression: str, observables: set[str]) -> list[str]:
    """Early returns for a rule ``max(a, b, ...)``: each argument that reads no observable,
    if positive, decides that the rule does not hold, before the observables are evaluated.

    Every caller of the native rule reads only its sign (``<= 0``: it holds), so the
    positive value returned instead of the whole ``max`` changes no result."""
    tree = ast.parse(expression, mode="eval").body
    if not (isinstance(tree, ast.Call) and isinstance(tree.func, ast.Name)
            and tree.func.id == "max" and len(tree.args) > 1):
        return []
    lines = []
    for k, arg in enumerate(tree.args):
        if not {n.id for n in ast.walk(arg) if isinstance(n, ast.Name)} & observables:
            lines += [f"    _guard{k} = float({ast.unparse(arg)})", f"    if _guard{k} > 0:",
                      f"        return _guard{k}"]
    return lines


def _settled_source(system: CompiledSystem, rule) -> str:
    """The stop rule as ``settled_into(t, y, args, c, values)``: its expression in ``t``, the
    coordinates, the observables (evaluated into ``values`` only if it names one) and its
    constants; and ``settled(t, y, args, c)``, the same with its own buffer."""
    lines = [f"{_DECORATOR}", "def settled_into(t, y, args, c, values):"]
    if rule is None:  # never settled natively: the driver applies the model's rule itself
        lines.append("    return 1.0")
    else:
        names = [*system.coordinate_names, *system.observable_names, "t"]
        clash = set(rule.constants) & set(names)
        assert not clash, f"stop-rule constants named like series: {sorted(clash)}"
        lines += [f"    {name} = y[{i}]" for i, name in enumerate(system.coordinate_names)]
        lines += [f"    {name} = c[{i}]" for i, name in enumerate(rule.constants)]
        if rule.names() & set(system.observable_names):
            lines += _guards(rule.expression, set(system.observable_names))
            lines.append("    observables(y, args, values)")
            lines += [f"    {name} = values[{i}]"
                      for i, name in enumerate(system.observable_names)]
        lines.append(f"    return float({rule.expression})")
    return "\n".join([*lines, "", "", "@njit(**_ALLOCATING)", "def settled(t, y, args, c):",
                      "    return settled_into(t, y, args, c, np.empty(max(N_SERIES, 1)))"])


def twin_source(system: CompiledSystem, rule=None) -> tuple[str, str]:
    """The twin module's source and key, for ``system`` and the native stop ``rule``.

    Examples
    --------
    >>> from reduced_odes._compile import load_system
    >>> source, key = twin_source(load_system("deep_linear"))  # doctest: +SKIP
    >>> "def rhs(t, y, args, out):" in source, len(key)  # doctest: +SKIP
    (True, 24)
    """
    import numba

    text = system.path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    kernels, kernel_source = _kernel_imports(tree)
    rhs = next(node for node in tree.body if isinstance(node, ast.FunctionDef)
               and node.name == "rhs")
    n_args = len(rhs.args.args) - len(_FUNCTIONS["rhs"])
    functions = [_native_function(node) for node in tree.body
                 if isinstance(node, ast.FunctionDef) and _kept(node.name)]
    n_margins = len(system.domain_labels)
    n_series = max(len(system.state_names), len(system.observable_names) + n_margins, 1)
    generated = "\n\n".join([_numerical_kernels(tree), *(
        f"{_DECORATOR}\n{ast.unparse(ast.fix_missing_locations(f))}" for f in functions)])
    settled = _settled_source(system, rule)
    engine = ENGINE.read_text(encoding="utf-8")
    material = "|".join([text, engine, kernel_source, numba.__version__, TWIN_VERSION,
                         settled])
    key = hashlib.sha256(material.encode()).hexdigest()[:24]
    body = "\n".join([
        f'"""The native twin of {system.path.name}, model {system.model!r}, variant '
        f'{system.variant!r}; twin key {key}.  Generated: do not edit."""',
        _HEADER, *kernels,
        f"N_COORDINATES = {system.size}",
        f"N_ARGS = {n_args}",
        f"LEG_SIZE = {_leg_size(system)}",
        f"N_MARGINS = {n_margins}",
        f"N_SERIES = {n_series}",
        f"HAS_SETTLED_RULE = {rule is not None}",
        f"N_CONSTANTS = {len(rule.constants) if rule else 0}",
        "", generated, "", _block_dispatch(len(system.blocks)), "", settled, "", _CALLBACKS])
    return body, key


_HEADER = """import math
from pathlib import Path

import numpy as np
from numba import carray, cfunc, njit

from reduced_odes._native._bdf import *  # noqa: F403  the integrator's constants, signatures
from reduced_odes._native._bdf import _ALLOCATING, _INLINE, _JIT
from reduced_odes._native._engines import engine_for, load_engine
from reduced_odes._native._kernels import jit_kernels
"""

#: The C callbacks the integrator calls (:data:`reduced_odes._native._bdf.SYSTEM_FIELDS`),
#: the system tuple and the entry points with it bound.
_CALLBACKS = """_CALLBACK = dict(cache=True, error_model="numpy", nogil=True)


@cfunc(RATES_SIGNATURE, **_CALLBACK)
def c_rates(t, y, n, args, n_args, out, n_out, block):
    block_rhs(t, carray(y, n), carray(args, n_args), carray(out, n), block)


@cfunc(RATES_SIGNATURE, **_CALLBACK)
def c_jacobian(t, y, n, args, n_args, out, n_out, block):
    block_jac(t, carray(y, n), carray(args, n_args), carray(out, (n, n)), block)


@cfunc(SERIES_SIGNATURE, **_CALLBACK)
def c_margins(y, n, args, n_args, out, n_out):
    margins(carray(y, n), carray(args, n_args), carray(out, n_out))


@cfunc(SERIES_SIGNATURE, **_CALLBACK)
def c_state(y, n, args, n_args, out, n_out):
    state(carray(y, n), carray(args, n_args), carray(out, n_out))


@cfunc(SERIES_SIGNATURE, **_CALLBACK)
def c_observables(y, n, args, n_args, out, n_out):
    observables(carray(y, n), carray(args, n_args), carray(out, n_out))


@cfunc(SETTLED_SIGNATURE, **_CALLBACK)
def c_settled(t, y, n, args, n_args, c, n_c, values, n_values):
    return settled_into(t, carray(y, n), carray(args, n_args), carray(c, n_c),
                        carray(values, n_values))


SYSTEM = (c_rates.address, c_jacobian.address, c_margins.address, c_state.address,
          c_observables.address, c_settled.address, N_COORDINATES, N_MARGINS,
          max(N_SERIES, N_MARGINS, 1))


def bind(engine):
    # Run on the integrator ``engine``: its entry points, with this system bound.
    global _engine, advance, crossings, first_events, settle_time, series_into, outputs
    global merge, dense_into
    _engine = engine
    advance, crossings, first_events, settle_time, series_into, outputs = engine.bound(SYSTEM)
    merge, dense_into = engine.merge, engine.dense_into


#: The integrator for this system's legs (``engine_for``: the one for their size if numba
#: has it cached, else the one for any size, compiled once for every system).
bind(load_engine(engine_for(LEG_SIZE, Path(__file__).parent)))


def scratch_size(n):
    return _engine.scratch_size(n, SYSTEM[S_N_SERIES])
"""

_LOADED: dict[tuple, ModuleType] = {}
#: The twin's callback compiled last when it is imported (the template's last ``cfunc``).
LAST_CALLBACK = "c_settled"


def _first_compile_notice(system: CompiledSystem, path: Path, engine: Path) -> None:
    """If numba has no cached machine code for this twin (or its integrator, ``engine``)
    yet, one line says so on stderr when it is a terminal (someone is waiting for the
    compile).  Read by a program, stderr carries only warnings and errors: a failure's
    exit-2 line stays the one line, even when the retry on this backend compiles first."""
    if _interactive() and not (cached(path, LAST_CALLBACK) and cached(engine, "advance")):
        print(f"reduced-odes: compiling model {system.model!r} ({system.variant}) for the "
              f"native integrator with numba, once; cached in {_engines._numba_cache_dir(path)}",
              file=sys.stderr)


#: Modules whose entry point this process has found compiled (cached, or compiled here).
_READY: set[str] = set()
#: Whether this thread holds a compile lock: a run never waits for a second one.
_HOLDING = threading.local()


@contextlib.contextmanager
def compiled_once(source: ModuleType | Path, entry: str = "advance",
                  lock: Path | None = None) -> Iterator[bool]:
    """Run the block (an import of a twin, a run on the integrator, or the first calls of a
    generated module) holding the compile lock of ``source`` (a module or its file) while
    numba has no machine code cached for its ``entry`` (the integrator's stepping,
    ``advance``).  The lock is the file ``lock``, by default beside ``source``.

    Processes sharing a cache (a test session's workers, a sweep's pool) would otherwise
    each compile a cold module, the same tens of seconds of CPU: the second now waits for
    the first one's compile, then loads its machine code.  Once ``entry`` is cached (or
    compiled by this process) no lock is taken.  A thread holding one lock never waits for
    another, so no two processes can wait for each other.  The block is given whether it
    holds the lock (``entry`` was not found compiled).
    """
    path = source if isinstance(source, Path) else Path(source.__file__)
    if path.stem in _READY or getattr(_HOLDING, "module", None) is not None:
        yield False
        return
    if cached(path, entry):
        _READY.add(path.stem)
        yield False
        return
    _HOLDING.module = path.stem
    try:
        with exclusive(lock or path.with_name(f"{path.stem}.compile.lock")):
            yield True
        _READY.add(path.stem)
    finally:
        _HOLDING.module = None


def _interactive() -> bool:
    return sys.stderr.isatty()


def engine_once(twin: ModuleType):
    """:func:`compiled_once` for a run of ``twin``'s integrator, with the lock in the twin's
    compile cache (the package's directory may not be writable)."""
    engine = Path(twin._engine.__file__)
    return compiled_once(engine, "advance",
                         Path(twin.__file__).with_name(f"{engine.stem}.compile.lock"))


#: Processes compiling the integrator's scans, kept until seen finished (``poll`` reaps them).
_ASIDE: list = []


def _idle_core() -> bool:
    """Whether a core is idle beside this process: a second core, and a load average (over
    the last minute) below the cores less one.  On a busy machine (a test session's
    workers, a sweep's pool) a process aside would only take CPU from the others, and
    compile twice what the run reaches before it."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
        os.cpu_count() or 1
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    return cores >= 2 and load <= cores - 1


def _compile_scans_aside(path: Path, name: str) -> None:
    """On the integrator's first compile, with a core idle: compile its scans (about a
    third of the compile) in another process, through the twin at ``path``, while this one
    compiles the stepping; both cache what they compile, and this one loads the scans from
    that cache if they are ready when the run reaches them, else compiles them itself.  A
    failure there costs nothing here."""
    if not _idle_core():
        return
    package_root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [package_root, os.environ.get("PYTHONPATH")])))
    _ASIDE[:] = [process for process in _ASIDE if process.poll() is None]
    try:
        _ASIDE.append(subprocess.Popen(
            [sys.executable, "-m", "reduced_odes._native._precompile", str(path), name,
             str(os.getpid())],
            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL))
    except OSError:  # e.g. no interpreter to start: this process compiles them all
        pass


def load_twin(system: CompiledSystem, rule=None) -> ModuleType:
    """The twin module of ``system`` (written beside it on first use), imported.

    Within a process the twin is reused for the same system module and rule.

    Examples
    --------
    >>> from reduced_odes._compile import load_system
    >>> twin = load_twin(load_system("deep_linear"))  # doctest: +SKIP
    >>> twin.N_MARGINS  # doctest: +SKIP
    0
    """
    memo = (system.key, str(system.path), None if rule is None else rule.expression,
            None if rule is None else tuple(rule.constants))
    if memo in _LOADED:
        return _LOADED[memo]
    body, key = twin_source(system, rule)
    path = system.path.parent / f"native-{key}.py"
    if not path.exists() or path.read_text(encoding="utf-8") != body:
        # Through the cache's writer: on a full disk the twin goes to the temporary cache.
        path = write_cache_files(path.parent, {path.name: body}) / path.name
    engine = engine_for(_leg_size(system), path.parent)  # found once, read twice here
    _first_compile_notice(system, path, engine)
    name = f"_reduced_odes_native_{key}"
    # Importing it compiles its callbacks, in the order defined: the lock is skipped only once
    # the last, ``c_settled``, is cached (a second process that saw ``c_rates`` cached while
    # the first still compiled the Jacobian would have compiled it again beside the first).
    with compiled_once(path, LAST_CALLBACK):
        module = import_twin(path, name)
    if not cached(engine, "outputs"):
        _compile_scans_aside(path, name)
    _LOADED[memo] = module
    return module
