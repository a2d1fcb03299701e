"""Shared test fixtures: the tests' compile cache (tests and doctests), shared by the workers
and kept between sessions; the Hypothesis profile; the grouping of tests on the workers."""

import json
import os
import tempfile
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


def _tests_cache() -> Path:
    """The tests' compile cache: one directory for every session and worker, kept between
    sessions (a native compile is ~1 to 15 s of CPU; compiling each twin and integrator
    afresh every session would take minutes).  Every entry is keyed by a hash of what it
    was made from, so sharing it is safe; its writes are atomic, and a derivation or a
    compile runs under a lock beside its entry (``reduced_odes._io.exclusive``), so two
    workers derive or compile each system once between them.  It is not the user's cache
    (``~/.cache/reduced-odes``), which the tests leave alone; a test of the cache's own
    behaviour gives itself an empty one."""
    lasting = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    cache = lasting / "reduced-odes-tests"
    cache.mkdir(parents=True, exist_ok=True)
    return cache


@pytest.fixture(autouse=True, scope="session")
def _tests_compile_cache():
    mp = pytest.MonkeyPatch()
    mp.setenv("REDUCED_ODES_CACHE", str(_tests_cache()))
    yield
    mp.undo()


#: Where the workers tell the controller which tests form a group (``workerinput`` key).
_GROUPS_KEY = "reduced_odes_groups"


def _group(item) -> str | None:
    """The group of ``item``: the name of its ``xdist_group`` mark (tests that would each wait
    for the same first derivation or compile, under its lock, if they ran on both workers at
    once); else its module, if it shares a costly module-scoped fixture (computed once on one
    worker, not once on each); else none."""
    mark = item.get_closest_marker("xdist_group")
    if mark is not None:
        return str(mark.kwargs.get("name", mark.args[0] if mark.args else item.nodeid))
    definitions = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
    shared = any(d and d[-1].scope == "module" for d in definitions.values())
    return item.nodeid.split("::")[0] if shared else None


def pytest_collection_modifyitems(config, items):
    """On a pytest-xdist worker: write the groups for the controller's scheduler (below)."""
    destination = getattr(config, "workerinput", {}).get(_GROUPS_KEY)
    if destination:
        from reduced_odes._io import atomic_write

        groups = {item.nodeid: group for item in items if (group := _group(item))}
        atomic_write(Path(destination), json.dumps(groups, sort_keys=True).encode())


#: The controller's file of groups (created for the first worker, removed at the end).
_GROUPS_FILE = pytest.StashKey[Path]()


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """pytest-xdist, on the controller: where each worker writes the groups (every worker
    collects the same tests, so they write the same file)."""
    if _GROUPS_FILE not in node.config.stash:
        handle, name = tempfile.mkstemp(prefix="reduced-odes-test-groups-", suffix=".json")
        os.close(handle)
        node.config.stash[_GROUPS_FILE] = Path(name)
    node.workerinput[_GROUPS_KEY] = str(node.config.stash[_GROUPS_FILE])


def pytest_unconfigure(config):
    if _GROUPS_FILE in config.stash:
        config.stash[_GROUPS_FILE].unlink(missing_ok=True)


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadgroup``: each group of :func:`_group` on one worker.

    pytest-xdist's own ``loadgroup`` reads a group from a suffix it appends to each test's
    id, which pytest 9.2 no longer lets it change (pytest-xdist issue 1386): it groups
    nothing, and each worker computed such a module's fixtures again.  This scheduler takes
    the groups from the file the workers write at collection, which every worker has
    finished before the controller schedules anything."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ModuleGroups(LoadScopeScheduling):
        _groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self._groups is None:
                self._groups = json.loads(config.stash[_GROUPS_FILE].read_text() or "{}")
            return self._groups.get(nodeid, nodeid)

    return ModuleGroups(config, log)


@pytest.fixture
def without_numba(monkeypatch):
    """numba as if not installed, where the configuration and a failed run's retry ask
    whether it is (``_params.native_available``): the pure path alone."""
    from reduced_odes import _params

    monkeypatch.setattr(_params, "native_available", lambda: False)


#: The native integrator's source is a template, compiled inside each model's twin module
#: (``reduced_odes._native._twin``) and never imported on its own; it needs numba.
collect_ignore = ["reduced_odes/_native/_bdf.py"]
