"""``reduced-odes sweep``: a small grid to JSON Lines through the CLI, resumed; the Python API."""

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from reduced_odes import solve
from reduced_odes._grid import load_grid
from reduced_odes._results_file import read_results
from reduced_odes._sweep import run_sweep
from reduced_odes._sweep_command import solve_setting
from reduced_odes.models.induction_head import ModelParams

ROOT = Path(__file__).resolve().parents[2]
#: A hang guard only, never a measure of speed (no test depends on the clock): a correct
#: run takes seconds to minutes even on a loaded machine; a hung one fails within CI's time.
HANG_GUARD_S = 1800

GRID = """
[grid]
closure = ["linear", "meanfield"]
sigma = [1e-2, 1e-3]

[fixed]
L = 20
alpha = 0.5
wstar = 0.3
rtol = 1e-9
"""


def _cli(*args, cwd):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    return subprocess.run([sys.executable, "-m", "reduced_odes", "sweep", *args], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=HANG_GUARD_S)


def test_cli_sweep_writes_one_line_per_setting_and_a_rerun_skips_all(tmp_path):
    grid = tmp_path / "grid.toml"
    grid.write_text(GRID)
    out = tmp_path / "results.jsonl"
    first = _cli("--grid", str(grid), "--out", str(out), "--workers", "2", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "4 settings, 0 already done, 4 completed, 0 failed" in first.stdout
    assert "sweep 4/4 (100%)" in first.stderr  # the progress line
    records = read_results(out)
    assert len(records) == 4 and all("result" in r for r in records)
    assert {(r["setting"]["closure"], r["setting"]["sigma"]) for r in records} == {
        ("linear", 1e-2), ("linear", 1e-3), ("meanfield", 1e-2), ("meanfield", 1e-3)}
    for record in records:
        result = record["result"]
        assert set(result) >= {"phases", "final", "solver", "params", "closure", "versions"}
        assert result["closure"] == record["setting"]["closure"]
        assert result["solver"]["rtol"] == 1e-9 and result["solver"]["steps"] > 0
        assert result["phases"]["T_III"] is not None
        assert record["metadata"]["versions"]["reduced-odes"]
        assert record["metadata"]["solver_defaults"]["method"] == "LSODA"
    # The worker's result is exactly what solve() gives in this process.
    linear = next(r for r in records if r["setting"] == {
        "model": "induction_head", "closure": "linear", "sigma": 1e-3, "L": 20, "alpha": 0.5,
        "wstar": 0.3, "rtol": 1e-9, "backend": "python"})
    from reduced_odes import SolverConfig
    here = solve(ModelParams(L=20, alpha=0.5, wstar=0.3, sigma=1e-3), "linear",
                 SolverConfig(rtol=1e-9)).phases
    assert linear["result"]["phases"] == pytest.approx(here, rel=1e-12)

    size = out.stat().st_size
    again = _cli("--grid", str(grid), "--out", str(out), cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "4 settings, 4 already done, 0 completed, 0 failed" in again.stdout
    assert out.stat().st_size == size  # nothing was re-run or re-written


def test_cli_sweep_closure_option_fills_settings_without_one(tmp_path):
    grid = tmp_path / "grid.toml"
    grid.write_text("[grid]\nsigma = [1e-2, 1e-3]\n[fixed]\nL = 20\n")
    out = tmp_path / "r.jsonl"
    done = _cli("--grid", str(grid), "--out", str(out), "--closure", "meanfield",
                "--workers", "1", "--no-progress", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert {r["result"]["closure"] for r in read_results(out)} == {"meanfield"}


@pytest.mark.parametrize("grid, words", [
    ("[grid]\nL = [20, 3]\n", ["L=3", "integer in [4, 1e+10]"]),
    ("[grid]\nwstar = [0.3, 0.6]\n", ["wstar", "0.6", "(0, 0.5)"]),
    ("[grid]\nsigma = [0.01]\nlr = 3\n", ["unknown grid key", "lr", "allowed"]),
    ("[grid]\nsigma = [0.01]\nclosure = 'exact'\n", ["closure='exact'", "linear"]),
    ("[grid\n", ["invalid TOML"]),
])
def test_cli_sweep_bad_grid_exits_2_with_one_line(tmp_path, grid, words):
    path = tmp_path / "bad.toml"
    path.write_text(grid)
    out = _cli("--grid", str(path), "--out", str(tmp_path / "r.jsonl"), cwd=tmp_path)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
    for word in words:
        assert word in lines[0]
    assert not (tmp_path / "r.jsonl").exists()  # nothing ran


def test_python_api_with_an_external_executor(tmp_path):
    """What a dask ``client.get_executor()`` gets: any concurrent.futures.Executor works."""
    grid = tmp_path / "grid.toml"
    grid.write_text(GRID)
    settings = [{"closure": "linear"} | s for s in load_grid(grid)]
    path = tmp_path / "api.jsonl"
    with ThreadPoolExecutor(2) as pool:
        report = run_sweep(settings, solve_setting, path, executor=pool, progress=False)
        again = run_sweep(settings, solve_setting, path, executor=pool, progress=False)
    assert (report.completed, report.failed, again.skipped, again.completed) == (4, 0, 4, 0)
    assert all(json.dumps(r["result"]) for r in report.records)


@pytest.mark.parametrize("reference", ["this:s", "{evil}:MODEL"])
def test_a_grid_file_imports_nothing_it_names(tmp_path, capsys, reference):
    """Issue 34 defect 6 and item 5: grids are data.  A grid's ``model`` key that is not a
    registered name (nor the command's ``--model``) is refused in one line, before it is
    imported: ``this`` prints a poem on import, and the file would leave a marker."""
    from reduced_odes.cli import EXIT_BAD_INPUT, main

    marker = tmp_path / "ran"
    evil = tmp_path / "evil.py"
    evil.write_text(f"open({str(marker)!r}, 'w').close()\n")
    reference = reference.format(evil=evil)
    grid = tmp_path / "grid.toml"
    grid.write_text(f'[grid]\nsigma = 0.01\nmodel = "{reference}"\n')
    assert "this" not in sys.modules
    status = main(["sweep", "--model", "deep_linear", "--grid", str(grid), "--out",
                   str(tmp_path / "r.jsonl"), "--backend", "python", "--no-progress"])
    captured = capsys.readouterr()
    err = [line for line in captured.err.splitlines() if line.strip()]
    assert status == EXIT_BAD_INPUT and len(err) == 1, captured
    assert f"grid key model={reference!r} is not registered" in err[0]
    assert "comes from --model only" in err[0]
    assert "this" not in sys.modules and not marker.exists()
    assert "Zen" not in captured.out


def test_a_log_gets_plain_progress_lines_while_a_grid_is_checked(tmp_path, capsys,
                                                                 monkeypatch):
    """Issue 34 defect 17: checking a large grid showed progress on a terminal only, so a
    log saw nothing for a minute.  Past the quiet seconds (none here, so that the test does
    not depend on the clock) a log gets plain lines, one per 5%, with no carriage return."""
    import reduced_odes._sweep_command as command
    from reduced_odes.cli import main

    class Checked(BaseException):
        """Raised where the sweep would start: the grid has been checked."""

    def checked(*args, **kwargs):
        raise Checked

    monkeypatch.setattr(command, "CHECK_QUIET_SECONDS", 0.0, raising=False)
    monkeypatch.setattr(command, "run_sweep", checked)
    grid = tmp_path / "grid.toml"
    grid.write_text("[grid]\ns = [" + ", ".join(str(1 + i / 1000) for i in range(2000))
                    + "]\nsigma = 0.01\n")
    with pytest.raises(Checked):
        main(["sweep", "--model", "deep_linear", "--grid", str(grid), "--out",
              str(tmp_path / "r.jsonl"), "--backend", "python"])
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("checking grid")]
    assert "\r" not in err  # capsys is no terminal: plain lines
    assert [line.split(" (")[0] for line in lines] == ["checking grid 1000/2000",
                                                       "checking grid 2000/2000"], err
