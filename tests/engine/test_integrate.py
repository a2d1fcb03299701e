"""``solve`` (``_integrate``): phase times, the stop rule and given starts, against the exact
solution of the two-layer scalar linear network (u = a b, a = b, du/dt = 2u(s - u))."""

from __future__ import annotations

import math

import pytest

from reduced_odes import ParameterError, SolverConfig, solve
from reduced_odes.models.deep_linear import DeepLinearParams


def _exact_t_half(s: float, u0: float) -> float:
    return math.log(s / u0 - 1) / (2 * s)


@pytest.mark.parametrize("s, sigma", [(1.0, 1e-2), (3.0, 1e-4)])
def test_phase_time_is_the_exact_crossing(s, sigma):
    traj = solve(DeepLinearParams(s=s, sigma=sigma))
    # Tolerances rtol 1e-10 / atol 1e-12 over <= 20 e-folds: 1e-8 relative as documented.
    assert traj.phases["T_half"] == pytest.approx(_exact_t_half(s, sigma**2), rel=1e-8)
    # The stop rule ends the run once u is settled on s (within 1e-9 relative).
    assert traj.final["u"] == pytest.approx(s, rel=1e-8)


def test_a_given_start_by_state_or_by_coordinate_name_is_the_same_run():
    params, config = DeepLinearParams(s=1.0, sigma=1e-2), SolverConfig(t_end=20.0)
    by_state = solve(params, solver=config, initial={"a": 0.1, "b": 0.1})
    by_coordinate = solve(params, solver=config,
                          initial={"log_a": math.log(0.1), "log_b": math.log(0.1)})
    assert by_state.phases["T_half"] == pytest.approx(_exact_t_half(1.0, 0.01), rel=1e-8)
    assert by_state.phases["T_half"] == pytest.approx(by_coordinate.phases["T_half"],
                                                      rel=1e-12)  # round-off in exp(log)
    assert by_state.t[-1] == 20.0  # a given t_end is where the run ends


def test_a_start_outside_the_domain_is_refused():
    with pytest.raises(ParameterError):
        solve(DeepLinearParams(), initial={"a": -0.1, "b": 0.1})
