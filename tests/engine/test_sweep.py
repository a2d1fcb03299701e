"""Tests for reduced_odes._sweep: grids, keys, resumable sweeps, kill/resume and errors."""

import contextlib
import hashlib
import json
import math
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # worker processes unpickle the tasks by module name
    sys.path.insert(0, str(HERE))

import _sweep_tasks as tasks  # noqa: E402

from reduced_odes._grid import expand_grid, load_grid  # noqa: E402
from reduced_odes._results import setting_key  # noqa: E402
from reduced_odes._results_file import read_results  # noqa: E402
from reduced_odes._sweep import run_sweep  # noqa: E402

META = {"versions": {"reduced_odes": "0.1.0"}, "rtol": 1e-10}


def _threads(settings, task, path, **kwargs):
    with ThreadPoolExecutor(4) as pool:
        return run_sweep(settings, task, path, executor=pool, progress=False, **kwargs)


# 1. grids and keys ---------------------------------------------------------------------


def test_expand_grid_order_scalars_and_edge_cases():
    assert expand_grid({"a": [1, 2], "b": "xy", "c": (True, False)}) == [
        {"a": 1, "b": "xy", "c": True},
        {"a": 1, "b": "xy", "c": False},
        {"a": 2, "b": "xy", "c": True},
        {"a": 2, "b": "xy", "c": False},
    ]
    assert expand_grid({}) == [{}]
    assert expand_grid({"a": [], "b": 1}) == []


def test_load_grid_table_with_fixed(tmp_path):
    path = tmp_path / "grid.toml"
    path.write_text(
        "[grid]\nL = [50, 200]\nsigma = [1e-2, 1e-4]\nclosure = ['linear', 'meanfield']\n"
        "[fixed]\nmethod = 'LSODA'\n"
    )
    settings = load_grid(path)
    assert len(settings) == 8 == len({setting_key(s) for s in settings})
    assert settings[0] == {"L": 50, "sigma": 1e-2, "closure": "linear", "method": "LSODA"}
    assert settings[-1] == {"L": 200, "sigma": 1e-4, "closure": "meanfield", "method": "LSODA"}
    assert all(s["method"] == "LSODA" for s in settings)


def test_load_grid_array_of_tables_is_a_deduplicated_union(tmp_path):
    path = tmp_path / "grid.toml"
    path.write_text(
        "[[grid]]\nL = [50, 200]\nclosure = 'linear'\n"
        "[[grid]]\nL = [200, 400]\nclosure = 'linear'\n"
        "[[grid]]\nL = 50\nclosure = ['meanfield']\n"
    )
    assert load_grid(path) == [
        {"L": 50, "closure": "linear"},
        {"L": 200, "closure": "linear"},
        {"L": 400, "closure": "linear"},
        {"L": 50, "closure": "meanfield"},
    ]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[grid]\nL = [50, 200\n", "invalid TOML"),
        ("[fixed]\nmethod = 'LSODA'\n", "needs a [grid] table"),
        ("grid = 3\n", "needs a [grid] table"),
        ("[grids]\nL = [1]\n", "unknown top-level key(s) ['grids']"),
        ("fixed = 1\n[grid]\nL = [1]\n", "[fixed] must be a table"),
        ("[grid]\nL = [1, 2]\n[fixed]\nL = 3\n", "['L'] appear in both [grid] and [fixed]"),
    ],
)
def test_load_grid_malformed_file_names_file_and_problem(tmp_path, text, problem):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ValueError) as excinfo:
        load_grid(path)
    assert str(path) in str(excinfo.value)
    assert problem in str(excinfo.value)


def test_setting_key_is_canonical_and_stable():
    key = setting_key({"sigma": 0.1, "L": 50})
    assert key == setting_key({"L": 50, "sigma": 0.1})
    assert key == hashlib.sha256(b'{"L":50,"sigma":0.1}').hexdigest()  # format is frozen
    assert key == setting_key({"L": np.int64(50), "sigma": np.float64(0.1)})
    assert key != setting_key({"L": 50, "sigma": 0.10000000000000002})  # repr round-trips
    # Equal numbers are one setting (1 == 1.0), at any depth; a bool is not a number.
    assert key == setting_key({"L": 50.0, "sigma": 0.1})
    assert key == setting_key({"L": np.float32(50.0), "sigma": 0.1})
    assert setting_key({"s": [1, {"t": -0.0}]}) == setting_key({"s": [1.0, {"t": 0}]})
    assert setting_key({"L": 1}) != setting_key({"L": True})
    # 2**60 + 1 has no float: float() rounds it to 2**60, a different number, another key
    assert setting_key({"L": 2**60 + 1}) != setting_key({"L": float(2**60 + 1)})
    assert setting_key({"L": 2**60}) == setting_key({"L": float(2**60 + 1)})


