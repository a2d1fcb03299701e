"""``Problem`` (``_problem``): the absolute tolerance a stepper steps at, floored at the
machine epsilon for a log coordinate (an absolute error in ``ln x`` is a relative error in
``x``, which no float holds below eps), and the draw that floor makes prompt: deep_linear at
``atol`` 1e-30, which settles at ``ln a = ln b = 0`` where ``atol + rtol |y|`` was 1e-30 and
every stepper shrank its steps into its step budget."""

from __future__ import annotations

import math
import types

import numpy as np
import pytest

from reduced_odes import Setting, SolverConfig, solve
from reduced_odes._backend import native_available
from reduced_odes._problem import LOG_ATOL_FLOOR, Problem, _log_coordinates
from reduced_odes.models.deep_linear import MODEL, DeepLinearParams

needs_numba = pytest.mark.skipif(not native_available(),
                                 reason="numba is not installed (the [fast] extra)")

#: The draw of the property test that ran into every stepper's step budget before the floor
#: (Radau's 20,000 steps, then the native retry's 100,000): ~20 s of CPU.
SIGMA, RTOL, ATOL = 1e-100, 1e-13, 1e-30
#: Steps the draw may take on any stepper now: measured 554 (LSODA), 2,031 (BDF), 2,317
#: (native BDF) and 5,709 (Radau); below every stepper's budget (20,000 for SciPy's Radau
#: and BDF), which the draw exhausted before, with room for the BLAS kernel's 26% spread.
STEP_BUDGET = 10_000


def _system(state):
    """A stand-in for a compiled system: ``_log_coordinates`` reads only ``state``."""
    return types.SimpleNamespace(state=state)


def test_log_coordinates_are_those_whose_state_is_a_multiple_of_their_exponential():
    def state(y, c):
        return [c * math.exp(y[0]), y[1] ** 2, math.exp(y[2]) + 1.0, y[3], math.exp(y[4])]

    y0 = np.array([-230.0, 0.5, 0.0, 0.0, 3.0])
    found = _log_coordinates(_system(state), y0, (7.0,))
    assert found.tolist() == [True, False, False, False, True]


def test_no_log_coordinate_is_claimed_where_the_state_cannot_be_evaluated():
    def state(y):
        return [math.exp(y[0]), math.sqrt(y[1])]  # sqrt of -0.5 - 0.5 raises

    found = _log_coordinates(_system(state), np.array([0.0, 0.0]), ())
    assert found.tolist() == [False, False]


def _problem(atol: float, backend: str = "python") -> Problem:
    solver = SolverConfig(atol=atol, backend=backend)
    return Problem.of(Setting(MODEL, DeepLinearParams(sigma=SIGMA), "default", solver))


def test_the_tolerance_is_the_requested_float_itself_at_or_above_the_floor():
    # The runs above the floor pass the same float as before, so they are the same runs.
    for atol in (1e-12, LOG_ATOL_FLOOR):
        problem = _problem(atol)
        assert type(problem.tolerance()) is float and problem.tolerance() == atol
        assert problem.floored() == {}
    assert _problem(1e-12).tolerance(0.1) == 1e-12 * 0.1


def test_below_the_floor_each_log_coordinate_steps_at_the_machine_epsilon():
    problem = _problem(ATOL)
    assert problem.tolerance().tolist() == [LOG_ATOL_FLOOR, LOG_ATOL_FLOOR]
    assert problem.floored() == {"log_a": LOG_ATOL_FLOOR, "log_b": LOG_ATOL_FLOOR}
    # A factor (the native stepper's tenth) is floored too, after it is applied.
    assert _problem(1e-15).tolerance(0.1).tolist() == [LOG_ATOL_FLOOR, LOG_ATOL_FLOOR]


def test_a_coordinate_that_is_no_logarithm_keeps_the_requested_atol():
    problem = _problem(ATOL)
    mixed = np.array([True, False])
    object.__setattr__(problem, "log_coordinates", mixed)  # the cached property's slot
    assert problem.tolerance().tolist() == [LOG_ATOL_FLOOR, ATOL]
    assert problem.floored() == {"log_a": LOG_ATOL_FLOOR}


def _settles_within_the_budget(method: str, backend: str) -> None:
    solver = SolverConfig(method=method, rtol=RTOL, atol=ATOL, backend=backend)
    traj = solve(DeepLinearParams(sigma=SIGMA), solver=solver)
    assert traj.fallback_reason is None and traj.stopped is None  # no budget, no retry
    assert traj.stats.steps <= STEP_BUDGET
    assert traj.stats.atol_floor == {"log_a": LOG_ATOL_FLOOR, "log_b": LOG_ATOL_FLOOR}
    assert traj.to_dict()["solver"]["atol_floor"] == traj.stats.atol_floor
    # u = a b is logistic (du/dt = 2u(1 - u) at s = 1) from u0 = sigma^2: half-way at
    # ln(1/u0 - 1) / 2.  rtol 1e-13 over ~230 e-folds: measured within 3e-13 on each stepper.
    assert traj.phases["T_half"] == pytest.approx(math.log(SIGMA ** -2 - 1) / 2, rel=1e-11)
    assert traj.final["u"] == pytest.approx(1.0, rel=1e-9)  # settled: the stop rule's 1e-9


@pytest.mark.parametrize("method", ["LSODA", "Radau", "BDF"])
def test_atol_far_below_eps_settles_within_a_step_budget_on_every_pure_stepper(method):
    _settles_within_the_budget(method, "python")


@needs_numba
def test_atol_far_below_eps_settles_within_a_step_budget_natively():
    _settles_within_the_budget("BDF", "numba")


@needs_numba
def test_the_native_floor_is_recorded_at_the_tolerance_it_steps_at():
    """The native BDF steps at a tenth of the requested atol: an atol of 1e-15, above the
    floor, is floored there (1e-16 < eps), and the statistics say so; the pure path steps at
    1e-15 itself and records no floor."""
    solver = dict(atol=1e-15, rtol=1e-10)
    native = solve(DeepLinearParams(), solver=SolverConfig(backend="numba", **solver))
    pure = solve(DeepLinearParams(), solver=SolverConfig(backend="python", **solver))
    assert native.stats.atol_floor == {"log_a": LOG_ATOL_FLOOR, "log_b": LOG_ATOL_FLOOR}
    assert pure.stats.atol_floor == {}
