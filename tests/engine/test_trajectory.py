"""The trajectory (``_trajectory``): its output grid, dense output and observables, against
the exact logistic solution of the two-layer scalar linear network."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from reduced_odes import SolverConfig, solve
from reduced_odes._trajectory import output_times
from reduced_odes.models.deep_linear import DeepLinearParams

S, SIGMA = 2.0, 1e-3


def _exact_u(t):
    """u = a b with a = b: du/dt = 2u(s - u), the logistic curve from u0 = sigma^2."""
    u0 = SIGMA**2
    return S / (1 + (S / u0 - 1) * np.exp(-2 * S * np.asarray(t)))


@pytest.mark.parametrize("t_end, n", [(10.0, 3), (1e6, 400), (0.5, 7)])
def test_output_grid_is_geomspace_from_zero(t_end, n):
    grid = output_times(t_end, n)
    start = min(1e-3, t_end / 10)
    assert grid[0] == 0.0 and grid[1] == start and grid[-1] == t_end and len(grid) == n + 1
    np.testing.assert_array_equal(grid[1:], np.geomspace(start, t_end, n))  # to the bit


@pytest.fixture(scope="module")
def run():
    return solve(DeepLinearParams(s=S, sigma=SIGMA), solver=SolverConfig(t_end=8.0))


def test_series_dense_output_and_observables_follow_the_exact_solution(run):
    # rtol 1e-10 per step, accumulated over ~200 steps of exponential growth: measured
    # 2.3e-8 relative at worst; 1e-7 bounds it, far below any phase-time tolerance.
    np.testing.assert_allclose(run.series["u"], _exact_u(run.t), rtol=1e-7)
    between = np.linspace(0.5, 7.5, 29)
    # Between output times: the stepper's own interpolant, as accurate as its steps.
    np.testing.assert_allclose(run.observables_at(between)["u"], _exact_u(between), rtol=1e-7)
    log_a = run.at(between)[run.system.coordinate_names.index("log_a")]  # (coordinate, time)
    np.testing.assert_allclose(np.exp(2 * log_a), _exact_u(between), rtol=1e-7)  # a = b
    assert run.final["u"] == pytest.approx(float(_exact_u(8.0)), rel=1e-7)  # as the series


def test_a_phase_never_reached_is_nan_and_null_in_json():
    short = solve(DeepLinearParams(s=S, sigma=SIGMA), solver=SolverConfig(t_end=0.1))
    assert math.isnan(short.phases["T_half"])
    document = json.loads(json.dumps(short.to_dict(), allow_nan=False))
    assert document["phases"]["T_half"] is None
