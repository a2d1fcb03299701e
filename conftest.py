"""Shared test fixtures: an isolated compile cache per test session (tests and doctests), and
a lasting one for the native tests."""

import os
from pathlib import Path

import pytest

# First, before any test module loads NumPy: the package pins OpenBLAS's kernel, so the tests
# see the bits the committed data were computed with (reduced_odes._blas).
import reduced_odes  # noqa: F401


@pytest.fixture(autouse=True, scope="session")
def _isolated_cache(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("REDUCED_ODES_CACHE", str(tmp_path_factory.mktemp("cache")))
    yield
    mp.undo()


@pytest.fixture(scope="module")
def lasting_cache():
    """A compile cache that outlives the session, for the native tests: numba's machine code
    is kept beside the twins, and compiling them afresh each session would take minutes.
    Every entry is keyed by a hash of what it was made from, so sharing it between sessions
    is safe."""
    mp = pytest.MonkeyPatch()
    lasting = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    mp.setenv("REDUCED_ODES_CACHE", str(lasting / "reduced-odes-native-tests"))
    yield
    mp.undo()


@pytest.fixture
def without_numba(monkeypatch):
    """numba as if not installed, where the configuration and a failed run's retry ask
    whether it is (``_params.native_available``): the pure path alone."""
    from reduced_odes import _params

    monkeypatch.setattr(_params, "native_available", lambda: False)


#: The native integrator's source is a template, compiled inside each model's twin module
#: (``reduced_odes._native._twin``) and never imported on its own; it needs numba.
collect_ignore = ["reduced_odes/_native/_bdf.py"]
