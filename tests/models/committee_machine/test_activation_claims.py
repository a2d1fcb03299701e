"""The claims of activations without closed-form plateaus (issue 33 item 5): tanh's and
ReLU's plateau and escape at the fixed point found on their own derived flows, and an
over-parameterised noisy tanh student's final eps_g.  They live on the ``full`` grid: the
default grid (the main job's, whose data are committed) is unchanged."""

from __future__ import annotations

import pytest

from reduced_odes.models.committee_machine.claims import (
    GRIDS,
    claims,
    measure,
    verify_settings,
)

VARIANTS = ("erf", "relu", "linear", "tanh")


def test_the_new_claims_are_on_the_full_grid_only():
    default, _ = verify_settings("default", VARIANTS)
    assert {s["kind"] for s in default} == {"plateau", "escape", "eta", "eta_max", "noise",
                                           "learns"}
    full, _ = verify_settings("full", VARIANTS)
    extra = [s for s in full if s["kind"].startswith("activation_")]
    assert {(s["variant"], s["kind"]) for s in extra} == {
        ("tanh", "activation_plateau"), ("relu", "activation_plateau"),
        ("tanh", "activation_noise"), ("relu", "activation_eta_max")}
    assert all(s["K"] > s["M"] for s in extra if s["kind"] == "activation_noise")
    assert "activation_plateau" not in GRIDS["default"]


@pytest.mark.slow
def test_the_new_claims_hold():
    full, _ = verify_settings("full", VARIANTS)
    records = [{"setting": s, "result": measure(s)} for s in full
               if s["kind"].startswith("activation_")]
    rows = claims(records, VARIANTS)
    names = {row.name for row in rows}
    assert {"plateau of a trajectory at the flow's own fixed point (tanh, ReLU)",
            "escape time slope vs 1/lambda (tanh, ReLU)",
            "asymptotic eps_g with noise, K > M (tanh)"} <= names
    assert all(row.passed for row in rows), [(r.name, r.predicted, r.measured, r.error)
                                             for r in rows]


def test_the_committed_metadata_holds_no_new_tolerance():
    from reduced_odes.models.committee_machine.claims import ACTIVATION_TOLERANCES, verify_metadata

    # verify-default.json (committed) carries verify_metadata: it must not move.
    assert not set(ACTIVATION_TOLERANCES) & set(verify_metadata()["tolerances"])
