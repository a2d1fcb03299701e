"""Compile a model's derivation into plain-Python numerical code, cached on disk.

The right-hand side, Jacobian, observables and domain margins are generated as
straight-line Python (``math`` only) after common-subexpression elimination.
If the derivation names a kernels module, the special functions of one
argument tuple are evaluated by one call of that module's cheapest fused
kernel that provides them all (which shares their exponentials).  The
generated module imports nothing else, so loading it never imports SymPy.
The model's parameters are runtime arguments, so a new parameter setting
never re-derives or recompiles anything.

Cache layout (``$REDUCED_ODES_CACHE`` or ``$XDG_CACHE_HOME/reduced-odes``):

* ``system-<key>.py``: generated module; ``key`` hashes the expressions,
  the package and SymPy versions and the code-generator version;
* ``index-<derivation>.json``: maps a derivation (model, variant, versions,
  source hash of the engine's symbolic modules and of the model's own files)
  to its module key, so a warm start loads the module without importing SymPy.

Files are written atomically (temporary file + ``os.replace``); a module
whose recorded checksum does not match its body is rebuilt.  Within a process
a loaded system is reused while its index and module files are unchanged.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import importlib.util
import inspect
import json
import os
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ._codegen import CODEGEN_VERSION, CompiledSystem, _system_from_module, _versions, generate
from ._derivation_scope import derivation_scope
from ._errors import DerivationError
from ._io import atomic_write, exclusive
from ._params import warn
from ._registry import get_model
from ._structured import StructuredSystem, _identity

__all__ = ["CompiledSystem", "cache_dir", "cached_symbolic", "is_cached", "load_system",
           "write_cache_files"]

#: The engine's symbolic modules: a change to any of them re-derives every model.
_ENGINE_SOURCES = ("_gaussian.py", "_positions.py", "_symbolic.py", "_contract.py",
                   "_stop_rules.py", "_claims.py", "_compile.py", "_codegen.py",
                   "_activations.py", "_expectation.py", "_factors.py", "_quadrature.py",
                   "_kernel_functions.py")
_PACKAGE_DIR = Path(__file__).resolve().parent


def cache_dir() -> Path:
    """The on-disk cache directory (created on demand).

    ``$REDUCED_ODES_CACHE``, else ``$XDG_CACHE_HOME/reduced-odes``, else
    ``~/.cache/reduced-odes`` (a variable set to the empty string counts as unset).  If that
    cannot be created or written (a read-only home, a full disk, a path that is a file), or
    a later write into it fails, a temporary directory private to this process is used
    instead, with one warning line: the results are the same, only the next run derives
    again.

    Examples
    --------
    >>> cache_dir().is_dir()
    True
    """
    return _usable_cache(_cache_root())


def _cache_root() -> str:
    root = os.environ.get("REDUCED_ODES_CACHE") or None  # empty: unset, not the working dir
    if root is None:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(base, "reduced-odes")
    return root


#: Cache directories a write was tried in: those that took it, and, for those that failed
#: (a full disk), the temporary cache this process uses instead.
_PROBED: set[str] = set()
_FALLBACKS: dict[str, Path] = {}


def _usable_cache(root: str | Path) -> Path:
    """``root`` if a file can be written there, else a per-process temporary cache."""
    path = Path(root)
    if str(path) in _FALLBACKS:
        return _FALLBACKS[str(path)]
    if str(path) not in _PROBED:
        try:
            path.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryFile(dir=path) as probe:  # a real write: a full disk fails
                probe.write(b"\0" * 4096)
                probe.flush()
                os.fsync(probe.fileno())
        except OSError as exc:
            return _fall_back(path, exc)
        _PROBED.add(str(path))
    return path


def _fall_back(directory: Path, exc: OSError) -> Path:
    """This process's temporary cache, used from now on instead of ``directory``, which
    could not be written (one warning line, naming both and why)."""
    import atexit
    import shutil

    fallback = Path(tempfile.mkdtemp(prefix="reduced-odes-cache-"))
    atexit.register(shutil.rmtree, fallback, ignore_errors=True)
    _FALLBACKS[str(directory)] = fallback
    _PROBED.add(str(fallback))
    warn(f"cache directory {directory} is not usable ({exc.strerror or exc}); using the "
         f"temporary cache {fallback} for this process; set REDUCED_ODES_CACHE to a "
         f"writable directory to keep derivations between runs")
    return fallback


def write_cache_files(directory: Path, files: Mapping[str, str]) -> Path:
    """Write ``files`` (name -> text) into the cache ``directory``, each atomically; the
    directory that holds them all.

    If a write fails there (a full disk), every file goes to this process's temporary cache
    instead (:func:`cache_dir` gives it from now on), with one warning; an error there too
    is raised, naming the file.

    Examples
    --------
    >>> import tempfile
    >>> directory = Path(tempfile.mkdtemp())
    >>> write_cache_files(directory, {"a.json": "{}"}) == directory
    True
    """
    directory = _usable_cache(directory)
    try:
        for name, text in files.items():
            atomic_write(directory / name, text)
        return directory
    except OSError as exc:
        if directory in _FALLBACKS.values():
            raise
        fallback = _fall_back(directory, exc)
    for name, text in files.items():
        atomic_write(fallback / name, text)
    return fallback


def model_sources(model) -> tuple[Path, ...]:
    """The files whose bytes key a model's derivation (a model or its class): its package,
    or its lone file."""
    source = Path(inspect.getfile(model if isinstance(model, type) else type(model))).resolve()
    if (source.parent / "__init__.py").exists() and source.parent != _PACKAGE_DIR:
        return tuple(sorted(source.parent.rglob("*.py")))
    return (source,)


@functools.cache
def _key_files(model_class: type) -> tuple[str, ...]:
    # Listed once per process (a directory walk costs more than a native trajectory); the
    # files' bytes are still re-checked on every call through their stat stamps.
    return tuple(str(p) for p in (*(_PACKAGE_DIR / name for name in _ENGINE_SOURCES),
                                  *model_sources(model_class)))


#: Seconds for which a model's source stamps, and a loaded system's cache files, are
#: trusted: an edit or a replaced file is noticed within this time, and a loop of quick
#: (native) solves does not stat every file each time.
SOURCE_CHECK_SECONDS = 1.0
_STAMPS: dict[type, tuple[float, tuple]] = {}


def _source_stamps(model_class: type) -> tuple:
    now = time.monotonic()
    checked = _STAMPS.get(model_class)
    if checked is None or now - checked[0] > SOURCE_CHECK_SECONDS:
        checked = (now, tuple((path, *_stat(path)) for path in _key_files(model_class)))
        _STAMPS[model_class] = checked
    return checked[1]


def derivation_key(model, variant: str, extra: str = "") -> str:
    """Hash of what a derivation depends on: model, variant, versions, source bytes."""
    return _derivation_key_of(f"{model.name}|{variant}|{extra}", _versions(), CODEGEN_VERSION,
                              _source_stamps(type(model)))


@functools.cache
def _derivation_key_of(name: str, versions: str, codegen: str, stamps: tuple) -> str:
    # ``stamps`` (path, file stat) only keys this in-process memo: the hash covers the bytes.
    digest = hashlib.sha256(f"{name}|{versions}|{codegen}".encode())
    for path, *_ in stamps:
        digest.update(Path(path).read_bytes())
    return digest.hexdigest()[:24]


def _stat(path: Path) -> tuple[int, ...]:
    """``(inode, mtime_ns, ctime_ns, size)`` of ``path``, or ``()`` if it does not exist."""
    try:
        st = os.stat(path)
    except OSError:
        return ()
    return (st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size)


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



#: In-process memo: (model, variant, index path) -> (index stamp, module stamp, system).
_LOADED: dict[tuple[str, str, str], tuple[tuple, tuple, CompiledSystem]] = {}
#: Structured systems built in this process (they have no files to check).
_STRUCTURED: dict[tuple[str, str, str], CompiledSystem] = {}
#: Systems returned in the last ``SOURCE_CHECK_SECONDS``, by the call's arguments.
_RECENT: dict[tuple, tuple[float, CompiledSystem]] = {}


def _derive(model, variant: str, structure: Mapping[str, Any]):
    """``model.derive(variant, **structure)``; any failure becomes a DerivationError naming
    the step."""
    try:
        with derivation_scope():  # also for a derive forwarded by ``hooks``, or no Model's
            return model.derive(variant, **structure)
    except DerivationError:
        raise
    except Exception as exc:  # a user's declaration: report which step, never a traceback
        raise DerivationError(f"{model.name}.derive({_system_name(variant, structure)!r})",
                              f"{type(exc).__name__}: {exc}") from exc


def _system_name(variant: str, structure: Mapping[str, Any]) -> str:
    """The variant, with the structural parameters that select its system: ``erf[K=2,M=2]``."""
    if not structure:
        return variant
    return f"{variant}[{','.join(f'{k}={v!r}' for k, v in sorted(structure.items()))}]"


def load_system(model, variant: str | None = None, *, structure: Mapping[str, Any] | None = None,
                directory: Path | None = None) -> CompiledSystem:
    """The compiled flow of ``model``'s ``variant``: from the cache, or derived and compiled now.

    Parameters
    ----------
    model : Model or str
        A model, or its registered name / ``path.py:OBJECT`` reference.
    variant : str, optional
        One of ``model.variants`` (default: the first).
    structure : mapping, optional
        The values of the model's ``structural`` parameters (default: theirs in the
        default parameters), which select the system.
    directory : pathlib.Path, optional
        Cache directory (default :func:`cache_dir`).

    Examples
    --------
    >>> system = load_system("induction_head", "linear")
    >>> rates = system.rhs(0.0, [1e-4, 0.0, 1e-4, -18.4], 0.5, 0.3, 200)
    >>> len(rates), system.coordinate_names
    (4, ('w_v1', 'p', 'w_v2', 'log_w_kq'))
    """
    model = get_model(model)
    variant = model.resolve_variant(variant)
    if structure is None:
        structure = model.structure(model.make_params({})) if model.structural else {}
    name = _system_name(variant, structure)
    recent_key = (type(model), model.name, name, directory and str(directory), _cache_root())
    recent = _RECENT.get(recent_key)
    if recent is not None and time.monotonic() - recent[0] <= SOURCE_CHECK_SECONDS:
        return recent[1]
    system = _load_system(model, variant, structure, directory)
    _RECENT[recent_key] = (time.monotonic(), system)
    return system


def is_cached(model, variant: str, structure: Mapping[str, Any] | None = None) -> bool:
    """Whether ``model``'s system for ``variant`` (and ``structure``) is in the cache, so
    that :func:`load_system` reads it instead of deriving it.

    Examples
    --------
    >>> _ = load_system("deep_linear")
    >>> is_cached("deep_linear", "default")
    True
    """
    model = get_model(model)
    if structure is None:
        structure = model.structure(model.make_params({})) if model.structural else {}
    name = _system_name(model.resolve_variant(variant), structure)
    index = cache_dir() / f"index-{derivation_key(model, name)}.json"
    return _cached(model.name, name, index) is not None


def _load_system(model, variant: str, structure: Mapping[str, Any],
                 directory: Path | None) -> CompiledSystem:
    """:func:`load_system` once its arguments are resolved, checking the cache's files.

    A miss is derived under a lock beside the index, so that processes sharing the cache
    (a job's workers, a test session's) derive each system once: the others wait, then
    read it."""
    directory = _usable_cache(directory) if directory is not None else cache_dir()
    name = _system_name(variant, structure)
    index = directory / f"index-{derivation_key(model, name)}.json"
    if (model.name, name, str(index)) in _STRUCTURED:
        return _STRUCTURED[(model.name, name, str(index))]
    system = _cached(model.name, name, index)
    if system is not None:
        return system
    with exclusive(index.with_suffix(".lock")):
        system = _cached(model.name, name, index)  # derived meanwhile by another process
        if system is not None:
            return system
        derived = _derive(model, variant, structure)
        if isinstance(derived, StructuredSystem):  # numbers, not expressions: no module
            _STRUCTURED[(model.name, name, str(index))] = as_compiled(model.name, name, derived)
            return _STRUCTURED[(model.name, name, str(index))]
        body, key = generate(model.name, name, derived)
        module_name = f"system-{key}.py"
        directory = write_cache_files(directory, {
            module_name: f"# checksum: {_body_checksum(body)}\n{body}",
            index.name: json.dumps({"module": module_name, "model": model.name,
                                    "variant": name, "versions": _versions()})})
    path, index = directory / module_name, directory / index.name
    module = _load_module(path)
    if module is None:
        raise RuntimeError(f"generated module {path} failed to load")
    return _remember((model.name, name, str(index)), index, _system_from_module(module, path))


def _cached(model_name: str, name: str, index: Path) -> CompiledSystem | None:
    """The system ``index`` names, if its files are in the cache and intact."""
    memo_key = (model_name, name, str(index))
    if memo_key in _LOADED:
        index_stamp, module_stamp, system = _LOADED[memo_key]
        if _stat(index) == index_stamp and _stat(system.path) == module_stamp:
            return system
    try:
        path = index.parent / json.loads(index.read_text())["module"]
        module = _load_module(path)
        if module is not None:
            return _remember(memo_key, index, _system_from_module(module, path))
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


def as_compiled(model_name: str, variant: str, system: StructuredSystem) -> CompiledSystem:
    """``system`` with the interface the steppers use: integrated in its state variables.

    Examples
    --------
    >>> flow = StructuredSystem(("y",), ("loss",), (), lambda t, y, a: [-a * y[0]],
    ...                         lambda t, y, a: [[-a]], lambda y, a: [y[0] ** 2 / 2],
    ...                         lambda y, a: [], lambda y, a: [y[0] ** 2 / 2], "decay")
    >>> compiled = as_compiled("demo", "default", flow)
    >>> compiled.coordinate_names, compiled.state([3.0], 0.5), compiled.path is None
    (('y',), [3.0], True)
    """
    names = tuple(system.state_names)
    return CompiledSystem(model_name, variant, system.rhs, system.jac, system.observables,
                          system.margins, _identity, _identity, names, names,
                          tuple(system.observable_names), tuple(system.domain_labels),
                          system.key, None, ("any real value",) * len(names), system.loss,
                          native=system.native)


def _remember(memo_key: tuple, index: Path, system: CompiledSystem) -> CompiledSystem:
    _LOADED[memo_key] = (_stat(index), _stat(system.path), system)
    return system


def cached_symbolic(model, variant: str, name: str, derive: Callable[[], dict]) -> dict:
    """``derive()`` (a dict of SymPy objects), memoised on disk beside the compiled systems.

    The key covers what :func:`load_system`'s does (model sources, engine,
    versions), so an edit to the model re-derives.  Values are stored with
    ``srepr`` and read back with ``sympify`` (matrices and tuples come back as
    their immutable SymPy forms).

    Examples
    --------
    >>> import sympy as sp
    >>> cached_symbolic("deep_linear", "default", "doc-example", lambda: {"x": sp.Integer(2)})
    {'x': 2}
    """
    import sympy as sp

    model = get_model(model)
    path = cache_dir() / f"{name}-{derivation_key(model, variant, extra=name)}.json"
    stored = _stored_symbolic(path)
    if stored is not None:
        return stored
    with exclusive(path.with_suffix(".lock")):
        stored = _stored_symbolic(path)  # derived meanwhile by another process
        if stored is not None:
            return stored
        values = derive()
        write_cache_files(path.parent, {path.name: json.dumps({key: sp.srepr(v)
                                                               for key, v in values.items()})})
    return values


def _stored_symbolic(path: Path) -> dict | None:
    """The SymPy objects stored at ``path`` by :func:`cached_symbolic`, if readable."""
    import sympy as sp
    from sympy.core.symbol import Str

    from ._orthant import OrthantKernel
    from ._quadrature import GaussianKernel

    # Numerical kernels read back as themselves (else as undefined functions, whose
    # derivatives nothing can evaluate).
    names = {"GaussianKernel": GaussianKernel, "OrthantKernel": OrthantKernel, "Str": Str}
    try:
        stored = json.loads(path.read_text())
        return {key: sp.sympify(text, locals=names) for key, text in stored.items()}
    except (OSError, ValueError, TypeError, AttributeError, sp.SympifyError):
        return None
