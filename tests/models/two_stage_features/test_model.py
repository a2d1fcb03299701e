"""Integration: defaults, extreme sigma, solver agreement, bad input, and the section-6 numbers."""

import math

import pytest

from reduced_odes import ParameterError, SettledRule, SolverConfig, solve
from reduced_odes.models.two_stage_features import MODEL, TwoStageParams, TwoStageThresholds
from reduced_odes.models.two_stage_features.model import SETTLE_TOLERANCE
from reduced_odes.models.two_stage_features.numerics import (
    diagnostics,
    predict,
    require_crossing,
    targets,
)

from . import reference as ref


@pytest.fixture(scope="module")
def default_run():
    return solve(TwoStageParams())


def test_defaults_learn_syntax_first(default_run):
    ph = default_run.phases
    assert 0 < ph["T_P"] < ph["T_cross"] and ph["T_P"] < ph["T_Q"]
    assert all(math.isfinite(v) for v in ph.values())
    for name in ("L_P", "L_Q", "eig_P", "eig_Q"):
        assert name in default_run.series


def test_solvers_agree_on_event_times():
    p = TwoStageParams(sigma=1e-4)
    lsoda = solve(p, solver=SolverConfig(method="LSODA", rtol=1e-10)).phases
    radau = solve(p, solver=SolverConfig(method="Radau", rtol=1e-10)).phases
    for key, value in lsoda.items():
        # Issue: event times within 1e-7 (relative) between the two solvers at rtol 1e-10.
        assert radau[key] == pytest.approx(value, rel=1e-7), key


def test_tiny_sigma_is_exact():
    p = TwoStageParams(sigma=1e-300)
    ph = solve(p).phases
    pred = predict(p)
    # At sigma = 1e-300 the composite is exact up to O(kappa sigma^{...}): well inside 0.5%.
    assert ph["T_P"] == pytest.approx(pred["T_P"], rel=5e-3)
    assert ph["T_Q"] == pytest.approx(pred["T_Q"], rel=5e-3)


def test_fixed_value_matches_exact_solution():
    p = TwoStageParams(sigma=1e-3, train_value=False)
    ph = solve(p).phases
    lam_P, lam_Q, _ = ref.rates(p)
    A_s, B_s = ref.optima(p)
    a_inf, b_inf = A_s / (p.gamma**2 * p.v0), B_s / (p.mu**2 * p.v0)
    s2 = p.sigma**2
    for theta in (0.1, 0.5, 0.9, 0.99):
        key = "" if theta == 0.5 else f"@{theta:g}"
        T_P = (math.log(a_inf / s2 - 1) + math.log(theta / (1 - theta))) / lam_P
        T_Q = (math.log(b_inf / s2 - 1) + math.log(theta / (1 - theta))) / lam_Q
        # Spec 7.2: within 1e-6 relative (solver rtol 1e-10).
        assert ph[f"T_P{key}"] == pytest.approx(T_P, rel=1e-6)
        assert ph[f"T_Q{key}"] == pytest.approx(T_Q, rel=1e-6)
    T_cross = (math.log(b_inf / s2 - 1) - math.log(b_inf / a_inf - 1)) / lam_Q
    assert ph["T_cross"] == pytest.approx(T_cross, rel=1e-6)


@pytest.mark.parametrize("variant", ["relu", "linear"])
def test_stop_rule_is_the_distance_to_the_optimum(variant):
    """The rule as an expression of the coordinates, against the distance written out
    (the linear control's Q block is never settled: B* = 0)."""
    params = TwoStageParams()
    run = solve(params, variant)
    rule = MODEL.settled(params, variant)
    assert isinstance(rule, SettledRule)
    evaluate = rule.function(run.system.coordinate_names, (), None, ())
    A_star, B_star = targets(params, variant)
    assert (B_star > 0) == (variant == "relu")

    def written_out(y):
        log_v = math.log(y[0])
        gap = abs(log_v + y[1] + y[2] - math.log(A_star * params.gamma**-2))
        if B_star > 0:
            gap = max(gap, abs(log_v + y[3] + y[4] - math.log(B_star * params.mu**-2)))
        return gap - SETTLE_TOLERANCE

    for t, y in zip(run.t[::20], run.at(run.t[::20]).T, strict=True):
        assert evaluate(t, y) == written_out(y)  # the same operations in the same order


