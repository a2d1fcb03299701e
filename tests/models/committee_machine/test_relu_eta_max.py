"""ReLU's largest learning rate (issue 33 item 5): the plateau's fold in ``eta``, found by
the analysis layer's continuation on the derived flow, held against runs of the flow just
below and above it (learns below, runs away above), against the model's own search for the
plateau (the subspace's flow and Newton, another code path), and, slow-marked, against
online SGD of the network.  Also ``largest_learning_rate``'s refusals and its K = 3."""

from __future__ import annotations

import numpy as np
import pytest

from reduced_odes import DomainError, ParameterError, solve
from reduced_odes.models.committee_machine.claims import (
    FOLD_MARGIN,
    _fold_claims,
    _fold_measurement,
    verify_settings,
)
from reduced_odes.models.committee_machine.model import MODEL
from reduced_odes.models.committee_machine.numerics import (
    largest_learning_rate,
    plateau_fold,
    runaway_time,
    unspecialised_fixed_point,
)
from reduced_odes.models.committee_machine.params import CommitteeParams, initial_overlaps


@pytest.fixture(scope="module")
def eta_max() -> float:
    return plateau_fold(2, "relu")


def test_the_fold_is_where_the_plateau_stops_existing(eta_max):
    # The model's own search (the symmetric subspace's flow from small weights, then SciPy's
    # hybr; no continuation) finds a plateau just below and none just above.  1e-4 relative:
    # at the saddle-node the subspace's slowest rate is ~sqrt(distance), 1e-2 at 1e-4.
    below = CommitteeParams(eta=(1 - 1e-4) * eta_max)
    MODEL.check(below, "relu")
    assert unspecialised_fixed_point(below, "relu").attracts_in_subspace
    with pytest.raises(ParameterError, match="cannot be found"):
        MODEL.check(CommitteeParams(eta=(1 + 1e-4) * eta_max), "relu")
    # From another start of the continuation the same fold, to round-off (1e-12 relative:
    # the crossing eigenvalue is bisected on the arc to 1e-12).
    assert plateau_fold(2, "relu", start=1.0) == pytest.approx(eta_max, rel=1e-12)


def test_learns_below_the_fold_and_runs_away_above(eta_max):
    below = CommitteeParams(eta=(1 - FOLD_MARGIN) * eta_max)
    try:
        traj = solve(below, "relu", model=MODEL)
    except DomainError as error:  # ReLU stops near eps_g ~ 1e-9, every phase reached
        traj = error.trajectory
    # 1e-8: where the run stops, ReLU's kernels meet round-off on the overlaps' boundary.
    assert traj.final["eps_g"] < 1e-8 and np.isfinite(traj.phases["T_escape"])
    # Above: no plateau catches the flow from small weights; the norms pass 1e3 (measured
    # t = 56.7) instead of learning.
    assert runaway_time(CommitteeParams(eta=(1 + FOLD_MARGIN) * eta_max), "relu") < 200.0


def test_the_claim_is_on_the_full_grid_only_and_reads_its_measurement():
    assert not [s for s in verify_settings("default", ("erf", "relu"))[0]
                if s["kind"] == "activation_eta_max"]
    (setting,) = [s for s in verify_settings("full", ("erf", "relu"))[0]
                  if s["kind"] == "activation_eta_max"]
    rows = []
    _fold_claims([(setting, {"eta_max": 1.25, "eps_end_below": 2e-9, "T_escape_below": 98.0,
                             "runaway_above": 56.7})], lambda *a, **k: rows.append((a, k)))
    assert len(rows) == 2
    failing = []
    _fold_claims([(setting, {"eta_max": 1.25, "eps_end_below": 2e-9, "T_escape_below": 98.0,
                             "runaway_above": None})], lambda *a, **k: failing.append(k))
    assert failing[-1]["passed"] is False


@pytest.mark.slow
def test_the_full_grid_claim_holds():
    (setting,) = [s for s in verify_settings("full", ("relu",))[0]
                  if s["kind"] == "activation_eta_max"]
    result = _fold_measurement(setting)
    assert result["eps_end_below"] < 1e-8 and result["runaway_above"] is not None


