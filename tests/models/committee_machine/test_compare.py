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
            # The ODE inside the seeds' 99.9% t-interval: a 1-in-1000 false alarm per row.
            assert entry[what]["inside"], (entry["N"], entry["method"], what, entry[what])
    assert result["above_largest_eta"]["both_fail"]
    assert "| erf, N=500, eta=0.1, overlaps | T_escape |" in model.format_compare(result)
    assert (tmp_path / "compare-committee_machine.json").exists()
