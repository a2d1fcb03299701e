"""Fixtures shared by the engine's tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


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
