"""The numba twin of a compiled system: generated mechanically from the Python module.

The twin of ``system-<key>.py`` is ``native-<twin key>.py`` in the same cache
directory.  It is the native integrator's source (``_bdf.py``) followed by the
system's functions, rewritten by an AST transformation so that numba can
compile them: the state is read by index, the parameters arrive as one array,
and the results are written into an output array instead of returned as a
list.  The expressions themselves are not touched, so both backends evaluate
the same arithmetic.  Every function is ``njit(cache=True)``: numba keeps its
machine code beside the twin, so a warm start compiles nothing.

The twin key hashes the system module, the integrator source, the kernels
module's source, the numba version and the model's native stop rule, so a
change to any of them makes a new twin.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import importlib.util
import inspect
import sys
from pathlib import Path
from types import ModuleType

from .._compile import CompiledSystem, atomic_write

__all__ = ["load_twin", "twin_source"]

#: Bump when the twin's shape changes.
TWIN_VERSION = "3"
_TEMPLATE = Path(__file__).with_name("_bdf.py")
#: Generated functions, with the leading arguments they keep (``t`` for the flow).
_FUNCTIONS = {"rhs": ("t", "y"), "jac": ("t", "y"), "margins": ("y",), "state": ("y",),
              "observables": ("y",)}
_DECORATOR = "@njit(**_JIT)"
_INLINE_DECORATOR = "@njit(**_JIT)"


def _flat(value: ast.expr) -> list[ast.expr]:
    """The elements of ``[e0, ...]`` or, row by row, of ``[[e00, ...], ...]``."""
    rows = value.elts
    if rows and all(isinstance(r, ast.List) for r in rows):
        return [e for r in rows for e in r.elts]
    return list(rows)


def _scalar_function(node: ast.FunctionDef) -> tuple[str, list[str], int]:
    """``<name>_s``: the generated function on scalars, returning a flat tuple of floats.

    Scalars in and a tuple out cross no array between numba functions, so a call costs
    no reference counting (an array argument costs two atomic operations per call).
    Returns the source, the coordinates' local names, and the tuple's length."""
    kept = _FUNCTIONS[node.name]
    parameters = [a.arg for a in node.args.args[len(kept):]]
    unpack, *body, result = node.body
    assert isinstance(unpack, ast.Assign) and isinstance(result, ast.Return), node.name
    targets = unpack.targets[0]
    local = [n.id for n in (targets.elts if isinstance(targets, ast.Tuple) else [targets])]
    values = [ast.Call(ast.Name("float", ast.Load()), [e], []) for e in _flat(result.value)]
    node.name = f"{node.name}_s"
    node.args.args = [ast.arg(a) for a in (*kept[:-1], *local, *parameters)]
    node.body = [*body, ast.Return(ast.Tuple(values, ast.Load()))]
    node.decorator_list, node.returns = [], None
    source = ast.unparse(ast.fix_missing_locations(node))
    return f"{_DECORATOR}\n{source}", local, len(values)


def _wrapper(name: str, n_coordinates: int, n_args: int, n_values: int, width: int) -> str:
    """``name(*kept, args, out)``: unpacks the arrays into ``<name>_s`` and stores its tuple
    (row-major into an ``n x width`` matrix when ``width`` is set); inlined where called."""
    kept = _FUNCTIONS[name]
    scalars = [*kept[:-1], *(f"y[{i}]" for i in range(n_coordinates)),
               *(f"args[{i}]" for i in range(n_args))]
    stores = [f"    out[{k // width}, {k % width}] = r[{k}]" if width else f"    out[{k}] = r[{k}]"
              for k in range(n_values)]
    return "\n".join([_INLINE_DECORATOR, f"def {name}({', '.join((*kept, 'args', 'out'))}):",
                       f"    r = {name}_s({', '.join(scalars)})", *stores])


def _generated_functions(tree: ast.Module) -> tuple[list[str], list[str]]:
    """The twin's versions of the system's functions, and the parameters' names."""
    sources, parameters = [], []
    for node in tree.body:
        if not (isinstance(node, ast.FunctionDef) and node.name in _FUNCTIONS):
            continue
        name, n_kept = node.name, len(_FUNCTIONS[node.name])
        names = [a.arg for a in node.args.args[n_kept:]]
        source, coordinates, n_values = _scalar_function(node)
        width = len(coordinates) if name == "jac" else 0
        sources += [source, _wrapper(name, len(coordinates), len(names), n_values, width)]
        parameters = names  # every generated function takes the same parameters
    return sources, parameters


