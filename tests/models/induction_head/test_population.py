"""The deterministic population estimator of exact-softmax training."""

import math

import numpy as np
import pytest

from reduced_odes import solve
from reduced_odes.cli import main
from reduced_odes.models.induction_head import ModelParams
from reduced_odes.models.induction_head.ground_truth import population_rows
from reduced_odes.models.induction_head.population import (
    InductionHeadPopulation,
    _Moments,
    _points,
    closure_averages,
    population_flow,
)


def _moments(model, draws=4000, seed=1):
    w, nodes = _points(model, 16, 4)
    moments = _Moments()
    rng = np.random.default_rng(seed)
    for _ in range(draws // 500):
        moments.add(model.sample(w, 500, rng))
    return w, moments


@pytest.mark.parametrize("closure", ["linear", "meanfield"])
def test_closure_sample_averages_match_their_derived_closed_forms(closure):
    model = InductionHeadPopulation(L=12, wstar=0.2, alpha=0.5, sigmas=(0.1,))
    w, moments = _moments(model)
    z = moments.z_scores(closure, closure_averages(closure)(w, 0.2, 12))
    # 16 nodes + 4 checks, 4 averages: 80 correlated z-scores; 5 sigma is a 6e-7 event each.
    assert np.max(np.abs(z)) < 5
    wrong = moments.z_scores(closure, closure_averages(closure)(w, 0.2, 16))
    assert np.max(np.abs(wrong)) > 5  # the check has power: L = 16 instead of 12 is caught


def test_meanfield_attention_reproduces_the_meanfield_ode():
    # With the meanfield closure as both target and control, the control variate is
    # exact (beta = 1), so the flow is the closure's ODE up to interpolation and solver error.
    model = InductionHeadPopulation(L=30, wstar=0.3, alpha=0.5, sigmas=(0.1, 1e-3),
                                    attention="meanfield")
    est = population_flow(model, samples=2, draws=1000, nodes=40, progress=False)
    assert est["interpolation_error"] < 1e-10  # 40 Chebyshev nodes on analytic functions
    for sigma in (0.1, 1e-3):
        ode = solve(ModelParams(L=30, sigma=sigma, wstar=0.3), "meanfield").phases
        for name in ("T_II", "T_em", "T_III"):
            # Both solvers run at rtol 1e-10 and T_III sits on a slow approach (1.6e-9
            # observed); a slope beta != 1 (e.g. inconsistent normalisations) gives 1e-4.
            assert est["phases"][f"{sigma:g}/{name}"]["mean"] == pytest.approx(ode[name],
                                                                             rel=1e-8)


def test_rows_carry_closure_blocks_equal_to_solve_and_ratio_intervals():
    res = population_rows(12, 0.3, 0.5, [0.1], tokens=24000, samples=2, nodes=16,
                          progress=False)
    row = res["rows"][0]
    ode = solve(ModelParams(L=12, sigma=0.1, wstar=0.3), "linear").phases
    assert all(abs(row["linear"][k] - ode[k]) <= 1e-9 * ode[k] for k in ode)
    ratio = row["linear"]["ratio_to_exact"]["T_em"]
    assert ratio["lo"] <= ratio["value"] <= ratio["hi"]
    assert row["exact"]["T_em_se"] > 0 and not row["exact"]["window_is_T_III"]


def test_window_is_marked_when_the_onset_is_already_passed():
    res = population_rows(12, 0.3, 0.5, [0.2], tokens=12000, samples=2, nodes=12,
                          progress=False)
    exact = res["rows"][0]["exact"]
    assert exact["T_II"] == 0 and exact["window_is_T_III"]
    assert "window" not in res["rows"][0]["linear"]["ratio_to_exact"]


@pytest.mark.parametrize("argv, fragment", [
    (["--L", "3"], "L=3"),
    (["--sigma", "-1"], "sigma"),
    (["--estimator", "bogus"], "estimator"),
    (["--grid", "/nonexistent/grid.toml"], "grid="),
    (["--out", "/proc/version"], "out="),
])
def test_compare_rejects_bad_input_before_any_work(argv, fragment, capsys, tmp_path):
    status = main(["compare", "--out", str(tmp_path / "o"), *argv])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1 and fragment in err
    assert not list(tmp_path.rglob("compare-*"))  # nothing was computed or written


@pytest.mark.slow
@pytest.mark.parametrize("L, sigma", [(50, 1e-2), (200, 1e-4)])
def test_linear_attention_reproduces_the_linear_ode_within_its_error_bars(L, sigma):
    res = population_rows(L, 0.3, 0.5, [sigma], attention="linear", progress=False)
    exact = res["rows"][0]["exact"]
    lo, hi = exact["intervals"]["T_em"]  # 95% Student-t over 8 independent samples
    ode = solve(ModelParams(L=L, sigma=sigma, wstar=0.3), "linear").phases["T_em"]
    assert lo <= ode <= hi, (ode, exact["T_em"], exact["T_em_se"])


@pytest.mark.slow
def test_population_and_sgd_agree_within_their_intervals():
    from reduced_odes.models.induction_head.sgd_compare import compare_closures

    pop = population_rows(20, 0.3, 0.5, [0.1], progress=False)["rows"][0]["exact"]
    sgd = compare_closures(grid={"L": (20,), "sigma": (0.1,), "wstar": (0.3,)}, modes_at=(),
                           n_seeds=8, eta=0.1, batch=512)["rows"][0]["sgd_exact"]["T_em"]
    # Both are 95% intervals; they must overlap (SGD also carries an O(eta) bias).
    p_lo, p_hi = pop["intervals"]["T_em"]
    assert p_lo <= sgd["hi"] and sgd["lo"] <= p_hi, (pop["T_em"], sgd)
    assert math.isfinite(sgd["mean"])
