"""Runs that a user interrupts, kills, logs or reproduces elsewhere."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reduced_odes import SolverConfig, solve
from reduced_odes.cli import EXIT_DIFFERS, EXIT_NOT_REACHED, main
from reduced_odes.models.induction_head import ModelParams

from ._processes import alive as _alive

ROOT = Path(__file__).resolve().parents[2]
#: A hang guard only, never a measure of speed (no test depends on the clock): a correct
#: run takes seconds to minutes even on a loaded machine; a hung one fails within CI's time.
HANG_GUARD_S = 1800
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def _grid(tmp_path: Path, body: str) -> str:
    path = tmp_path / "grid.toml"
    path.write_text(body)
    return str(path)


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        found += [int(c) for c in (task / "children").read_text().split()]
    return found


def _start_sweep(tmp_path: Path, settings: int = 40) -> subprocess.Popen:
    L = ", ".join(str(50 + i) for i in range(settings))
    return subprocess.Popen(
        [sys.executable, "-m", "reduced_odes", "sweep", "--grid",
         _grid(tmp_path, f"[grid]\nL = [{L}]\nsigma = 1e-200\n"), "--out",
         str(tmp_path / "r.jsonl"), "--workers", "2"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV,
        start_new_session=True, preexec_fn=_default_ctrl_c)


def _default_ctrl_c() -> None:
    """Ctrl-C as a terminal delivers it: a shell that runs the tests in the background
    ignores SIGINT for them, and an ignored signal stays ignored across ``exec``."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _wait_for_workers(process: subprocess.Popen) -> list[int]:
    # No clock: a cold start derives and compiles first, for as long as the machine takes;
    # a sweep that exits before starting its workers fails here.
    while process.poll() is None:
        if workers := _children(process.pid):
            return workers
        time.sleep(0.2)
    pytest.fail(f"no worker started; exit {process.returncode}")


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
def test_workers_exit_when_the_sweep_is_killed(tmp_path):
    process = _start_sweep(tmp_path)
    workers = _wait_for_workers(process)
    process.kill()
    process.wait()
    # Workers poll their parent every 0.5 s: a hang guard only, far above that however
    # loaded the machine (no test depends on the clock).
    deadline = time.monotonic() + HANG_GUARD_S
    while any(map(_alive, workers)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(map(_alive, workers)), "orphaned workers"


def test_ctrl_c_exits_130_with_one_line_and_plain_progress(tmp_path):
    # 400 settings, ~10 s on two workers: 40 could finish within the second waited below.
    process = _start_sweep(tmp_path, settings=400)
    _wait_for_workers(process)
    time.sleep(1.0)
    os.killpg(process.pid, signal.SIGINT)  # what Ctrl-C sends: the whole process group
    _, err = process.communicate(timeout=HANG_GUARD_S)
    assert process.returncode == 130, err
    other = [line for line in err.splitlines() if not line.startswith("sweep ")]
    assert other == ["reduced-odes sweep: interrupted"], err
    assert "\r" not in err  # stderr is a pipe here: plain progress lines


def test_small_alpha_runs_until_the_four_gram_is_learned():
    # alpha = 0.01 used to stop at t = 15561 with L_G4 at 25% of its start, T_I not reached.
    traj = solve(ModelParams(alpha=0.01))
    assert math.isfinite(traj.phases["T_I"]) and traj.phases["T_I"] > traj.phases["T_III"]
    final = traj.final
    # The stop rule waits for |4 t L_G4 - 1| <= 1e-3; the run then goes on as long again.
    assert final["t"] * final["L_G4"] == pytest.approx(0.25, rel=1e-3)


def test_default_phase_times_do_not_move():
    phases = solve(ModelParams()).phases
    assert phases["T_I"] == 209.79210673196388 and phases["T_em"] == 18894.384728338104


def test_a_phase_not_reached_is_an_outcome_and_exit_3(capsys):
    traj = solve(ModelParams(), solver=SolverConfig(t_end=1000.0))
    outcome = traj.to_dict()["phase_outcomes"]
    assert outcome["T_I"] == {"reached": True, "reason": None}
    assert not outcome["T_em"]["reached"] and "t=1000" in outcome["T_em"]["reason"]
    assert main(["solve", "--alpha", "0.01", "--json", "--L", "50"]) == 0
    capsys.readouterr()


def test_cli_exit_3_when_a_phase_is_not_reached(capsys, monkeypatch):
    from reduced_odes import _params

    monkeypatch.setattr(_params.SolverConfig, "__init__.__defaults__", None, raising=False)
    from reduced_odes import cli

    real = cli._phase_status
    assert real.__name__ == "_phase_status"

    class Stub:
        unreached = {"T_em": "not reached by the end of the run at t=1000"}
        ill_conditioned = {}
        stopped = None

    assert real(Stub()) == EXIT_NOT_REACHED
    assert "T_em not reached" in capsys.readouterr().err


def test_worst_case_ties_are_broken_by_grid_order():
    from reduced_odes._verify import worst

    # 2.20721e-6 vs 2.20718e-6: the same to 3 digits; machines disagree on which is larger.
    a = (2.2e4, 2.209e4, 2.20718e-6, "first in the grid")
    b = (2.2e5, 2.208e5, 2.20721e-6, "second")
    assert worst("x", [a, b], 0.01).detail.endswith("first in the grid")
    assert worst("x", [b, a], 0.01).detail.endswith("second")
    assert worst("x", [a, (1, 1, 3e-6, "bigger")], 0.01).detail.endswith("bigger")


def _small_model_grid(monkeypatch):
    """The induction head's quick grid cut to two settings, for a reproduce in seconds."""
    from reduced_odes.models.induction_head import MODEL

    real = MODEL.verify_settings
    monkeypatch.setattr(type(MODEL), "verify_settings",
                        lambda self, grid, variants: (real("quick", variants)[0][:2], []))
    monkeypatch.setattr(type(MODEL), "figures", None)  # drawn in test_figures.py
    monkeypatch.setattr(type(MODEL), "export_derivations", None)


def test_reproduce_leaves_committed_data_alone_and_reports_differences(tmp_path, monkeypatch,
                                                                         capsys):
    _small_model_grid(monkeypatch)
    figures, results = tmp_path / "figures", tmp_path / "results"
    argv = ["reproduce", "--only", "induction_head", "--grid", "quick", "--figures",
            str(figures), "--results", str(results)]
    assert main(argv) in (0, 1)  # nothing committed yet: nothing to compare
    committed = figures / "data" / "induction_head"
    assert not committed.exists()
    assert main([*argv, "--update-committed"]) in (0, 1)
    before = {p.name: p.read_bytes() for p in committed.iterdir()}
    assert set(before) == {"verify-quick.json", "verify-quick.jsonl", "verify-quick.md"}
    capsys.readouterr()
    assert main(argv) in (0, 1)
    assert "agrees with" in capsys.readouterr().out
    claims = json.loads(before["verify-quick.json"])
    i = next(i for i, c in enumerate(claims["claims"]) if abs(c["measured"] or 0) > 1)
    claims["claims"][i]["measured"] *= 1 + 1e-4  # beyond the 1e-6 tolerance
    (committed / "verify-quick.json").write_text(json.dumps(claims))
    assert main(argv) == EXIT_DIFFERS
    assert f"claims/{i}/measured" in capsys.readouterr().err


@pytest.mark.slow
def test_two_blas_kernels_give_identical_tables(tmp_path):
    """The default grid's quick subset under two OpenBLAS kernels: the same verdict table."""
    tables = []
    for coretype in ("Haswell", "Prescott"):
        out = tmp_path / coretype
        result = subprocess.run(
            [sys.executable, "-m", "reduced_odes", "verify", "--grid", "quick", "--out",
             str(out)], capture_output=True, text=True, timeout=HANG_GUARD_S,
            env={**ENV, "OPENBLAS_CORETYPE": coretype})
        assert result.returncode in (0, 1), result.stderr
        tables.append((out / "verify-quick.md").read_text())
    assert tables[0] == tables[1]


def test_importing_the_package_pins_one_blas_kernel_before_numpy_loads():
    """A fresh process that imports the package first runs OpenBLAS's Haswell kernel on every
    x86-64 CPU with AVX2 (the committed data's), and records it; NumPy loaded first keeps
    its own."""
    from reduced_odes._blas import _NEEDS, KERNEL, _cpu_flags

    if not _NEEDS <= _cpu_flags():
        pytest.skip("no AVX2/FMA: OpenBLAS keeps its own kernel here")
    env = {k: v for k, v in ENV.items() if k not in ("OPENBLAS_CORETYPE", "REDUCED_ODES_BLAS")}
    probe = ("import {first}, os; from reduced_odes._provenance import platform_stamp; "
             "print(os.environ.get('OPENBLAS_CORETYPE'), platform_stamp()['openblas_coretype'])")
    for first, expected in (("reduced_odes", f"{KERNEL} {KERNEL}"), ("numpy, reduced_odes",
                                                                      "None None")):
        out = subprocess.run([sys.executable, "-c", probe.format(first=first)], env=env,
                             capture_output=True, text=True, timeout=HANG_GUARD_S)
        assert out.stdout.split() == expected.split(), out.stderr
