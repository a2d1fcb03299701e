"""Shared test fixtures: an isolated compile cache per test session (tests and doctests)."""

import pytest


@pytest.fixture(autouse=True, scope="session")
def _isolated_cache(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("REDUCED_ODES_CACHE", str(tmp_path_factory.mktemp("cache")))
    yield
    mp.undo()


#: The native integrator's source is a template, compiled inside each model's twin module
#: (``reduced_odes._native._twin``) and never imported on its own; it needs numba.
collect_ignore = ["reduced_odes/_native/_bdf.py"]
