"""Wide committee machines: the unit sums (``indexed_online_sgd``) against the unrolled,
compiled systems at random realisable overlaps, and wide learning curves against the
hand-typed reference (``reference.py``, Saad & Solla's closed forms, integrated apart)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import brentq

from reduced_odes import SolverConfig, load_system, solve
from reduced_odes._backend import native_available
from reduced_odes.models.committee_machine import MODEL, CommitteeParams, overlap_state

from .reference import _integrate, generalisation_error, reference_solution, unpack


def _systems(activation: str, K: int, M: int, eta: float):
    """The unrolled system and the unit sums of the same flow."""
    structure = {"K": K, "M": M, "finite_eta": eta > 0}
    return (load_system(MODEL, activation, structure=structure),
            load_system(MODEL, activation, structure={**structure, "indexed": True}))


def _realisable(rng, K: int, M: int) -> tuple[np.ndarray, np.ndarray]:
    """Overlaps of a random network: ``W`` in the span of the teachers (``T = I``) and ``K``
    further orthonormal directions."""
    W = rng.uniform(-0.7, 0.7, (K, M + K))
    return W @ W.T, W[:, :M]


@pytest.mark.parametrize("activation, K, M, eta, noise", [
    ("erf", 2, 2, 0.3, 0.4), ("erf", 3, 2, 0.0, 0.0), ("erf", 2, 3, 0.0, 0.0),
    ("relu", 2, 2, 0.0, 0.0), ("relu", 2, 1, 0.3, 0.4), ("linear", 3, 2, 0.3, 0.4)])
def test_unit_sums_equal_the_unrolled_system(activation, K, M, eta, noise):
    unrolled, indexed = _systems(activation, K, M, eta)
    assert indexed.path is None and indexed.state_names == unrolled.state_names
    assert indexed.observable_names == unrolled.observable_names
    assert indexed.domain_labels == unrolled.domain_labels
    assert_same_flow(indexed, unrolled, np.random.default_rng(7 * K + M), K, M, eta, noise)


def assert_same_flow(system, reference, rng, K: int, M: int, eta: float, noise: float) -> None:
    """``system``'s rates, Jacobian and observables equal ``reference``'s at five random
    realisable overlaps."""
    for _ in range(5):
        state = overlap_state(*_realisable(rng, K, M))
        y = np.array([state[name] for name in reference.state_names])
        # The same closed forms summed in another order: round-off, ~1e-15.
        np.testing.assert_allclose(system.rhs(0.0, y, eta, noise),
                                   reference.rhs(0.0, y, eta, noise), rtol=1e-12, atol=1e-14)
        # The analytic Jacobian (chain rule through the kernels' entries) against the
        # derived one (or the other path's): round-off again.
        np.testing.assert_allclose(system.jac(0.0, y, eta, noise),
                                   np.array(reference.jac(0.0, y, eta, noise), dtype=float),
                                   rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(system.observables(y, eta, noise),
                                   reference.observables(y, eta, noise), rtol=1e-12, atol=1e-14)


def test_unit_sums_jacobian_equals_finite_differences_when_wide():
    """Beyond the unrolled sizes there is no derived Jacobian: central differences instead."""
    system = load_system(MODEL, "erf", structure=MODEL.structure(CommitteeParams(K=7, M=3,
                                                                                 eta=0.2)))
    Q, R = _realisable(np.random.default_rng(3), 7, 3)
    state = overlap_state(Q, R)
    y = np.array([state[name] for name in system.state_names])
    h = 1e-6
    columns = [(system.rhs(0.0, y + h * e, 0.2, 0.1) - system.rhs(0.0, y - h * e, 0.2, 0.1))
               / (2 * h) for e in np.eye(len(y))]
    # Central differences at h = 1e-6: truncation ~h^2 and round-off ~1e-16/h, ~1e-9 at most.
    np.testing.assert_allclose(system.jac(0.0, y, 0.2, 0.1), np.array(columns).T, atol=1e-8)


def _wide_case(K: int, M: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A small random start (``q ~ 0.2``, ``r ~ 0.01``), realisable: ``W = 0.02 * A [B; Z]``
    plus a common part, so that the run crosses a plateau and escapes."""
    rng = np.random.default_rng(seed)
    W = 0.1 * rng.standard_normal((K, M + K)) / np.sqrt(M + K)
    W[:, M:] += 0.45 * np.eye(K)
    return W @ W.T, W[:, :M]


