"""The unit sums' native twin (numba loops, ``reduced_odes._native._unit_sums``) against the
pure unit sums (NumPy batches) and the unrolled, compiled system, at random realisable
overlaps; compiled once per activation, whatever the width; and a wide run on the numba
backend against the hand-typed reference (``reference.py``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from reduced_odes import SolverConfig, load_system, solve
from reduced_odes._backend import native_available
from reduced_odes.models.committee_machine import MODEL, CommitteeParams, overlap_state

from ...engine._numba_cache import compiled_in_order
from .reference import reference_solution
from .test_widths import _realisable, _wide_case, assert_same_flow

#: One worker: the tests share two generated modules (~10 to 17 s of numba each, cold), which a
#: second worker would wait for, or compile again.
pytestmark = [pytest.mark.skipif(not native_available(), reason="numba is not installed"),
              pytest.mark.xdist_group("committee_machine-native-unit-sums")]


def _native(system):
    from reduced_odes._native._unit_sums import native_structured

    return native_structured(system.native)


def _state(system, Q, R) -> np.ndarray:
    state = overlap_state(Q, R)
    return np.array([state[name] for name in system.state_names])


#: erf's learning-rate module (its four-point kernels over every coincidence pattern) is
#: about a minute of numba compile: the slow run's.  The default run holds the same loops with
#: the learning-rate term through the linear activation, and erf's kernels without it.
ERF_ETA = pytest.mark.slow


@pytest.mark.parametrize("activation, K, M, eta, noise", [
    ("linear", 2, 2, 0.3, 0.4), ("erf", 3, 2, 0.0, 0.4), ("erf", 5, 4, 0.0, 0.0),
    pytest.param("erf", 2, 2, 0.3, 0.4, marks=ERF_ETA),
    pytest.param("erf", 7, 3, 0.2, 0.1, marks=ERF_ETA),
    pytest.param("erf", 4, 6, 0.5, 0.3, marks=ERF_ETA)])
def test_native_unit_sums_equal_the_pure_ones(activation, K, M, eta, noise):
    pure = load_system(MODEL, activation, structure={"K": K, "M": M, "finite_eta": eta > 0,
                                                     "indexed": True})
    native = _native(pure)
    assert native.state_names == pure.state_names
    assert native.observable_names == pure.observable_names
    # Both sum the same closed forms: round-off (assert_same_flow's tolerances).
    assert_same_flow(native, pure, np.random.default_rng(K + 10 * M), K, M, eta, noise)


@pytest.mark.parametrize("activation, K, M, eta, noise", [
    pytest.param("erf", 2, 2, 0.3, 0.4, marks=ERF_ETA), ("erf", 3, 2, 0.0, 0.0),
    ("linear", 3, 2, 0.3, 0.4)])
def test_native_unit_sums_equal_the_unrolled_system(activation, K, M, eta, noise):
    structure = {"K": K, "M": M, "finite_eta": eta > 0}
    unrolled = load_system(MODEL, activation, structure=structure)
    native = _native(load_system(MODEL, activation, structure={**structure, "indexed": True}))
    assert_same_flow(native, unrolled, np.random.default_rng(3 * K + M), K, M, eta, noise)


def test_a_new_width_compiles_nothing():
    """One module per activation and learning-rate term, one machine-code signature of its
    rates and Jacobian for every width."""
    from reduced_odes._native._unit_sums import _module

    rng = np.random.default_rng(5)
    for K, M in [(2, 2), (12, 7), (5, 9)]:
        system = load_system(MODEL, "linear", structure={"K": K, "M": M, "finite_eta": True,
                                                         "indexed": True})
        native, y = _native(system), _state(system, *_realisable(rng, K, M))
        assert np.all(np.isfinite(native.jac(0.0, y, 0.1, 0.1)))
        assert np.all(np.isfinite(native.rhs(0.0, y, 0.1, 0.1)))
    module = _module("linear", True)
    assert len(module.rates.signatures) == 1 and len(module.jacobian.signatures) == 1
    # Another process skips the module's compile lock once ``loss`` is cached: it must be the
    # last compiled, or that process would compile the Jacobian again beside the first.
    order = compiled_in_order(Path(module.__file__), ("rates", "jacobian", "loss"))
    assert len(order) == 3 and order[-1] == "loss"


def test_erf_six_by_six_natively_equals_the_reference():
    """A width beyond the unrolled sizes on the numba backend: the early curve (to t = 20)."""
    K = M = 6
    Q0, R0 = _wide_case(K, M, K + M)
    times = np.array([0.5, 2.0, 20.0])
    traj = solve(CommitteeParams(K=K, M=M), "erf", SolverConfig(t_end=20.0, backend="numba"),
                 model=MODEL, initial=overlap_state(Q0, R0))
    assert traj.fallback_reason is None
    expected = reference_solution(Q0, R0, K, M, 0.0, t_eval=np.concatenate([[0.0], times]))
    # Two integrations at rtol 1e-10 (LSODA) and 1e-11: global errors ~1e-9, relative.
    np.testing.assert_allclose(traj.observables_at(times)["eps_g"], expected.eps_g[1:],
                               rtol=1e-7, atol=1e-12)
