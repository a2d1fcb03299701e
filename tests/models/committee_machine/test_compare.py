"""``compare``: SGD on the real network agrees with the derived ODE within the seeds' intervals,
and fails above the largest learning rate as the ODE does."""

from __future__ import annotations

import pytest

from reduced_odes import get_model


@pytest.mark.slow
def test_sgd_agrees_with_the_ode_and_fails_above_the_largest_eta(tmp_path):
    model = get_model("committee_machine")
    result = model.compare(quick=True, out=tmp_path)
    for entry in result["agreement"]:
        for what in ("T_escape", "plateau", "final"):
            # The ODE inside the seeds' 99.9% t-interval: a 1-in-1000 false alarm per row
            # (tanh's plateau, against the eta -> 0 limit, is reported only: None).
            assert entry[what]["inside"] is not False, (entry["activation"], entry["N"],
                                                        entry["method"], what, entry[what])
    assert {e["activation"] for e in result["agreement"]} == {"erf", "tanh", "relu"}
    assert result["above_largest_eta"]["both_fail"]
    # The trained read-out (K = M = 2): eps_g at t = 1, 2, 4 inside the widened interval.
    assert all(row["inside"] for row in result["second_layer"]), result["second_layer"]
    assert "| erf, N=500, eta=0.1, overlaps | T_escape |" in model.format_compare(result)
    assert (tmp_path / "compare-committee_machine.json").exists()


def test_relu_sgd_at_finite_eta_holds_the_escape_and_plateau_small():
    """ReLU at eta = 0.1 (the learning-rate term derived), at a small size: 6 seeds of the
    overlap sampler at N = 500 to t = 20 (just past the escape at t = 14.3)."""
    from reduced_odes.models.committee_machine.compare import START_R, _ode, _sgd

    ode = _ode(0.1, START_R, 20.0, "relu")
    row = _sgd(0.1, START_R, 500, 6, 20.0, ode, "overlaps", "relu", records=101)
    for what in ("T_escape", "plateau"):
        # The ODE inside the seeds' 99.9% t-interval: a 1-in-1000 false alarm per row.
        assert row[what]["inside"], (what, row[what])
