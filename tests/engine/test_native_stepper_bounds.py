"""Every loop of the native stepper is bounded: a start where the flow cannot be evaluated
fails with its reason on both backends, promptly (issue 34, defect 2)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from reduced_odes import DomainError, SolverConfig, solve
from reduced_odes._backend import native_available
from reduced_odes.models.deep_linear import DeepLinearParams

ROOT = Path(__file__).resolve().parents[2]

#: ``exp(800)`` overflows: the rates are inf/NaN at the start (the pure path raises there,
#: the native one gets inf and NaN), though the start itself is finite.
UNEVALUABLE = {"log_a": 800.0, "log_b": 800.0}



@pytest.mark.skipif(not native_available(), reason="needs numba")
def test_the_native_stepper_refuses_a_start_with_rates_that_are_not_finite():
    with pytest.raises(DomainError, match="not finite") as info:
        solve(DeepLinearParams(), solver=SolverConfig(backend="numba"), initial=UNEVALUABLE)
    assert "log_a" in str(info.value)  # the last accepted state, named


@pytest.mark.skipif(not native_available(), reason="needs numba")
def test_a_start_the_pure_path_cannot_evaluate_is_not_retried_forever():
    # Before the fix the native retry spun in nogil code, with a NaN step size, for ever:
    # in a child process, so that a regression fails the test instead of hanging the suite.
    child = subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
        from reduced_odes import DomainError, SolverConfig, solve
        from reduced_odes.models.deep_linear import DeepLinearParams
        try:
            solve(DeepLinearParams(), solver=SolverConfig(backend="python"),
                  initial={UNEVALUABLE!r})
        except DomainError as exc:
            print(exc)
    """)], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
        # A hang guard only: a warm run answers in about a second, a cold one compiles the
        # native twin first (minutes on a loaded machine); only a hang reaches this.
        timeout=1800)
    assert child.returncode == 0, child.stderr
    message = child.stdout.strip()
    assert "(backend python); retried on backend numba" in message, message
    assert "not finite" in message, message


@pytest.mark.parametrize("method", ["LSODA", "BDF", "Radau"])
def test_the_pure_steppers_refuse_the_same_start(without_numba, method):
    with pytest.raises(DomainError, match="t=0"):
        solve(DeepLinearParams(), solver=SolverConfig(backend="python", method=method),
              initial=UNEVALUABLE)