def test_linear_control_never_learns_semantics():
    traj = solve(TwoStageParams(sigma=1e-2), variant="linear")
    assert max(traj.series["log_b"]) <= traj.series["log_b"][0]
    assert min(traj.series["L_Q"]) >= 0.25 * (1 - 1e-12)  # pi_Q/2, up to rounding


@pytest.mark.parametrize("kwargs, match", [
    ({"gamma": 0.0}, "gamma=0.0"), ({"mu": math.inf}, "mu=inf"), ({"sigma": -1.0}, "sigma=-1.0"),
    ({"v0": math.nan}, "v0=nan"),
    ({"pi_P": 1.0}, r"pi_P=1.0 is outside the interval \[0.05, 0.95\]"),
    ({"N": 2.5}, r"N=2.5 must be an integer in \[1, 1e\+06\]"),
    ({"d_P": 0}, r"d_P=0 must be an integer in \[1, 10000\]"),
    ({"d_Q": 1}, r"d_Q=1 must be an integer in \[2, 10000\]"),
    ({"train_value": "yes"}, "train_value='yes'"),
    ({"sigma": 0.4, "v0": 1.0},
     r"v0=1.0 with train_value=True must satisfy v0\^2 > \(d_P \+ d_Q\)"),
])
def test_bad_parameters_name_value_and_range(kwargs, match):
    with pytest.raises(ParameterError, match=match):
        TwoStageParams(**kwargs)


def test_bad_thresholds_and_activation():
    with pytest.raises(ParameterError,
                       match=r"saturation=1.5 is outside the open interval \(0, 1\)"):
        TwoStageThresholds(saturation=1.5)
    with pytest.raises(ParameterError, match="activation='tanh'; allowed: relu, linear"):
        solve(TwoStageParams(), variant="tanh")


def test_diagnostics_for_semantics_first_and_no_crossing():
    assert "semantics is learned first" in diagnostics(TwoStageParams(d_P=8, d_Q=2))[0]
    with pytest.raises(ParameterError, match="no eigenvalue crossing"):
        require_crossing(TwoStageParams(mu=2.0))
    assert not math.isfinite(solve(TwoStageParams(mu=2.0)).phases["T_cross"])


def test_predictions_match_spec_formulas():
    for p in (TwoStageParams(), TwoStageParams(gamma=1.5, pi_P=0.4, N=8, d_P=3, d_Q=6, sigma=1e-6)):
        pred, spec = predict(p), ref.stage_values(p)
        lam_P, lam_Q, kappa = ref.rates(p)
        # Float evaluation of the same closed forms: agreement to rounding.
        assert pred["lam_P"] == pytest.approx(lam_P, rel=1e-12)
        assert pred["lam_Q"] == pytest.approx(lam_Q, rel=1e-12)
        assert pred["kappa"] == pytest.approx(kappa, rel=1e-12)
        for key in ("w1", "v1", "a1", "v_inf", "a_inf", "b_inf"):
            assert pred[key] == pytest.approx(spec[key], rel=1e-10), key
        w1, ell = spec["w1"], ref.ell(p)
        assert pred["leading_T_P"] == pytest.approx(ell / lam_P, rel=1e-12)
        assert pred["leading_T_Q"] == pytest.approx(ell * (1 / lam_P + (1 - kappa) / (lam_Q * w1)),
                                                     rel=1e-12)


def test_late_rates_match_spec_gram_matrix():
    import numpy as np

    p = TwoStageParams()
    pred, spec = predict(p), ref.stage_values(p)
    g, m, a, b, v = p.gamma, p.mu, spec["a_inf"], spec["b_inf"], spec["v_inf"]
    G = np.array([[g**4 * a**2 + 2 * v**2 * g**4 * a / p.d_P, g**2 * m**2 * a * b],
                  [g**2 * m**2 * a * b, m**4 * b**2 + 2 * v**2 * m**4 * b / p.d_Q]])
    H = np.diag([p.pi_P * ref.rho_s(p.pi_P, p.N, 2)[1], p.pi_Q * ref.rho_s(p.pi_Q, p.N, 4)[1]])
    nu = np.sort(np.linalg.eigvals(H @ G).real)
    assert pred["nu_minus"] == pytest.approx(nu[0], rel=1e-10)  # rounding only
    fixed = predict(TwoStageParams(train_value=False))
    assert (fixed["nu_minus"], fixed["nu_plus"]) == pytest.approx(ref.rates(p)[1::-1], rel=1e-12)
