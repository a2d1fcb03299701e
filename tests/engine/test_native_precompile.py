"""The helper that compiles a first twin's scans aside exits with the run that started it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from reduced_odes._backend import native_available

from ._processes import alive as _alive

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}

pytestmark = [pytest.mark.skipif(not native_available(), reason="needs numba"),
              pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs /proc")]


def test_the_precompile_helper_exits_when_its_run_is_killed(tmp_path):
    # A "twin" whose import takes 10 minutes stands for a first compile at K = M = 5.
    twin = tmp_path / "native-slow.py"
    twin.write_text("import time\ntime.sleep(600)\n")
    run = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys, time
            from pathlib import Path
            from reduced_odes._native import _twin
            _twin._idle_core = lambda: True  # however busy the machine running the test
            _twin._compile_scans_aside(Path({str(twin)!r}), "_slow_twin")
            print(_twin._ASIDE[-1].pid, flush=True)
            time.sleep(600)
        """)], stdout=subprocess.PIPE, text=True, env=ENV)
    helper = int(run.stdout.readline())
    assert _alive(helper)
    run.kill()  # SIGKILL: no cleanup of the run's own
    run.wait()
    # The helper polls its parent every 0.5 s: a hang guard only, far above that however
    # loaded the machine (no test depends on the clock); it passes as soon as it exits.
    deadline = time.monotonic() + 600
    while _alive(helper) and time.monotonic() < deadline:
        time.sleep(0.2)
    alive = _alive(helper)
    if alive:
        os.kill(helper, 9)
    assert not alive, "the precompile helper outlived its run"
