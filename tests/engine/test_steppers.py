"""Add a solver: one class, one row of the stepper table.

A toy stepper (SciPy's explicit ``DOP853`` stepped by hand, with the stop rule tested
at each step's end) is registered in :data:`reduced_odes._steppers.STEPPERS` and runs
through :func:`~reduced_odes.solve`, a sweep and :func:`~reduced_odes.verify`, with
nothing else changed.  Its phase times are held to the reference stepper's (LSODA):
an independent integrator of the same flow.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from reduced_odes import ParameterError, SolverConfig, run_sweep, solve, verify
from reduced_odes._driver import StepRun
from reduced_odes._steppers import METHODS, STEPPERS, stepper_for
from reduced_odes._sweep_command import solve_setting
from reduced_odes.models.deep_linear import DeepLinearParams

#: The toy's step budget: a run to T_half and its tail takes a few hundred steps.
_TOY_STEPS = 20_000


class ToyStepper:
    """DOP853 (explicit, 8th order) until the stop rule holds at a step's end, then on to
    ``(1 + tail)`` times that: the contract of a stepper in twenty lines."""

    label = None
    runs = 0

    @classmethod
    def run(cls, problem) -> StepRun:
        from scipy.integrate import DOP853, OdeSolution

        cls.runs += 1
        rhs, _ = problem.guarded()
        stepper = DOP853(lambda t, y: np.asarray(rhs(t, y, *problem.args)), 0.0, problem.y0,
                         math.inf, rtol=problem.rtol, atol=problem.tolerance())
        steps, states, pieces = [0.0], [problem.y0.copy()], []
        end = problem.t_end if problem.t_end is not None else math.inf
        while stepper.t < end and len(steps) < _TOY_STEPS:
            stepper.step()
            steps.append(stepper.t)
            states.append(stepper.y.copy())
            pieces.append(stepper.dense_output())
            if end == math.inf and problem.settled(stepper.t, stepper.y) <= 0:
                end = stepper.t * (1 + problem.tail)
        dense = OdeSolution(np.array(steps), pieces)
        return StepRun(dense, np.array(steps), np.array(states).T, lambda k: pieces[k],
                       nfev=stepper.nfev, njev=0, nlu=0)


@pytest.fixture
def toy(monkeypatch):
    """The toy's row: ``method="Toy"`` on the reference backend."""
    monkeypatch.setitem(STEPPERS, ("python", "Toy"), ToyStepper)
    ToyStepper.runs = 0
    return ToyStepper


def test_the_table_names_every_built_in_stepper():
    assert tuple(METHODS) == ("LSODA", "Radau", "BDF")
    assert {stepper_for("python", m).__name__ for m in METHODS} == {"LsodaStepper",
                                                                    "IvpStepper"}
    # The native row serves every method: it is BDF whatever the solver names.
    assert stepper_for("numba", "LSODA") is stepper_for("numba", "Radau")


def test_a_method_outside_the_table_is_refused():
    with pytest.raises(ParameterError, match="method='Toy'; allowed: LSODA, Radau, BDF"):
        SolverConfig(method="Toy")


def test_a_registered_stepper_runs_through_solve(toy):
    params = DeepLinearParams(s=2.0, sigma=1e-4)
    traj = solve(params, solver=SolverConfig(method="Toy", backend="python"))
    reference = solve(params, solver=SolverConfig(backend="python"))
    assert toy.runs == 1 and traj.stats.method == "Toy"
    # Two integrators at rtol 1e-10 on a logistic law: their phase times agree far below 1e-7.
    assert traj.phases["T_half"] == pytest.approx(reference.phases["T_half"], rel=1e-7)
    exact = math.log(2.0 / 1e-8 - 1) / 4  # the logistic law's half-way time, s = 2, u0 = 1e-8
    assert traj.phases["T_half"] == pytest.approx(exact, rel=1e-7)  # the same reason
    assert traj.t[-1] > traj.phases["T_half"]  # on past the stop rule, by the model's tail


def test_a_registered_stepper_runs_through_a_sweep(toy, tmp_path):
    settings = [{"model": "deep_linear", "s": s, "sigma": 1e-4, "method": "Toy",
                 "backend": "python"} for s in (1.0, 2.0)]
    with ThreadPoolExecutor(1) as pool:  # in this process: the patched table is the one read
        report = run_sweep(settings, solve_setting, tmp_path / "toy.jsonl", executor=pool,
                           progress=False)
    assert toy.runs == 2
    for record in report.records:
        s = record["setting"]["s"]
        exact = math.log(s / 1e-8 - 1) / (2 * s)  # the logistic law's half-way time
        # The toy at rtol 1e-10 against the closed form: far below 1e-7.
        assert record["result"]["phases"]["T_half"] == pytest.approx(exact, rel=1e-7)


def test_a_stepper_in_the_default_row_runs_through_verify(monkeypatch, tmp_path):
    """The toy as the reference backend's LSODA row: every trajectory of a verification."""
    monkeypatch.setitem(STEPPERS, ("python", "LSODA"), ToyStepper)
    ToyStepper.runs = 0
    with ThreadPoolExecutor(1) as pool:
        report = verify("two_stage_features", "quick", "linear", tmp_path, executor=pool,
                        progress=False, backend="python")
    assert ToyStepper.runs > 0 and report.passed, report.table()
