"""The native integrators: one for legs of any size, compiled once for every system, and one
per leg size, for processes that make many runs.

The integrator (:mod:`reduced_odes._native._bdf`) calls a system's functions through their
addresses, so its machine code serves every system: a new system compiles only its own
functions (its twin's callbacks).  ``_bdf.py`` itself, ``LEG_SIZE = 0``, reads the legs'
size from its arrays.  The integrator for legs of size ``k`` is a copy of it with
``LEG_SIZE = k``, written into the compile cache as ``engine-<k>-<key>.py`` and compiled
(``cache=True``) beside it: a constant there lets LLVM unroll the loops over the
coordinates (1.2 to 1.5 times faster stepping, the same bits), at a compile of its own.
Which one a twin runs on is :func:`engine_for`'s choice.  The
key hashes the source and the numba version.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

from .._compile import write_cache_files

__all__ = ["ENGINE", "SPECIALISE_AFTER", "cached", "counted_run", "engine_for", "engine_path",
           "import_twin", "load_engine", "specialise"]

#: The integrator's source: legs of any size (``LEG_SIZE = 0``).
ENGINE = Path(__file__).with_name("_bdf.py")
_LEG_SIZE_LINE = re.compile(r"^LEG_SIZE = 0$", re.MULTILINE)
_LOADED: dict[Path, ModuleType] = {}


def engine_path(size: int, directory: Path) -> Path:
    """The integrator's source for legs of ``size`` coordinates (0: any size), written into
    the compile cache ``directory`` on first use.

    Examples
    --------
    >>> import tempfile
    >>> engine_path(0, Path(tempfile.mkdtemp())) == ENGINE
    True
    >>> engine_path(2, Path(tempfile.mkdtemp())).name.startswith("engine-2-")
    True
    """
    if size == 0:
        return ENGINE
    import numba

    source, count = _LEG_SIZE_LINE.subn(f"LEG_SIZE = {size}", ENGINE.read_text(encoding="utf-8"))
    assert count == 1, "the integrator's LEG_SIZE line"
    key = hashlib.sha256(f"{source}|{numba.__version__}".encode()).hexdigest()[:20]
    path = directory / f"engine-{size}-{key}.py"
    if not path.exists() or path.read_text(encoding="utf-8") != source:
        # Through the cache's writer: on a full disk it goes to the temporary cache.
        path = write_cache_files(directory, {path.name: source}) / path.name
    return path


def load_engine(path: Path) -> ModuleType:
    """The integrator at ``path`` (from :func:`engine_path`), imported once per process."""
    if path not in _LOADED:
        _LOADED[path] = (importlib.import_module("reduced_odes._native._bdf") if path == ENGINE
                         else import_twin(path, f"_reduced_odes_{path.stem.replace('-', '_')}"))
    return _LOADED[path]


def import_twin(path: Path, name: str) -> ModuleType:
    """The generated module at ``path`` (a twin, an integrator), imported as ``name`` (the
    name numba's cache knows)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # numba's cache resolves the functions' module by name
    spec.loader.exec_module(module)
    return module


def _numba_cache_dir(path: Path) -> Path:
    """Where numba keeps the machine code of the functions defined in ``path``."""
    from numba.core import config
    from numba.core.caching import _CacheLocator

    if config.CACHE_DIR:  # NUMBA_CACHE_DIR
        return Path(config.CACHE_DIR) / _CacheLocator.get_suitable_cache_subpath(str(path))
    return path.parent / "__pycache__"


def cached(path: Path, entry: str) -> bool:
    """Whether numba has machine code cached for the function ``entry`` of ``path``."""
    return any(_numba_cache_dir(path).glob(f"{path.stem}.{entry}-*.nbi"))


def engine_for(size: int, directory: Path) -> Path:
    """The integrator a twin whose legs step ``size`` coordinates runs on: the one compiled
    for that size (:func:`~reduced_odes._native._engines.engine_path`, its loops unrolled) if
    numba has its stepping cached, else the one for any size (``ENGINE``), which every
    system shares.  Both give the same bits (the same operations in the same order: a
    constant length only lets LLVM unroll the loops); the one for the size steps 1.2 to 1.5
    times faster, and costs a compile of its own (~15 s of CPU), paid where runs are many
    (:func:`counted_run`), not by every first run of a new size.

    Examples
    --------
    >>> import tempfile
    >>> from reduced_odes._native._engines import ENGINE
    >>> engine_for(2, Path(tempfile.mkdtemp())) == engine_for(0, Path(".")) == ENGINE
    True
    """
    if size:
        path = engine_path(size, directory)
        if cached(path, "advance"):
            return path
    return ENGINE


#: A process's native runs of one twin on the integrator for any size after which it binds the
#: twin to the integrator for its legs' size (:func:`specialise`): a sweep, a phase diagram
#: or a long grid pays that compile (~15 s of CPU, under the compile lock: once between
#: processes), and steps 1.2 to 1.5 times faster from then on; a few runs never do.
SPECIALISE_AFTER = 1000
_RUNS: dict[str, int] = {}


def counted_run(twin: ModuleType) -> None:
    """Count a native run of ``twin`` (before it starts); at :data:`SPECIALISE_AFTER` runs on
    the integrator for any size, :func:`specialise` it."""
    if not twin.LEG_SIZE or twin._engine.LEG_SIZE:  # mixed sizes, or bound already
        return
    _RUNS[twin.__name__] = runs = _RUNS.get(twin.__name__, 0) + 1
    if runs >= SPECIALISE_AFTER:
        specialise(twin)


def specialise(twin: ModuleType) -> None:
    """Bind ``twin`` to the integrator for its legs' size (compiled on its first call, under
    its compile lock, :func:`reduced_odes._native._twin.engine_once`; then cached, so that
    later processes start on it)."""
    if twin.LEG_SIZE:
        twin.bind(load_engine(engine_path(twin.LEG_SIZE, Path(twin.__file__).parent)))
