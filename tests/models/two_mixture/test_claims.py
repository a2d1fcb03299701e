"""The claims machinery: a claim fails when its measurement is off, and grids are well formed."""

import math

from reduced_odes.models.two_mixture.claims import TOLERANCES, claims, verify_settings


def test_quick_grid_has_both_losses_and_algorithm1():
    settings, skipped = verify_settings("quick", ["square", "logistic"])
    assert {s["variant"] for s in settings} == {"square", "logistic"}
    assert sum(s["protocol"] == "algorithm1" for s in settings) == 2
    assert not skipped


def test_default_grid_skips_outside_the_regime():
    settings, skipped = verify_settings("default", ["square"])
    assert all(s["kappa"] / s["mu"] <= 2 for s in settings)
    assert all("reason" in s for s in skipped)


def test_a_wrong_measurement_fails_its_claim():
    setting = {"mu": 1.0, "kappa": 0.5, "sigma": 1e-2, "sigma_att": 1e-3, "variant": "square",
               "protocol": "algorithm1"}
    A0 = 1e-4 / (2 * math.sqrt(2))
    true_I = math.log(0.9 * (1 - A0) / (A0 * 0.1)) / (1 / (2 * math.sqrt(2)))
    result = {"stage_I": true_I * 1.02, "stage_II": 211.2579648, "loss_III": 0.00138121547,
              "joint_T_AI": true_I}
    rows = {c.name: c for c in claims([{"setting": setting, "result": result}], ["square"])}
    assert not rows["Algorithm 1 stage I"].passed  # 2% off, tolerance 0.5%
    assert rows["Algorithm 1 stage II"].passed
    assert rows["Algorithm 1 stage I"].tolerance == TOLERANCES["Algorithm 1 stage I"][0]