@pytest.mark.slow
def test_sgd_learns_below_the_fold_and_diverges_above(eta_max):
    # Online SGD of the network (the exact overlap sampler, N = 1000, 4 seeds) from the
    # model's start: at 0.9 eta_max every seed learns (eps_g < 1e-6 at t = 300; the ODE's
    # run is at 4e-10 by t = 209), at 1.1 eta_max every seed's norms run away (> 1e3).
    from reduced_odes.models.committee_machine.ground_truth import train

    Q0, R0 = initial_overlaps(CommitteeParams())
    runs = {f: train("relu", Q0, R0, N=1000, eta=f * eta_max, times=[0.0, 300.0], seeds=4,
                     rng_seed=3, method="overlaps") for f in (0.9, 1.1)}
    assert np.all(runs[0.9].eps_g[:, -1] < 1e-6)
    assert np.all(runs[1.1].Q[:, -1, 0, 0] > 1e3)


def test_largest_learning_rate_reads_the_exact_point_when_newton_fails(monkeypatch):
    # Where Newton leaves the domain (K = 3 near the crossing: a math domain error), the
    # perfect student itself is read: at K = 2 the value then moves by round-off only
    # (1e-9: the exact point and Newton's differ by ~1e-14 in the state).
    from reduced_odes.models.committee_machine import numerics

    def fails(*args, **kwargs):
        raise ValueError("math domain error")

    monkeypatch.setattr(numerics, "specialised_point", fails)
    assert largest_learning_rate(2) == pytest.approx(2.306827696083485, rel=1e-9)


@pytest.mark.slow
def test_largest_learning_rate_answers_at_K_3():
    # It raised a math domain error: near the crossing the Jacobian is singular and Newton
    # left the domain.  The value is the crossing of the exact perfect student's Jacobian,
    # checked here by the sign of its growth rate 1e-6 (relative) on either side.
    from reduced_odes.models.committee_machine.numerics import _fixed_point, _perfect, system_for

    eta = largest_learning_rate(3)
    assert 1.0 < eta < 2.0
    for factor, sign in ((1 - 1e-6, -1), (1 + 1e-6, 1)):
        params = CommitteeParams(K=3, M=3, eta=factor * eta)
        point = _fixed_point(params, "erf", _perfect(system_for(params, "erf")))
        assert np.sign(np.max(point.eigenvalues.real)) == sign


@pytest.mark.parametrize(("K", "variant", "match"), [
    (0, "erf", "K=0"), (41, "erf", "K=41"), (2, "relu", "variant='relu'"),
    (2, "tanh", "K=2 with activation 'tanh'")])
def test_largest_learning_rate_refuses_in_one_line(K, variant, match):
    with pytest.raises(ParameterError, match=match) as info:
        largest_learning_rate(K, variant)
    message = str(info.value)  # the value, and the allowed range or choices, in one line
    assert ("allowed" in message or "[1, 40]" in message) and "\n" not in message


@pytest.mark.slow
def test_the_symmetric_flow_gives_the_fold_at_any_width(eta_max):
    """The fold from the symmetric flow with K as a number (a separate derivation, solved as
    a zero with a singular Jacobian) equals the full flow's by continuation at K = 2, and at
    K = 3, where the full flow's learning-rate term is refused for ReLU, online SGD (overlap
    sampler, N = 1000, 4 seeds) learns at 0.9 of it and runs away at 1.1 of it."""
    from reduced_odes.models.committee_machine.ground_truth import train
    from reduced_odes.models.committee_machine.numerics import symmetric_fold

    # Two solvers of the same fold (pseudo-arclength bisection, hybr on the extended
    # system): round-off, measured 7e-16.
    assert symmetric_fold(2) == pytest.approx(eta_max, rel=1e-12)
    fold = symmetric_fold(3)  # measured 0.9177408963
    Q0, R0 = initial_overlaps(CommitteeParams(K=3, M=3))
    runs = {f: train("relu", Q0, R0, N=1000, eta=f * fold, times=[0.0, 400.0], seeds=4,
                     rng_seed=3, method="overlaps") for f in (0.9, 1.1)}
    # Measured at t = 400: the slowest seed's eps_g 2.3e-6 below; every Q_11 > 1e260 above.
    assert np.all(runs[0.9].eps_g[:, -1] < 1e-4)
    assert not np.any(runs[1.1].Q[:, -1, 0, 0] < 1e3)  # NaN (overflowed) counts as run away
