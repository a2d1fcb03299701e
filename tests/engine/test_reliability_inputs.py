"""Bad input, bad files and unwritable places: exit 2 with one line, before any work."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reduced_odes import ParameterError, SolverConfig, get_model, solve
from reduced_odes._results import ResultsFileError, results_line
from reduced_odes._results_file import read_results, repair_results
from reduced_odes._sweep import run_sweep
from reduced_odes.cli import EXIT_BAD_INPUT, build_parser, main
from reduced_odes.models.induction_head import ModelParams

ROOT = Path(__file__).resolve().parents[2]
#: A hang guard only, never a measure of speed (no test depends on the clock): a correct
#: run takes seconds to minutes even on a loaded machine; a hung one fails within CI's time.
HANG_GUARD_S = 1800


def _cli(*argv: str, env: dict | None = None, cwd: Path | None = None,
         timeout: float = HANG_GUARD_S) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "reduced_odes", *argv], capture_output=True,
                          text=True, timeout=timeout, cwd=cwd,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})


def _one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def _grid(tmp_path: Path, body: str) -> str:
    path = tmp_path / "grid.toml"
    path.write_text(body)
    return str(path)


@pytest.mark.parametrize("body, needle", [
    ("[grid]\nL = []\n", "L = []"),
    ("[grid]\nL = [" + "9" * 401 + "]\n", "L="),
    ("[grid]\nL = [50]\nn_output = 1e11\n", "n_output"),
    ("[grid]\nL = [50]\nt_end = \"3000\"\n", "t_end"),
    ("[grid]\nL = [50]\nrtol = \"1e-10\"\n", "rtol"),
])
def test_bad_grids_exit_2_with_one_line_before_any_work(tmp_path, capsys, body, needle):
    out = tmp_path / "r.jsonl"
    assert main(["sweep", "--grid", _grid(tmp_path, body), "--out", str(out)]) == EXIT_BAD_INPUT
    assert needle in _one_line(capsys.readouterr().err)
    assert not out.exists() or out.read_bytes() == b""  # nothing computed


@pytest.mark.parametrize("argv, needle", [
    # a negative number, not "expected one argument"
    (["solve", "--sigma", "-1e-3"], "sigma=-0.001"),
    (["solve", "--alpha", "1e-200"], "alpha=1e-200"),  # was a ZeroDivisionError in the horizon
    (["solve", "--L", "1e300"], "L=1e+300"),  # was "LSODA stopped ... non-finite state"
    (["solve", "--out", "/"], "is a directory"),
    (["compare", "--quick", "--out", "/proc/x"], "cannot be created"),
    (["verify", "--out", "/proc/x"], "cannot be created"),
    (["figures", "--out", "/proc/x"], "cannot be created"),
])
def test_bad_values_and_outputs_are_one_line(capsys, argv, needle):
    assert main(argv) == EXIT_BAD_INPUT
    assert needle in _one_line(capsys.readouterr().err)


def test_solve_out_under_a_file_fails_before_solving(tmp_path, capsys, monkeypatch):
    import reduced_odes.cli as cli

    monkeypatch.setattr(cli, "solve", lambda *a, **k: pytest.fail("solved first"))
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert main(["solve", "--out", str(blocker / "x.json")]) == EXIT_BAD_INPUT
    assert "is a file" in _one_line(capsys.readouterr().err)


def test_huge_L_is_a_parameter_error():
    with pytest.raises(ParameterError, match="L="):
        ModelParams(L=10**400)  # was OverflowError


def test_negative_round_off_of_a_loss_is_reported_as_zero():
    # w* this close to the linear closure's edge left L_IH = -7.1e-15 at the end.
    traj = solve(ModelParams(wstar=0.4999999999), "linear")
    assert traj.series["L_IH"].min() >= 0.0 and traj.series["L_G4"].min() >= 0.0


def test_every_option_states_its_default():
    from reduced_odes.models import get_model

    for name in ("induction_head", "deep_linear"):
        parser = build_parser(get_model(name))
        commands = parser._subparsers._group_actions[0].choices
        for command, sub in commands.items():
            own = set(sub.get_default("model_options"))  # the model's options are its own
            for action in sub._actions:
                if action.dest == "help" or action.dest in own:
                    continue
                assert action.help and ("default" in action.help or action.required), (
                    name, command, action.dest)


# -- results files ----------------------------------------------------------------------
GOOD = results_line({"setting": {"x": 1}, "result": {"y": 1}}).encode()


def test_nul_tail_is_dropped_with_a_warning(tmp_path, capsys):
    path = tmp_path / "r.jsonl"
    path.write_bytes(GOOD + b"\0" * 64)  # what a crash between size and data update leaves
    assert [r["setting"] for r in read_results(path)] == [{"x": 1}]
    assert "NUL-filled" in _one_line(capsys.readouterr().err)


@pytest.mark.parametrize("data, line", [
    (GOOD + b"\x9c\xff random bytes\n" + GOOD, 2),
    (GOOD + b'{"key": "b", "sett\n' + GOOD, 2),  # a cut middle line
    (b'{"no_key": 1}\n', 1),
])
def test_corrupt_results_name_file_and_line_and_repair_keeps_valid_lines(tmp_path, data, line):
    path = tmp_path / "r.jsonl"
    path.write_bytes(data)
    with pytest.raises(ResultsFileError, match=rf"r\.jsonl:{line}: "):
        read_results(path)
    assert repair_results(path) == data.count(GOOD)
    assert len(read_results(path)) == data.count(GOOD)


def test_sweep_on_a_foreign_file_exits_2(tmp_path, capsys):
    foreign = tmp_path / "notes.txt"
    foreign.write_text("not results\nat all\n")
    grid = _grid(tmp_path, "[grid]\nL = [50]\n")
    assert main(["sweep", "--grid", grid, "--out", str(foreign)]) == EXIT_BAD_INPUT
    assert "notes.txt:1" in _one_line(capsys.readouterr().err)


def test_results_lines_are_strict_json_with_null_and_a_reason(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    path = tmp_path / "r.jsonl"
    with ThreadPoolExecutor(1) as pool:
        run_sweep([{"x": 1}], lambda s: {"rate": float("nan")}, path, executor=pool)
    line = path.read_text()
    assert "NaN" not in line.replace('"NaN"', "")  # no bare NaN: strict JSON
    record = json.loads(line, parse_constant=lambda c: pytest.fail(f"bare {c}"))
    assert record["result"]["rate"] is None
    assert record["null_reasons"] == {"/result/rate": "NaN"}


def test_a_second_run_on_the_same_results_file_exits_2(tmp_path):
    from reduced_odes._results_file import results_lock

    path = tmp_path / "r.jsonl"
    with results_lock(path):
        with pytest.raises(ParameterError, match="in use by another run"):
            run_sweep([{"x": 1}], dict, path)


def test_workers_are_capped_at_the_settings():
    from reduced_odes._pool import process_pool

    with process_pool(32, 1) as pool:
        assert pool._max_workers == 1


# -- environment ------------------------------------------------------------------------
def test_no_writable_cache_falls_back_with_one_warning(tmp_path):
    env = {"XDG_CACHE_HOME": "/etc/hostname"}
    clean = {k: v for k, v in os.environ.items() if k != "REDUCED_ODES_CACHE"}
    # The smallest model: the process derives it afresh into a temporary cache.
    result = subprocess.run([sys.executable, "-m", "reduced_odes", "solve", "--model",
                             "deep_linear", "--json"], capture_output=True, text=True,
                            timeout=HANG_GUARD_S, env={**clean, "PYTHONPATH": str(ROOT), **env})
    assert result.returncode == 0, result.stderr
    assert "REDUCED_ODES_CACHE" in _one_line(result.stderr)
    # The result is unchanged: the solve command's, cross-checked as it is by default.
    model = get_model("deep_linear")
    reference = solve(model.make_params({}), solver=SolverConfig(cross_check=True),
                      model=model).phases
    assert json.loads(result.stdout)["phases"] == reference


def test_solve_json_into_a_closed_pipe_is_quiet():
    command = (f"PYTHONPATH={ROOT} {sys.executable} -m reduced_odes solve --L 50 --json "
               f"| head -1")
    result = subprocess.run(["bash", "-o", "pipefail", "-c", command], capture_output=True,
                            text=True, timeout=HANG_GUARD_S)
    assert result.stdout == "{\n" and result.stderr == "", result.stderr
