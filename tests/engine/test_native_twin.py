"""The twin's compile lock (``reduced_odes._native._twin.compiled_once``): taken for a run
while numba has no cached stepping for the twin, so that processes sharing a cache compile
it once between them; never taken inside another, nor once the stepping is cached."""

from __future__ import annotations

import contextlib
import types

import pytest

from reduced_odes._native import _engines, _twin


@pytest.fixture
def locks(monkeypatch, tmp_path):
    """The lock files ``compiled_once`` takes, recorded; a fake twin in ``tmp_path``."""
    taken = []

    @contextlib.contextmanager
    def exclusive(path):
        taken.append(path.name)
        yield

    monkeypatch.setattr(_twin, "exclusive", exclusive)
    monkeypatch.setattr(_twin, "_READY", set())
    monkeypatch.setattr(_engines, "_numba_cache_dir",
                        lambda path: path.parent / "__pycache__")
    (tmp_path / "__pycache__").mkdir()
    twin = types.SimpleNamespace(__file__=str(tmp_path / "native-abc.py"))
    return taken, twin, tmp_path


def test_a_cold_twins_first_run_holds_its_lock_and_later_runs_do_not(locks):
    taken, twin, _ = locks
    with _twin.compiled_once(twin):
        pass
    with _twin.compiled_once(twin):  # compiled by this process now: no lock
        pass
    assert taken == ["native-abc.compile.lock"]


def test_a_twin_with_cached_stepping_takes_no_lock(locks):
    taken, twin, directory = locks
    (directory / "__pycache__" / "native-abc.advance-582.py311.nbi").touch()
    with _twin.compiled_once(twin):
        pass
    assert taken == []


def test_a_run_holding_one_lock_waits_for_no_other(locks):
    taken, twin, directory = locks
    other = types.SimpleNamespace(__file__=str(directory / "native-def.py"))
    with _twin.compiled_once(twin), _twin.compiled_once(other):
        pass
    assert taken == ["native-abc.compile.lock"]


def test_a_failed_first_run_releases_the_lock_and_takes_it_again_next_time(locks):
    taken, twin, _ = locks
    with pytest.raises(ArithmeticError), _twin.compiled_once(twin):
        raise ArithmeticError("the run failed before its stepping compiled")
    with _twin.compiled_once(twin):
        pass
    assert taken == ["native-abc.compile.lock"] * 2
