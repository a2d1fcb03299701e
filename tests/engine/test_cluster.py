"""The dask.distributed cluster engine, on a real LocalCluster with worker processes."""

import json
import math
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

pytest.importorskip("distributed", reason="dask.distributed is not installed "
                                          "(pip install 'reduced-odes[distributed]')")

from reduced_odes._cluster import cluster_executor  # noqa: E402
from reduced_odes._grid import expand_grid  # noqa: E402
from reduced_odes._params import ParameterError  # noqa: E402
from reduced_odes._results_file import read_results  # noqa: E402
from reduced_odes._sweep import run_sweep  # noqa: E402

from ._sweep_tasks import slow_square, square  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
#: A hang guard only, never a measure of speed (no test depends on the clock): a correct
#: run takes seconds to minutes even on a loaded machine; a hung one fails within CI's time.
HANG_GUARD_S = 1800


@pytest.fixture(scope="module")
def local():
    executor = cluster_executor("local", workers=2)
    yield executor
    executor.shutdown()


def _values(report):
    return {r["setting"]["x"]: r["result"]["y"] for r in report.records}


def test_sweep_on_local_cluster_equals_process_pool(local, tmp_path):
    settings = expand_grid({"x": list(range(12))})
    on_cluster = run_sweep(settings, square, tmp_path / "dask.jsonl", executor=local,
                           progress=False)
    with ProcessPoolExecutor(2) as pool:
        on_pool = run_sweep(settings, square, tmp_path / "pool.jsonl", executor=pool,
                            progress=False)
    assert on_cluster.completed == 12 and on_cluster.failed == 0
    assert _values(on_cluster) == _values(on_pool) == {x: x * x for x in range(12)}
    pids = {r["result"]["pid"] for r in on_cluster.records}
    assert os.getpid() not in pids  # the tasks ran in worker processes, not in the client


def test_worker_killed_mid_sweep_loses_and_duplicates_nothing(local, tmp_path):
    path = tmp_path / "killed.jsonl"
    victim = next(iter(local.client.run(os.getpid).values()))

    finished = threading.Event()

    def kill_after_first_results():
        # No clock: it waits for the third line however slow the machine, and gives up only
        # if the sweep ended first (then the assertion below that the worker died fails).
        while not finished.is_set():
            if path.exists() and path.read_bytes().count(b"\n") >= 3:
                os.kill(victim, 9)
                return
            time.sleep(0.02)

    killer = threading.Thread(target=kill_after_first_results)
    killer.start()
    try:
        report = run_sweep(expand_grid({"x": list(range(30))}), slow_square, path,
                           executor=local, progress=False)
    finally:
        finished.set()
        killer.join()
    lines = read_results(path)
    counts = Counter(r["setting"]["x"] for r in lines if "result" in r)
    assert victim not in local.client.run(os.getpid).values()  # the worker did die
    assert report.failed == 0 and sorted(counts) == list(range(30))
    assert set(counts.values()) == {1}, counts  # nothing written twice
    assert all(r["result"]["y"] == r["setting"]["x"] ** 2 for r in lines)


#: The tests' wait for a scheduler where none listens: any wait gives the same refusal (a slow
#: machine cannot make it pass or fail), so the shortest that still connects for real.
NOBODY_LISTENS_S = 0.5


def test_unreachable_scheduler_is_one_line_parameter_error():
    with pytest.raises(ParameterError) as info:  # port 9 (discard): nothing listens
        cluster_executor("tcp://127.0.0.1:9", connect_timeout=NOBODY_LISTENS_S)
    assert "\n" not in str(info.value) and "127.0.0.1:9" in str(info.value)
    assert f"within {NOBODY_LISTENS_S:g} s" in str(info.value)


@pytest.mark.parametrize("seconds", [0.0, -1.0, math.nan, math.inf, 3600.5])
def test_a_wait_for_the_scheduler_outside_its_range_is_refused_before_connecting(seconds):
    with pytest.raises(ParameterError, match=r"connect_timeout=.*allowed: 0 < seconds <= 3600"):
        cluster_executor("tcp://127.0.0.1:9", connect_timeout=seconds)


def test_malformed_address_is_rejected_before_connecting():
    with pytest.raises(ParameterError, match="allowed: local"):
        cluster_executor("no address here")
    with pytest.raises(ParameterError, match="workers"):
        cluster_executor("tcp://127.0.0.1:9", workers=2)