# 2. sweeps and resume ------------------------------------------------------------------


@pytest.mark.parametrize("pool", ["threads", "default process pool"])
def test_sweep_writes_one_line_per_setting_and_rerun_skips_all(tmp_path, pool):
    path, settings = tmp_path / "results.jsonl", tasks.squares(12)

    def sweep():
        if pool == "threads":
            return _threads(settings, tasks.square, path, metadata=META)
        return run_sweep(settings, tasks.square, path, max_workers=2, progress=False,
                         metadata=META)

    first = sweep()
    assert (first.total, first.skipped, first.completed, first.failed) == (12, 0, 12, 0)
    assert first.results_path == path
    text = path.read_text()
    records = [json.loads(line) for line in text.splitlines()]
    assert len(records) == 12 and text.endswith("\n")
    assert sorted(r["setting"]["x"] for r in records) == list(range(12))
    for r in records:
        assert r["key"] == setting_key(r["setting"])
        assert r["result"]["y"] == r["setting"]["x"] ** 2
        assert r["metadata"] == META
    pids = {r["result"]["pid"] for r in records}
    assert (pids == {os.getpid()}) if pool == "threads" else (os.getpid() not in pids)
    assert [r["setting"] for r in first.records] == settings  # in the order of the settings

    second = sweep()
    assert (second.total, second.skipped, second.completed, second.failed) == (12, 12, 0, 0)
    assert path.read_text() == text  # nothing appended
    assert second.records == first.records


def test_duplicate_settings_run_once_and_external_executor_stays_open(tmp_path):
    path = tmp_path / "results.jsonl"
    with ThreadPoolExecutor(2) as pool:
        report = run_sweep([{"x": 1}, {"x": 2}, {"x": 1}], tasks.square, path, executor=pool,
                           progress=False)
        assert pool.submit(int, "7").result() == 7  # not shut down by run_sweep
        with pytest.raises(ValueError, match="max_workers"):
            run_sweep([{"x": 1}], tasks.square, path, executor=pool, max_workers=2)
    assert (report.total, report.completed) == (2, 2)
    assert len(read_results(path)) == 2


def test_results_are_json_encoded_or_recorded_as_errors(tmp_path):
    def numpy_or_junk(setting):
        return {"y": np.arange(3) * setting["x"]} if setting["x"] else {"y": object()}

    path = tmp_path / "results.jsonl"
    report = _threads([{"x": 0}, {"x": 1}], numpy_or_junk, path)
    assert (report.completed, report.failed) == (1, 1)
    assert report.records[0]["result"] == {"y": [0, 1, 2]}
    error = [r for r in read_results(path) if "error" in r][0]
    assert error["setting"] == {"x": 0} and error["error"].startswith("TypeError: ")


def test_progress_bar_on_stderr(tmp_path, capsys):
    with ThreadPoolExecutor(2) as pool:
        run_sweep(tasks.squares(3), tasks.square, tmp_path / "a.jsonl", executor=pool,
                  progress=True)
        err = capsys.readouterr().err
        # stderr is not a terminal here: plain lines, no carriage returns in logs
        assert err.startswith("sweep 0/3 (0%) elapsed 0:00:00 eta ?\n") and "\r" not in err
        assert "\nsweep 3/3 (100%) elapsed " in err and err.endswith("\n")
        run_sweep(tasks.squares(3), tasks.square, tmp_path / "b.jsonl", executor=pool)
        assert capsys.readouterr().err == ""  # auto: stderr is not a terminal here


# 3. kill and resume --------------------------------------------------------------------


