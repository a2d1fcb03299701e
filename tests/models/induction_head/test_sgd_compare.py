"""SGD on the real model against the reduced ODEs (induction_head.sgd_compare)."""

from __future__ import annotations

import json

import pytest

from reduced_odes.models.induction_head.sgd_compare import (
    compare_closures,
    format_markdown,
    validate_simulator,
)


@pytest.fixture(scope="module")
def validation():
    # Defaults: L=10, alpha=0.5, w*=0.2, sigma=0.1, (eta, B) = (1,16), (0.3,64), (0.1,256),
    # 8 seeds -- about 10 s on 2 cores.
    return validate_simulator()


def test_linear_sgd_converges_to_linear_ode(validation):
    d = [s["distance"] for s in validation["settings"]]
    assert validation["distance_shrinks"], d
    # Each refinement divides sqrt(eta/B) (the SGD noise scale) by ~3.6 and eta (the
    # Euler bias) by ~3.3; demanding a factor 2 leaves room for seed-to-seed scatter.
    assert all(r > 2.0 for r in validation["distance_ratios"]), validation["distance_ratios"]
    # At the finest setting the trajectories agree to ~1e-2 over the whole run
    # (max over t of |dw_v1|, |dp|, |dw_v2|, |dw_kq|/w*); 0.03 is ~2.5x the expected value.
    assert d[-1] < 0.03


def test_seed_averaged_T_em_covers_ode(validation):
    fine = validation["settings"][-1]["T_em"]
    ode = validation["ode"]["phases"]["T_em"]
    assert validation["T_em_covered"], (fine, ode)
    # Non-vacuous: the 95% interval is narrow, under 2% of T_em.
    assert fine["hi"] - fine["lo"] < 0.02 * ode


def test_wrong_closure_is_rejected():
    # Negative control: the same SGD against the meanfield ODE must not validate.
    res = validate_simulator(settings=((0.3, 64), (0.1, 256)), n_seeds=4, closure="meanfield")
    assert not res["T_em_covered"]
    assert res["settings"][-1]["distance"] > 3 * 0.012  # stalls at the closure mismatch


def test_validation_output_is_json_and_markdown(validation):
    text = json.dumps(validation, allow_nan=False)
    assert json.loads(text)["kind"] == "validation"
    md = format_markdown(validation)
    assert md.count("\n| ") == 1 + len(validation["settings"])  # header + one line per setting


def test_compare_closures_tiny_run():
    res = compare_closures(grid={"L": (8,), "sigma": (0.1,), "wstar": (0.3,)},
                           modes_at=((8, 0.1, 0.3),), n_seeds=2, eta=0.5, batch=64,
                           stage1_time=50.0, t_factor=1.2, workers=2)
    json.dumps(res, allow_nan=False)
    row = res["rows"][0]
    assert set(row["ratio_T_em"]) == {"linear", "meanfield"}
    assert row["final"]["target"]["p"] == "inf"
    # The 4-gram partial loss does not depend on the closure, so SGD's T_I must match
    # the ODE's: 5% is ~2.5 seed-sd here (B = 64); Euler at eta = 0.5 shifts it by <1%.
    assert row["ratio_T_I"]["linear"] == pytest.approx(1.0, abs=0.05)
    modes = res["modes"][0]
    assert set(modes) >= {"stage2", "layerwise", "joint"}
    assert "T_em_shift" in modes["joint"] and modes["stage2"]["p1_final_mean"] == "inf"
    md = format_markdown(res)
    assert "| 8 | 0.1 | 0.3 |" in md and "joint" in md


@pytest.mark.slow
def test_validation_fine_setting_slow():
    # One more refinement (eta = 0.03, B = 1024): ~2 minutes.
    res = validate_simulator(settings=((0.3, 64), (0.1, 256), (0.03, 1024)), n_seeds=8)
    assert res["distance_shrinks"] and res["T_em_covered"]
    assert res["settings"][-1]["distance"] < 0.01


@pytest.mark.slow
def test_compare_closures_quick_table_slow():
    # The quick comparison (< 2 min on 2 cores): meanfield is the better closure for T_em.
    res = compare_closures(quick=True)
    for row in res["rows"]:
        lin, mf = row["ratio_T_em"]["linear"], row["ratio_T_em"]["meanfield"]
        assert abs(mf - 1) <= abs(lin - 1) + 0.01
