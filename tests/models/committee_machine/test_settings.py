"""What the committee machine accepts, and where its phases are read: a start no network
realises, one student and one teacher, the linear network's learning rate, the phase
thresholds as options of ``solve`` (issue 34, defects 1, 10, 13, 16)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from reduced_odes import ParameterError, SolverConfig, solve
from reduced_odes._backend import native_available
from reduced_odes.cli import main
from reduced_odes.models.committee_machine import MODEL, CommitteeParams
from reduced_odes.models.committee_machine.numerics import (
    largest_learning_rate,
    unspecialised_fixed_point,
)
from reduced_odes.models.committee_machine.params import PhaseLevels, overlap_state

ROOT = Path(__file__).resolve().parents[3]
PLAIN = SolverConfig(cross_check=False)


def _network_overlaps(K: int, M: int, N: int = 50, seed: int = 0):
    """``(Q, R)`` of real weight vectors: students ``W`` at random, teachers ``B`` orthogonal
    with ``|B_n|^2 = N`` (``T = I``)."""
    rng = np.random.default_rng(seed)
    W = rng.normal(scale=0.3, size=(K, N))
    B = np.sqrt(N) * np.linalg.qr(rng.normal(size=(N, M)))[0].T
    return W @ W.T / N, W @ B.T / N


# -- defect 1: a start that no network realises ------------------------------------------
@pytest.mark.parametrize("K, M", [(2, 2), (3, 2), (2, 3)])
def test_overlaps_of_real_networks_are_accepted_and_others_refused(K, M):
    Q, R = _network_overlaps(K, M)
    params = CommitteeParams(K=K, M=M)
    MODEL.check_start(params, "erf", overlap_state(Q, R))  # realised by construction
    # Below its teacher part: Q_11 < (R R^T)_11 makes the Schur complement's first
    # diagonal entry negative, so no vectors have these overlaps.
    Q = Q.copy()
    Q[0, 0] = float((R @ R.T)[0, 0]) - 0.01
    with pytest.raises(ParameterError, match="realised by no network") as info:
        solve(params, "erf", PLAIN, initial=overlap_state(Q, R))
    assert "\n" not in str(info.value) and "allowed:" in str(info.value)


def test_the_learnt_state_on_the_edge_of_realisable_overlaps_is_a_start():
    # R = Q = I: the students are the teachers, the Gram matrix singular (rank M).
    params = CommitteeParams(K=2, M=2)
    traj = solve(params, "erf", PLAIN, initial=overlap_state(np.eye(2), np.eye(2)))
    assert traj.final["eps_g"] < 1e-12  # nothing to learn


# -- defect 13: one student, one teacher -------------------------------------------------
#: The phases are the model's hook's, the same on both backends; the numba run (a twin of
#: its own, ~15 s of compile) is the slow run's.
@pytest.mark.parametrize("backend", ["python", pytest.param("numba", marks=[
    pytest.mark.skipif(not native_available(), reason="needs numba"), pytest.mark.slow])])
def test_one_student_and_one_teacher_read_no_plateau_phases(backend):
    traj = solve(CommitteeParams(K=1, M=1), "erf", SolverConfig(backend=backend))
    assert traj.phases == {}  # the unspecialised point is the teacher itself: no plateau
    assert traj.final["eps_g"] < 1e-12


def test_one_student_and_one_teacher_exit_0(capsys):
    assert main(["solve", "--model", "committee_machine", "--K", "1", "--M", "1",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["phases"] == {}


# -- defect 16: the linear network's largest learning rate -------------------------------
@pytest.mark.parametrize("K", [2, 3])
def test_linear_learning_rate_is_checked_at_two_over_K(K):
    """For linear units the students' mean error ``D = sum_i w_i - sum_n B_n`` follows
    ``d|D|^2/dt = (K^2 eta - 2K) |D|^2`` under online SGD (derived by hand from the update
    ``w_i += eta/sqrt(N) (phi* - phi) x``): the flow settles below ``eta = 2/K`` and
    diverges above it."""
    edge = 2 / K
    below = CommitteeParams(K=K, M=K, eta=0.999 * edge)
    MODEL.check(below, "linear")
    rates = unspecialised_fixed_point(below, "linear").subspace.real
    # The decaying mode's rate is the closed form (round-off of the compiled Jacobian).
    assert np.min(np.abs(rates - (K**2 * below.eta - 2 * K))) < 1e-9
    with pytest.raises(ParameterError, match="2/K") as info:
        MODEL.check(CommitteeParams(K=K, M=K, eta=1.001 * edge), "linear")
    assert "eta=" in str(info.value) and "allowed:" in str(info.value)


def test_the_linear_perfect_student_loses_stability_at_the_same_learning_rate():
    # Its error mode has the same rate K^2 eta - 2K (the only other directions, along which
    # the students differ at a fixed sum, are marginal); bisected to 1e-12 on the Jacobian.
    assert largest_learning_rate(2, "linear") == pytest.approx(1.0, rel=1e-9)


def test_linear_learning_rate_beyond_two_over_K_exits_2(capsys):
    assert main(["solve", "--model", "committee_machine", "--activation", "linear",
                 "--eta", "1.01"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "eta=1.01" in err[0], err


# -- defect 10: where the phases are read ------------------------------------------------
def test_the_thresholds_are_options_of_solve(capsys):
    params = CommitteeParams(q0=0.5)
    levels = PhaseLevels(entry=0.05)
    expected = solve(params, "erf", PLAIN, levels).phases
    default = solve(params, "erf", PLAIN).phases
    assert expected["T_plateau"] > 5 * default["T_plateau"]  # 5% is much later than x2
    assert main(["solve", "--model", "committee_machine", "--q0", "0.5", "--entry", "0.05",
                 "--cross-check", "false", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["phases"] == expected
    assert document["thresholds"] == levels.as_dict()


@pytest.mark.parametrize("option, value", [("--entry", "0"), ("--escape", "1.5"),
                                           ("--specialised", "nan")])
def test_a_bad_threshold_exits_2_in_one_line(capsys, option, value):
    assert main(["solve", "--model", "committee_machine", option, value]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and option[2:] in err[0], err


def test_the_docs_state_the_code_s_thresholds():
    docs = (ROOT / "docs" / "committee_machine.md").read_text()
    row = next(line for line in docs.splitlines() if line.startswith("| phases |"))
    for name, value in PhaseLevels().as_dict().items():
        assert re.search(rf"`{name}` = {value:g}\b", row), (name, value, row)


@pytest.mark.parametrize("K, M", [(3, 2), (2, 3), (5, 5)])
def test_relu_with_a_learning_rate_beyond_its_width_is_refused_in_one_line(K, M, capsys):
    """ReLU's eta term beyond K + M = RELU_ETA_UNITS (a K = 3, M = 2 solve ran for over 20
    minutes) exits 2 before any derivation, naming eta, K, M and the allowed range."""
    from reduced_odes.models.committee_machine.params import RELU_ETA_UNITS

    argv = ["solve", "--model", "committee_machine", "--activation", "relu", "--eta", "0.1",
            "--K", str(K), "--M", str(M)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert f"K={K}" in err[0] and f"K + M <= {RELU_ETA_UNITS}" in err[0] and "eta=0.1" in err[0]