def _reference_curve(K: int, M: int, backend: str = "python") -> None:
    Q0, R0 = _wide_case(K, M, K + M)
    start = generalisation_error(Q0, R0, np.eye(M), "erf")
    times = np.array([1.0, 10.0, 50.0, 100.0, 200.0])
    traj = solve(CommitteeParams(K=K, M=M), "erf", SolverConfig(t_end=400.0, backend=backend),
                 model=MODEL, initial=overlap_state(Q0, R0))
    assert traj.fallback_reason is None
    ours = traj.observables_at(times)["eps_g"]
    expected = reference_solution(Q0, R0, K, M, 0.0, t_eval=np.concatenate([[0.0], times]))
    # Two integrations at rtol 1e-10 (LSODA) and 1e-11: global errors ~1e-9, relative.
    np.testing.assert_allclose(ours, expected.eps_g[1:], rtol=1e-7, atol=1e-12)
    level = 0.01 * start

    def reference_minus(t, y):
        return generalisation_error(*unpack(y, K, M), np.eye(M), "erf") - level

    reference_minus.terminal, reference_minus.direction = True, -1
    t_reference = float(_integrate(Q0, R0, K, M, 0.0, 0.0, "erf", np.eye(M), 400.0,
                                   events=reference_minus).t_events[0][0])
    t_ours = brentq(lambda t: float(traj.observables_at([t])["eps_g"][0]) - level,
                    0.5 * t_reference, min(2 * t_reference, traj.t[-1]), xtol=1e-12)
    # The crossing of two accurate curves falling at a rate ~eps_g: ~1e-9 relative.
    assert abs(t_ours / t_reference - 1) < 1e-7, (t_ours, t_reference)


def test_erf_six_by_six_early_curve_equals_the_reference():
    """The default run's width beyond the unrolled sizes: the early curve (to t = 20)."""
    K = M = 6
    Q0, R0 = _wide_case(K, M, K + M)
    times = np.array([0.5, 2.0, 20.0])
    traj = solve(CommitteeParams(K=K, M=M), "erf", SolverConfig(t_end=20.0), model=MODEL,
                 initial=overlap_state(Q0, R0))
    expected = reference_solution(Q0, R0, K, M, 0.0, t_eval=np.concatenate([[0.0], times]))
    # Two integrations at rtol 1e-10 (LSODA) and 1e-11: global errors ~1e-9, relative.
    np.testing.assert_allclose(traj.observables_at(times)["eps_g"], expected.eps_g[1:],
                               rtol=1e-7, atol=1e-12)


#: K = M = 10 to 1 % of the start: ~30 s of CPU (the reference's integration included).
@pytest.mark.slow
def test_erf_ten_by_ten_equals_the_reference():
    _reference_curve(10, 10)


@pytest.mark.slow
def test_erf_twenty_by_ten_equals_the_reference():
    _reference_curve(20, 10)


#: The same on the native backend (the unit sums' numba loops): numba itself is optional.
_NATIVE = pytest.mark.skipif(not native_available(), reason="numba is not installed")


@pytest.mark.slow
@_NATIVE
def test_erf_ten_by_ten_natively_equals_the_reference():
    _reference_curve(10, 10, "numba")


@pytest.mark.slow
@_NATIVE
def test_erf_twenty_by_ten_natively_equals_the_reference():
    _reference_curve(20, 10, "numba")
