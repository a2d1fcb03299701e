"""The tanh committee machine (numerical kernels, the unit sums) against an independent
quadrature of Saad & Solla's flow (``reference_tanh.py``)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.optimize import brentq

from reduced_odes import SolverConfig, solve
from reduced_odes.models.committee_machine import MODEL, CommitteeParams, overlap_state

from .reference import _i2, _i3, pack
from .reference_tanh import eps_g, i2, i3, rhs

#: A realisable start (W W^T with W = 0.5 I + small; R = W's teacher part), off the plateau.
Q0 = np.array([[0.3, 0.02], [0.02, 0.25]])
R0 = np.array([[0.1, 0.03], [0.02, 0.08]])


def test_quadrature_equals_erf_closed_forms():
    rng = np.random.default_rng(5)
    for _ in range(20):
        W = rng.uniform(-0.7, 0.7, (4, 4))
        C = W @ W.T
        for a, b, c in ((0, 1, 2), (0, 0, 1), (1, 2, 2), (3, 3, 3), (0, 1, 0)):
            # The trapezoidal rule's error here is ~1e-17; round-off of 1e4 terms ~1e-15.
            assert abs(i3(C, a, b, c, "erf") - float(_i3(C, a, b, c, "erf"))) < 1e-13
        assert abs(i2(C, 0, 1, "erf") - float(_i2(C, 0, 1, "erf"))) < 1e-13


def test_the_start_is_realisable():
    assert np.all(np.linalg.eigvalsh(Q0 - R0 @ R0.T) > 0)


@pytest.mark.slow
def test_tanh_learning_curve_equals_the_quadrature():
    K = M = 2
    y0 = pack(Q0, R0)
    times = np.array([1.0, 5.0, 20.0, 50.0])
    reference = solve_ivp(lambda t, y: rhs(y, K, M), (0.0, 200.0), y0, method="LSODA",
                          rtol=1e-11, atol=1e-13, dense_output=True)
    traj = solve(CommitteeParams(K=K, M=M), "tanh", SolverConfig(t_end=200.0), model=MODEL,
                 initial=overlap_state(Q0, R0))
    expected = [eps_g(reference.sol(t), K, M) for t in times]
    # Two integrations at rtol 1e-10 and 1e-11 of kernels exact to ~1e-10: ~1e-9 relative.
    np.testing.assert_allclose(traj.observables_at(times)["eps_g"], expected, rtol=1e-7)
    level = 0.01 * eps_g(y0, K, M)
    t_reference = brentq(lambda t: eps_g(reference.sol(t), K, M) - level, 0.0, 200.0,
                         xtol=1e-12)
    t_ours = brentq(lambda t: float(traj.observables_at([t])["eps_g"][0]) - level, 0.0,
                    traj.t[-1], xtol=1e-12)
    # As above: the falling curve's crossing carries the same relative error.
    assert abs(t_ours / t_reference - 1) < 1e-7, (t_ours, t_reference)