def test_killed_sweep_resumes_without_loss_or_duplicates(tmp_path):
    path = tmp_path / "results.jsonl"
    pythonpath = os.pathsep.join([str(HERE), str(HERE.parent), os.environ.get("PYTHONPATH", "")])
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys, _sweep_tasks; _sweep_tasks.slow_sweep(sys.argv[1])",
         str(path)],
        env={**os.environ, "PYTHONPATH": pythonpath},
        start_new_session=True,  # own process group: killpg reaches the pool's workers too
    )
    try:
        # No clock: it waits for the fourth line however slow the machine; a sweep that
        # exits without writing them fails here.
        while not (path.exists() and path.read_bytes().count(b"\n") >= 4):
            assert proc.poll() is None, "the sweep subprocess exited early"
            time.sleep(0.01)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    before = read_results(path)
    assert 4 <= len(before) < 30, "the kill must interrupt the sweep"

    line = json.dumps({"key": setting_key({"x": 29}), "setting": {"x": 29}, "result": {"y": 0}})
    with open(path, "ab") as fh:  # simulate a write torn by the kill
        fh.write(line[: len(line) // 2].encode())
    assert read_results(path) == before

    report = tasks.slow_sweep(path)
    assert (report.skipped, report.completed, report.failed) == (len(before), 30 - len(before), 0)
    data = path.read_bytes()
    assert data.endswith(b"\n")
    records = [json.loads(line) for line in data.splitlines()]  # every line is intact JSON
    assert [{k: v for k, v in r.items() if k != "check"} for r in records[: len(before)]] \
        == before
    assert Counter(r["setting"]["x"] for r in records) == Counter(range(30))  # once each
    assert all("result" in r and r["result"]["y"] == r["setting"]["x"] ** 2 for r in records)
    assert [r["setting"]["x"] for r in report.records] == list(range(30))


def test_torn_last_line_is_cut_but_foreign_or_corrupt_files_are_refused(tmp_path):
    path = tmp_path / "results.jsonl"
    _threads(tasks.squares(3), tasks.square, path)
    good = path.read_bytes()
    path.write_bytes(good + good[:20])  # a torn copy of the first line
    assert len(read_results(path)) == 3
    report = _threads(tasks.squares(5), tasks.square, path)
    assert (report.skipped, report.completed) == (3, 2)
    data = path.read_bytes()
    assert data.startswith(good) and len([json.loads(x) for x in data.splitlines()]) == 5

    path.write_bytes(good + b"not json\n" + good)
    with pytest.raises(ValueError, match=r"results\.jsonl:4: corrupt results line"):
        read_results(path)
    notes = tmp_path / "notes.txt"
    notes.write_text("do not truncate me")
    with pytest.raises(ValueError, match=r"notes\.txt:1: not a results line"):
        _threads(tasks.squares(1), tasks.square, notes)
    assert notes.read_text() == "do not truncate me"


def test_keyboard_interrupt_keeps_finished_lines_and_cancels_the_rest(tmp_path):
    path, calls = tmp_path / "results.jsonl", []

    def interrupted_at_three(setting):
        calls.append(setting["x"])
        time.sleep(0.05)
        if setting["x"] == 3:
            raise KeyboardInterrupt
        return {"y": setting["x"] ** 2}

    with ThreadPoolExecutor(1) as pool, pytest.raises(KeyboardInterrupt):
        run_sweep(tasks.squares(10), interrupted_at_three, path, executor=pool, progress=False)
    assert [r["setting"]["x"] for r in read_results(path)] == [0, 1, 2]
    # The interrupted chunk stopped at 3, and only the chunk already queued behind it in
    # the one thread ran (6, 7): nothing else was started.
    assert len(calls) <= 6 and 9 not in calls
    report = _threads(tasks.squares(10), tasks.square, path)
    assert (report.skipped, report.completed) == (3, 7)


# 4. failing settings -------------------------------------------------------------------


def test_failed_setting_records_an_error_line_and_is_retried(tmp_path, capsys):
    path = tmp_path / "results.jsonl"
    with ThreadPoolExecutor(2) as pool:
        first = run_sweep(tasks.squares(5), tasks.fails_on_three, path, executor=pool,
                          progress=True, metadata=META)
        assert (first.completed, first.failed) == (4, 1)
        assert ", 1 failed" in capsys.readouterr().err
        errors = [r for r in read_results(path) if "error" in r]
        assert errors == [{"key": setting_key({"x": 3}), "setting": {"x": 3},
                           "error": "ValueError: x == 3 is not allowed", "metadata": META}]
        assert [r["setting"]["x"] for r in first.records] == [0, 1, 2, 4]

        again = run_sweep(tasks.squares(5), tasks.fails_on_three, path, executor=pool,
                          progress=False)
        assert (again.skipped, again.completed, again.failed) == (4, 0, 1)  # retried
        fixed = run_sweep(tasks.squares(5), tasks.square, path, executor=pool, progress=False)
        assert (fixed.skipped, fixed.completed, fixed.failed) == (4, 1, 0)
    assert [r["result"]["y"] for r in fixed.records] == [0, 1, 4, 9, 16]
    assert len(read_results(path)) == 5 + 1 + 1


def test_quick_tasks_go_out_in_chunks_and_come_back_in_order(tmp_path, monkeypatch):
    import reduced_odes._sweep as sweep

    sizes, run_chunk = [], sweep._run_chunk

    def recording(task, settings):
        sizes.append(len(settings))
        return run_chunk(task, settings)

    monkeypatch.setattr(sweep, "_run_chunk", recording)
    with ThreadPoolExecutor(2) as pool:
        report = run_sweep(tasks.squares(300), tasks.square, tmp_path / "r.jsonl",
                           executor=pool, progress=False)
    assert [r["result"]["y"] for r in report.records] == [x * x for x in range(300)]
    assert sum(sizes) == 300 and max(sizes) > 1  # microsecond tasks are batched
    assert sizes[:4] == [1, 1, 1, 1]  # until a time per task is measured


def test_results_of_other_code_or_versions_are_computed_again(tmp_path, capsys):
    """A rerun reuses only lines computed under the same source, versions and solver; the
    newest line of a setting is the one reported."""
    path = tmp_path / "results.jsonl"
    old = {**META, "source": "0123456789abcdef"}
    new = {**META, "source": "fedcba9876543210"}
    _threads(tasks.squares(3), tasks.square, path, metadata=old)
    again = _threads(tasks.squares(4), tasks.square, path, metadata=new)
    assert (again.skipped, again.completed) == (0, 4)
    assert "3 result(s) in" in capsys.readouterr().err
    assert [r["metadata"] for r in again.records] == [new] * 4
    same = _threads(tasks.squares(4), tasks.square, path, metadata=new)
    assert (same.skipped, same.completed) == (4, 0)
    no_stamp = _threads(tasks.squares(4), tasks.square, path, metadata=META)
    assert (no_stamp.skipped, no_stamp.completed) == (4, 0)  # only what the run states
    other = _threads(tasks.squares(1), tasks.square, path,
                     metadata={**new, "versions": {"reduced_odes": "0.2.0"}})
    assert (other.skipped, other.completed) == (0, 1)


def test_prepare_runs_once_with_the_pending_settings_only(tmp_path):
    """The job's set-up (compiling what the workers load) is paid only for work to do."""
    path = tmp_path / "results.jsonl"
    calls = []
    _threads(tasks.squares(2), tasks.square, path, prepare=calls.append)
    _threads(tasks.squares(3), tasks.square, path, prepare=calls.append)
    _threads(tasks.squares(3), tasks.square, path, prepare=calls.append)
    assert [[s["x"] for s in pending] for pending in calls] == [[0, 1], [2]]


def test_a_job_that_collects_nothing_reads_nothing_back(tmp_path, monkeypatch):
    """``collect=False``: the counts and the file as usual, ``records`` empty, and the
    results file not parsed again after the run."""
    path = tmp_path / "results.jsonl"
    import reduced_odes._sweep as sweep

    reads = []
    monkeypatch.setattr(sweep, "read_results", lambda p: reads.append(p) or [])
    report = _threads(tasks.squares(3), tasks.square, path, collect=False)
    assert (report.completed, report.records, reads) == (3, [], [])
    assert len(path.read_bytes().splitlines()) == 3


@pytest.mark.parametrize("record", [
    {"key": "k", "result": {"y": 2.5, "steps": [3, 4]}},
    {"key": "k", "result": {"rate": float("nan"), "y": np.float64(0.5)}},
    {},
])
def test_members_encoded_once_give_the_same_line(record):
    """Metadata encoded once per file and spliced in: the same bytes as the whole record
    written at once, on the direct path and on the walk (where it comes after the walked
    members and before ``null_reasons``)."""
    from reduced_odes._results import dumps_record

    metadata = {"versions": {"numpy": "2"}, "grid": [1, 2.5]}
    assert dumps_record(record, {"metadata": json.dumps(metadata)}) == \
        dumps_record(record | {"metadata": metadata})


@pytest.mark.parametrize("record", [
    {"key": "k", "result": {"phases": {"T": 1.5e300, "U": -0.0}, "steps": (3, 4)},
     "metadata": {"versions": {"numpy": "2"}, 7: [0.1, 2]}},
    {"key": "k", "result": {"rate": np.float64(0.1), "n": np.int64(3), "y": np.arange(2.0)}},
    {"key": "k", "result": {"rate": float("nan"), "all": [1.0, -math.inf]}},
])
def test_a_results_line_is_the_same_with_or_without_the_walk(record):
    """A record of plain finite values is written directly; any other is walked first
    (NumPy values converted, non-finite floats listed): each comes out as the walk writes
    it."""
    from reduced_odes._io import json_safe
    from reduced_odes._results import dumps_record

    reasons: dict = {}
    walked = json_safe(record, reasons)
    if reasons:
        walked["null_reasons"] = reasons
    assert dumps_record(record) == json.dumps(walked, allow_nan=False)
