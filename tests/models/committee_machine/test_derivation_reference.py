"""The derived committee machine against the field's hand-typed ODE (``reference.py``, Saad &
Solla / Goldt et al.) and against Goldt's published nn2pp, from the nn2pp runs' overlaps."""

from __future__ import annotations

import math

import numpy as np
import pytest

from reduced_odes import SolverConfig, load_system, solve
from reduced_odes.models.committee_machine import MODEL, CommitteeParams, overlap_state

from . import reference as hand_typed

#: Larger erf systems with the learning-rate term derive for ~30 s each: slow.
_LARGE = pytest.mark.slow


@pytest.mark.parametrize("activation, K, M, eta, noise", [
    (activation, K, M, eta, noise)
    for activation in ("erf", "linear") for K, M in ((2, 2), (3, 2), (2, 3))
    for eta, noise in ((0.0, 0.0), (0.3, 0.4))
    if not (activation == "erf" and eta > 0 and (K, M) != (2, 2))] + [
    pytest.param("erf", 3, 2, 0.3, 0.4, marks=_LARGE),
    pytest.param("erf", 2, 3, 0.3, 0.4, marks=_LARGE)])
def test_derived_rates_equal_the_hand_typed_ode(activation, K, M, eta, noise):
    rng = np.random.default_rng(K * 10 + M)
    system = load_system(MODEL, activation,
                         structure=MODEL.structure(CommitteeParams(K=K, M=M, eta=eta)))
    for _ in range(5):
        W = rng.uniform(-0.7, 0.7, (K, M + K))  # realisable overlaps, T = I
        Q, R = W @ W.T, W[:, :M]
        state = overlap_state(Q, R)
        y = np.array([state[name] for name in system.state_names])
        expected = hand_typed.rhs(hand_typed.pack(Q, R), K, M, eta, noise, activation=activation)
        # Both are float64 evaluations of the same closed forms: round-off, ~1e-15.
        np.testing.assert_allclose(system.rhs(0.0, y, eta, noise), expected, rtol=1e-11,
                                   atol=1e-13)


@pytest.mark.parametrize("case", hand_typed.CASES)
@pytest.mark.parametrize("eta", [0.0, 0.1])
def test_t_escape_equals_the_independent_integration(case, eta):
    c = hand_typed.reference_case(case)
    traj = solve(CommitteeParams(K=c["K"], M=c["M"], eta=eta), "erf", model=MODEL,
                 initial=overlap_state(c["Q0"], c["R0"]))
    reference = hand_typed.t_escape(c["Q0"], c["R0"], c["K"], c["M"], eta)
    # Two integrations at rtol 1e-10 (LSODA) and 1e-11: their phase times agree to ~1e-9.
    assert abs(traj.phases["T_escape"] / reference - 1) < 1e-8, (traj.phases, reference)
    # The plateau level is the same fixed point: eps*(eta) of both.
    level = hand_typed.symmetric_fixed_point(c["K"], c["M"], eta)[2]
    assert abs(traj.phases["T_escape"] - hand_typed.crossing_time(traj.t, traj.series["eps_g"],
                                                       level / 2)) < 1e-3 * reference


@pytest.mark.parametrize("case", hand_typed.CASES)
def test_t_escape_equals_nn2pp(case):
    """At eta = 0.1, nn2pp's forward-Euler T_escape extrapolated to dt -> 0 (Richardson on its
    two finest steps); at eta -> 0, its line through eta = 0.01 and 0.001 (it cannot run at 0)."""
    c = hand_typed.reference_case(case)
    start = overlap_state(c["Q0"], c["R0"])
    ours = {eta: solve(CommitteeParams(eta=eta), "erf", model=MODEL,
                       initial=start).phases["T_escape"] for eta in (0.0, 0.1)}
    escape = hand_typed.nn2pp_escape
    richardson = 2 * escape(case, 0.1, 0.0025) - escape(case, 0.1, 0.005)
    # Richardson leaves O(dt^2) ~ 1e-8, and the printed digits (x3).
    assert abs(richardson - ours[0.1]) < 3 * hand_typed.PRINTED, (richardson, ours[0.1])
    T1, T2 = escape(case, 0.01, 0.01), escape(case, 0.001, 0.01)
    at_zero = T2 - (T1 - T2) * 0.001 / (0.01 - 0.001)
    # The printed digits, weighed by 10/9 and 1/9 in the extrapolation; O(eta^2) ~ 1e-6.
    assert abs(at_zero - ours[0.0]) < 2 * hand_typed.PRINTED, (at_zero, ours[0.0])


@pytest.mark.parametrize("eta", [0.0, 0.1])
def test_learning_curve_equals_the_independent_integration(eta):
    c = hand_typed.reference_case(hand_typed.CASES[0])
    times = np.geomspace(1.0, 300.0, 25)
    traj = solve(CommitteeParams(eta=eta), "erf", SolverConfig(t_end=300.0), model=MODEL,
                 initial=overlap_state(c["Q0"], c["R0"]))
    ours = traj.observables_at(times)["eps_g"]
    reference = hand_typed.reference_solution(c["Q0"], c["R0"], 2, 2, eta, t_eval=times).eps_g
    # Global errors of two rtol-1e-10/1e-11 integrations, amplified near the escape (x ~30).
    np.testing.assert_allclose(ours, reference, rtol=1e-7, atol=1e-12)
    assert math.isfinite(traj.phases["T_escape"])
