"""Integration of the reduced flow: phases, solver agreement, the stop rule and Algorithm 1."""

import math

import numpy as np
import pytest

from reduced_odes import SettledRule, SolverConfig, solve
from reduced_odes.models.two_mixture import MODEL, TwoMixtureParams
from reduced_odes.models.two_mixture.numerics import composite, predictor, reduced_loss


@pytest.fixture(scope="module")
def default():
    return solve(TwoMixtureParams())


def test_default_stages_in_order(default):
    p = default.phases
    assert 0 < p["T1"] < p["T2"] < p["T3"]
    # The run follows the algebraic convergence past 100 T2 (late-time checks).
    assert default.t[-1] >= 100 * p["T2"]


def test_lsoda_and_radau_agree(default):
    radau = solve(TwoMixtureParams(), solver=SolverConfig(method="Radau"))
    for name in ("T1", "T2", "T3"):
        # 1e-7: the required agreement; both run at rtol 1e-10.
        assert abs(radau.phases[name] - default.phases[name]) <= 1e-7 * default.phases[name]


def test_phases_against_closed_forms(default):
    mu, kappa, A0, ell0 = 1.0, 0.5, 1e-4 / (2 * math.sqrt(2)), 0.5e-6
    pred = predictor("square")
    assert default.phases["T1"] == pytest.approx(pred.T1(mu, kappa, A0, 0.5), rel=5e-3)  # spec P1
    T2 = pred.T_of_ell(mu, kappa, A0, ell0, math.log(3))
    T3 = pred.T_of_ell(mu, kappa, A0, ell0, 0.5 * math.log(99))
    assert default.phases["T2"] == pytest.approx(T2, rel=1e-2)  # spec P3 tolerance
    assert default.phases["T3"] == pytest.approx(T3, rel=2e-2)  # spec P3 tolerance


def test_float_helpers_match_derived_observables(default):
    params = TwoMixtureParams()
    coords = np.array([default.series[n] for n in MODEL.derive("square").coordinate_names])
    for i in range(0, coords.shape[1], 37):
        A, ell, theta = composite(params, coords[:, i])
        # 1e-12 relative: the same expressions, compiled vs hand-written in floats.
        assert A == pytest.approx(default.series["A"][i], rel=1e-12)
        assert theta == pytest.approx(default.series["theta"][i], rel=1e-12)
        assert float(reduced_loss("square", A, theta)) == pytest.approx(
            default.series["loss"][i], rel=1e-12)


@pytest.mark.parametrize("loss", ["square", "logistic"])
@pytest.mark.parametrize("train", ["all", "neurons", "attention"])
def test_stop_rule_is_the_end_of_the_trained_stages(default, train, loss):
    """The rule as an expression in the coordinates, against the stage ends written out with
    the float helpers: the same floats (the settle time, and so the run's end and output
    grid, depend on its last digits)."""
    params = TwoMixtureParams(train=train)
    system = default.system
    rule = MODEL.settled(params, loss)
    assert isinstance(rule, SettledRule)
    evaluate = rule.function(system.coordinate_names, system.observable_names,
                             system.observables, MODEL.parameter_values(params, loss))

    def written_out(y):
        A, _, theta = composite(params, y)
        lags = {"all": (params.A1 - A, params.theta2 - theta,
                        float(reduced_loss(loss, A, theta)) - params.L3),
                "neurons": (params.A_I - A,), "attention": (params.theta_II - theta,)}
        return max(lags[train])

    for t, y in zip(default.t[::20], default.at(default.t[::20]).T, strict=True):
        assert evaluate(t, y) == written_out(y)


def test_random_init_starts_at_zero_margin():
    traj = solve(TwoMixtureParams(init="random"))
    assert traj.series["A"][0] == 0.0
    assert traj.phases["T1"] < traj.phases["T2"] < traj.phases["T3"]


@pytest.fixture(scope="module", params=["square", "logistic"])
def staged(request):
    """Algorithm 1 through ``solve`` (the model's integrate hook), stage III at 2000."""
    loss = request.param
    params = TwoMixtureParams(protocol="algorithm1")
    probe = solve(params, loss, SolverConfig(t_end=1e4))
    end = probe.phases["stage_I"] + probe.phases["stage_II"] + 2000.0
    return loss, solve(params, loss, SolverConfig(t_end=end))


def test_algorithm1_stages(staged):
    loss, traj = staged
    p = traj.phases
    pred = predictor(loss)
    mu, kappa, A0, ell0 = 1.0, 0.5, 1e-4 / (2 * math.sqrt(2)), 0.5e-6
    # 0.5%: the spec's P6 tolerance of both stage quadratures.
    assert p["stage_I"] == pytest.approx(pred.stage_I(mu, kappa, A0, ell0, 0.9), rel=5e-3)
    assert p["stage_II"] == pytest.approx(pred.stage_II(mu, kappa, ell0, 0.9, 0.9), rel=5e-3)
    assert p["stage_III"] == pytest.approx(2000.0, rel=1e-12)  # rounding of the offsets only
    if loss == "square":
        # Neurons alone cannot beat the square-loss floor L*(theta_II).
        floor = 0.25 * (1 - 0.9) ** 2 / (1 + 0.9**2)
        assert traj.final["loss"] == pytest.approx(floor, rel=1e-6)
    else:
        assert traj.final["loss"] < 1e-3


def test_algorithm1_is_one_clock(staged):
    _, traj = staged
    p = traj.phases
    assert np.all(np.diff(traj.t) > 0)
    assert p["T_AI"] == p["stage_I"] and p["T_thetaII"] == p["stage_I"] + p["stage_II"]
    assert p["T1"] < p["T_AI"] < p["T2"] < p["T_thetaII"]
    # Each block is frozen while the other trains: A is constant in stage II, theta in I and III.
    inside = (traj.t > p["T_AI"]) & (traj.t < p["T_thetaII"])
    assert np.ptp(traj.series["A"][inside]) < 1e-12 * traj.series["A"][inside][0]  # rounding
    after = traj.t > p["T_thetaII"]
    assert np.ptp(traj.series["theta"][after]) < 1e-12  # rounding
    # The stitched dense output agrees with the output grid in every stage.
    coords = np.array([traj.series[n] for n in traj.system.coordinate_names])
    for i in range(5, traj.t.size, 97):
        assert traj.at(traj.t[i]) == pytest.approx(coords[:, i], rel=1e-9, abs=1e-12)  # interpolant


def test_joint_protocol_is_not_staged():
    assert MODEL.integrate(TwoMixtureParams(), "square", SolverConfig(), None, None) is None