def test_results_file_is_written_by_the_client_only(local, tmp_path):
    report = run_sweep(expand_grid({"x": [1, 2, 3]}), square, tmp_path / "r.jsonl",
                       executor=local, progress=False)
    again = run_sweep(expand_grid({"x": [1, 2, 3]}), square, tmp_path / "r.jsonl",
                      executor=local, progress=False)
    assert report.completed == 3 and again.skipped == 3 and again.completed == 0
    assert all(json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines())


@pytest.mark.parametrize("command", ["sweep", "verify", "compare"])
def test_cli_unreachable_scheduler_exits_2_with_one_line_before_any_work(tmp_path, command):
    grid = tmp_path / "grid.toml"
    grid.write_text("[grid]\nsigma = [1e-3]\n[fixed]\nL = 20\n")
    out = tmp_path / "out"
    argv = {"sweep": ["sweep", "--grid", str(grid), "--out", str(out / "r.jsonl")],
            "verify": ["verify", "--grid", "quick", "--out", str(out)],
            "compare": ["compare", "--grid", str(grid), "--out", str(out)]}[command]
    done = subprocess.run([sys.executable, "-m", "reduced_odes", *argv, "--scheduler",
                           "tcp://127.0.0.1:9", "--connect-timeout", str(NOBODY_LISTENS_S)],
                          capture_output=True, text=True,
                          timeout=HANG_GUARD_S, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "scheduler" in lines[0] and "Traceback" not in done.stderr
    assert not list(out.rglob("*.json*"))  # nothing computed


@pytest.mark.parametrize("seconds", ["0", "-2", "nan", "1e9"])
def test_cli_wait_for_the_scheduler_outside_its_range_exits_2_in_one_line(tmp_path, capsys,
                                                                         seconds):
    from reduced_odes.cli import main

    grid = tmp_path / "grid.toml"
    grid.write_text("[grid]\nsigma = [1e-3]\n[fixed]\nL = 20\n")
    out = tmp_path / "r.jsonl"
    assert main(["sweep", "--grid", str(grid), "--out", str(out), "--connect-timeout",
                 seconds]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "connect_timeout=" in lines[0] and "<= 3600" in lines[0]
    assert not out.exists()


def _run_on_pool_and_cluster(argv) -> None:
    """Run ``reduced-odes *argv(name)`` on a local process pool and on a LocalCluster."""
    for name, extra in (("pool", ["--workers", "2"]),
                        ("cluster", ["--scheduler", "local", "--workers", "2"])):
        done = subprocess.run([sys.executable, "-m", "reduced_odes", *argv(name), *extra],
                              capture_output=True, text=True, timeout=HANG_GUARD_S,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert done.returncode == 0, (name, done.stderr)


@pytest.mark.slow  # the cluster path is the sweep's (below); this adds SGD's, ~25 s of CPU
def test_compare_grid_on_a_local_cluster_matches_the_process_pool(tmp_path):
    grid = tmp_path / "grid.toml"
    grid.write_text("[grid]\nsigma = [0.3, 0.1]\n[fixed]\nL = 8\nwstar = 0.3\n")
    _run_on_pool_and_cluster(lambda name: ["compare", "--grid", str(grid), "--tokens", "2e4",
                                           "--samples", "3", "--out", str(tmp_path / name)])
    rows = {name: json.loads((tmp_path / name / "compare-grid.json").read_text())["rows"]
            for name in ("pool", "cluster")}
    assert len(rows["pool"]) == 2 and rows["cluster"] == rows["pool"]  # seeds fix every sample


def test_cli_sweep_on_a_local_cluster_matches_the_process_pool(tmp_path):
    grid = tmp_path / "grid.toml"
    grid.write_text("[grid]\nsigma = [1e-2, 1e-3]\n[fixed]\nL = 20\nrtol = 1e-8\n")
    _run_on_pool_and_cluster(lambda name: ["sweep", "--grid", str(grid), "--out",
                                           str(tmp_path / f"{name}.jsonl")])
    results = {name: {r["key"]: r["result"]["phases"]
                      for r in read_results(tmp_path / f"{name}.jsonl")}
               for name in ("pool", "cluster")}
    assert results["cluster"] == results["pool"]  # the same code, bit for bit