def _kernel_imports(tree: ast.Module) -> tuple[list[str], str]:
    """The twin's kernel bindings, and the kernels modules' sources (for the key)."""
    lines, sources = [], []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [a.name for a in node.names]
            lines.append(f"{', '.join(names)}, = jit_kernels({node.module!r}, {names!r})")
            sources.append(inspect.getsource(importlib.import_module(node.module)))
    return lines, "".join(sources)


def _settled_source(system: CompiledSystem, rule, parameters: list[str]) -> str:
    """The stop rule: ``settled_s`` on scalars (its expression in ``t``, the coordinates,
    the observables and its constants), ``settled_into(t, y, args, c, values)`` that
    unpacks the arrays into it (inlined where called), and the entry ``settled``."""
    if rule is None:  # never settled natively: the driver applies the model's rule itself
        body = ["@njit(**_JIT)", "def settled_into(t, y, args, c, values):", "    return 1.0"]
    else:
        coordinates = list(system.coordinate_names)
        clash = set(coordinates) & set(parameters) | set(rule.constants) & {
            *coordinates, *parameters, *system.observable_names, "t"}
        assert not clash, f"stop-rule names clash: {sorted(clash)}"
        names = ["t", *coordinates, *parameters, *rule.constants]
        body = [_DECORATOR, f"def settled_s({', '.join(names)}):"]
        if rule.names() & set(system.observable_names):
            body.append(f"    o = observables_s({', '.join([*coordinates, *parameters])})")
            body += [f"    {name} = o[{i}]" for i, name in enumerate(system.observable_names)]
        body += [f"    return float({rule.expression})", "", "",
                 "@njit(**_JIT)", "def settled_into(t, y, args, c, values):",
                 "    return settled_s(" + ", ".join(
                     ["t", *(f"y[{i}]" for i in range(len(coordinates))),
                      *(f"args[{i}]" for i in range(len(parameters))),
                      *(f"c[{i}]" for i in range(len(rule.constants)))]) + ")"]
    return "\n".join([*body, "", "", _DECORATOR, "def settled(t, y, args, c):",
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
    functions, parameters = _generated_functions(tree)
    n_margins = len(system.domain_labels)
    n_series = max(len(system.state_names), len(system.observable_names) + n_margins, 1)
    generated = "\n\n\n".join(functions)
    settled = _settled_source(system, rule, parameters)
    template = _TEMPLATE.read_text(encoding="utf-8")
    material = "|".join([text, template, kernel_source, numba.__version__, TWIN_VERSION,
                         settled])
    key = hashlib.sha256(material.encode()).hexdigest()[:24]
    body = "\n".join([
        template,
        f"\n# ---- generated from {system.path.name} for model {system.model!r}, variant "
        f"{system.variant!r}; twin key {key}. Do not edit.",
        "from reduced_odes._native._kernels import jit_kernels  # noqa: E402",
        *kernels,
        f"N_MARGINS = {n_margins}",
        f"N_SERIES = {n_series}",
        f"HAS_SETTLED_RULE = {rule is not None}",
        "", generated, "", settled, ""])
    return body, key


_LOADED: dict[tuple, ModuleType] = {}


def _numba_cache_dir(path: Path) -> Path:
    """Where numba keeps the machine code of the functions defined in ``path``."""
    from numba.core import config
    from numba.core.caching import _CacheLocator

    if config.CACHE_DIR:  # NUMBA_CACHE_DIR
        return Path(config.CACHE_DIR) / _CacheLocator.get_suitable_cache_subpath(str(path))
    return path.parent / "__pycache__"


def _first_compile_notice(system: CompiledSystem, path: Path) -> None:
    """One line on stderr when numba has no cached machine code for this twin yet."""
    cache = _numba_cache_dir(path)
    if not any(cache.glob(f"{path.stem}.*.nbi")):
        print(f"reduced-odes: compiling the native integrator for model {system.model!r} "
              f"({system.variant}) with numba, once; cached in {cache}", file=sys.stderr)


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
        atomic_write(path, body)
    _first_compile_notice(system, path)
    name = f"_reduced_odes_native_{key}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # numba's cache resolves the functions' module by name
    spec.loader.exec_module(module)
    _LOADED[memo] = module
    return module
