"""Shared test fixtures: an isolated compile cache per test session (tests and doctests), shared
by the session's workers, and a lasting one for the native tests; the Hypothesis profile; the
grouping of tests on the workers."""

import os
import shutil
from pathlib import Path

import pytest
from hypothesis import settings  # its pytest plugin has imported it already, without NumPy

# First, before any test module loads NumPy: the package pins OpenBLAS's kernel, so the tests
# see the bits the committed data were computed with (reduced_odes._blas).
import reduced_odes  # noqa: F401

#: Hypothesis everywhere (a test's own ``@settings`` override what it names): the same
#: examples on every run (derandomised, no example database), no clock (no deadline), and
#: a failure reported once, for the first bug found, instead of shrinking each of several.
settings.register_profile("suite", derandomize=True, database=None, deadline=None,
                          report_multiple_bugs=False, print_blob=False)
settings.load_profile("suite")


def session_cache(base: Path) -> Path:
    """The session's compile cache under ``base``, the session's base temporary directory.

    With pytest-xdist each worker has its own base directory inside the controller's
    (``.../pytest-N/popen-gw0``): the cache goes beside them, in the controller's, so that
    the workers derive each system once between them (the cache's writes are atomic and a
    derivation is done under a lock, ``reduced_odes._compile``).
    """
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    cache = shared / "compile-cache"
    cache.mkdir(exist_ok=True)
    return cache


@pytest.fixture(autouse=True, scope="session")
def _isolated_cache(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("REDUCED_ODES_CACHE", str(session_cache(tmp_path_factory.getbasetemp())))
    yield
    mp.undo()


def pytest_collection_modifyitems(config, items):
    """Keep a module's tests on one worker where they share a module-scoped fixture (under
    ``--dist loadgroup``): computed once, not once per worker."""
    for item in items:
        definitions = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
        if any(d and d[-1].scope == "module" for d in definitions.values()):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))


def _lasting_directory() -> Path:
    lasting = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return lasting / "reduced-odes-native-tests"


#: The generated native modules: the twins, and the integrators they run on (one per leg size).
_NATIVE = ("native-*.py", "engine-*.py")


def _twins(directory: Path) -> set[str]:
    return {path.name for pattern in _NATIVE for path in directory.glob(pattern)}


#: The twins the lasting cache held before this session: earlier sessions', not copied into
#: this session's cache (the lasting cache keeps every twin it ever compiled).
_LASTING_TWINS = _twins(_lasting_directory())


@pytest.fixture(scope="module")
def lasting_cache():
    """A compile cache that outlives the session, for the native tests: numba's machine code
    is kept beside the twins, and compiling them afresh each session would take minutes.
    Every entry is keyed by a hash of what it was made from, so sharing it between sessions
    is safe."""
    mp = pytest.MonkeyPatch()
    session = Path(os.environ["REDUCED_ODES_CACHE"])
    lasting = _lasting_directory()
    lasting.mkdir(parents=True, exist_ok=True)
    _share_systems(session, lasting)
    _share_twins(session, lasting)
    mp.setenv("REDUCED_ODES_CACHE", str(lasting))
    yield
    mp.undo()
    _share_systems(lasting, session)
    _share_twins(lasting, session, _twins(lasting) - _LASTING_TWINS)  # this session's only


def _share_systems(source: Path, target: Path) -> None:
    """Copy the derived systems in ``source`` that ``target`` lacks, so that the session's
    cache and the lasting one derive each system once between them.  An entry's name is
    a hash of what it was made from, so a copy is the same entry; each is written whole
    (another worker may be reading), the modules before the indexes that name them."""
    from reduced_odes._io import atomic_write

    for pattern in ("system-*.py", "index-*.json"):
        for path in sorted(source.glob(pattern)):
            if not (target / path.name).exists():
                atomic_write(target / path.name, path.read_bytes())


def _share_twins(source: Path, target: Path, names: set[str] | None = None) -> None:
    """Copy the native twins in ``source`` that ``target`` lacks, with numba's machine code
    for them, so that the session's cache and the lasting one compile each twin once
    between them (a compile is ~15 s of CPU; a copy is milliseconds).

    numba takes its cached code for a source file whose modification time and size are the
    ones it recorded (``numba.core.caching``): each file is copied with its times, written
    whole (a temporary file, then a rename: another worker may be reading), the machine
    code before the index that names it, and the twin last.  A twin found without its
    code is compiled again, as before; nothing is ever read half-written.  ``names``: only
    the twins of these names (default: all)."""
    if not source.is_dir():
        return
    (target / "__pycache__").mkdir(parents=True, exist_ok=True)
    for twin in sorted(path for pattern in _NATIVE for path in source.glob(pattern)):
        if (target / twin.name).exists() or names is not None and twin.name not in names:
            continue
        code = sorted((source / "__pycache__").glob(f"{twin.stem}.*"),
                      key=lambda path: path.suffix != ".nbc")  # data, then the indexes
        for path in [*code, twin]:
            _copy_whole(path, target / path.relative_to(source))


def _copy_whole(path: Path, destination: Path) -> None:
    partial = destination.with_name(f".{destination.name}.{os.getpid()}.partial")
    shutil.copy2(path, partial)  # with its modification time, which numba checks
    os.replace(partial, destination)


@pytest.fixture
def without_numba(monkeypatch):
    """numba as if not installed, where the configuration and a failed run's retry ask
    whether it is (``_params.native_available``): the pure path alone."""
    from reduced_odes import _params

    monkeypatch.setattr(_params, "native_available", lambda: False)


#: The native integrator's source is a template, compiled inside each model's twin module
#: (``reduced_odes._native._twin``) and never imported on its own; it needs numba.
collect_ignore = ["reduced_odes/_native/_bdf.py"]
