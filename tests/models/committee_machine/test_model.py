"""The committee machine's phases agree across integrators and backends, from given overlaps."""

from __future__ import annotations

import pytest

from reduced_odes import SolverConfig, solve
from reduced_odes.models.committee_machine import MODEL, CommitteeParams, overlap_state

#: A start that is not the model's default: unequal norms and a small, irregular asymmetry.
START = overlap_state(Q=[[0.2, 0.0], [0.0, 0.3]], R=[[1e-3, 2e-3], [1.5e-3, 1e-3]])


def _phases(eta: float, config: SolverConfig) -> dict:
    return solve(CommitteeParams(eta=eta), "erf", config, model=MODEL, initial=START).phases


@pytest.mark.parametrize("eta", [0.0, 0.1])
def test_lsoda_and_radau_agree(eta):
    lsoda, radau = _phases(eta, SolverConfig()), _phases(eta, SolverConfig(method="Radau"))
    for name, value in lsoda.items():
        # Two integrators at rtol 1e-10: the phases' relative condition is O(10).
        assert abs(radau[name] / value - 1) < 1e-8, (name, value, radau[name])


@pytest.mark.parametrize("eta", [0.0, pytest.param(0.1, marks=pytest.mark.slow)])
def test_pure_and_native_backends_agree(eta):
    pure, native = _phases(eta, SolverConfig()), _phases(eta, SolverConfig(backend="numba"))
    for name, value in pure.items():
        # The same bound as between integrators (the native BDF against LSODA).
        assert abs(native[name] / value - 1) < 1e-8, (name, value, native[name])
