"""Spectral ablation S5 (spec 7.6): the reduced losses against Monte Carlo on full matrices."""

import numpy as np
import pytest

from reduced_odes import solve
from reduced_odes.models.two_stage_features import TwoStageParams
from reduced_odes.models.two_stage_features.ablation import ablate, ablated_estimate, ablated_losses
from reduced_odes.models.two_stage_features.unreduced import aligned_weights

P = TwoStageParams(d_P=2, d_Q=4, N=16, sigma=1e-2)
#: Spec 3 checks: Monte Carlo within 4 standard errors.
SE = 4.0


@pytest.fixture(scope="module")
def converged():
    final = solve(P).final
    W_K, W_Q = aligned_weights(P, (final["k_P"], final["k_Q"]), (final["q_P"], final["q_Q"]))
    return final, W_K.T @ W_Q


def test_ablation_classifies_eigenvectors_by_subspace(converged):
    _, W = converged
    rng = np.random.default_rng(0)
    rotation = np.linalg.qr(rng.standard_normal((P.d_Q, P.d_Q)))[0]
    mixed = W.copy()
    # A semantic block with distinct eigenvalues along rotated (not coordinate) directions.
    spread = np.diag(W[P.d_P:, P.d_P:]) * np.linspace(0.5, 1.5, P.d_Q)
    mixed[P.d_P:, P.d_P:] = rotation @ np.diag(spread) @ rotation.T
    kept = ablate(mixed, P.d_P, "P")
    # Rounding of one eigendecomposition of a 6x6 matrix.
    assert np.allclose(kept[:P.d_P, :], 0.0, atol=1e-12)
    assert np.allclose(kept[P.d_P:, P.d_P:], mixed[P.d_P:, P.d_P:], atol=1e-12)


@pytest.mark.parametrize("block", ["P", "Q"])
def test_ablated_losses_match_monte_carlo(converged, block):
    final, W = converged
    reduced = ablated_losses(P, final)[block]
    estimate = ablated_estimate(P, final["v"], ablate(W, P.d_P, block), prompts=100_000, seed=7)
    for name in ("P", "Q"):
        mean, se = estimate[name]
        assert abs(mean - reduced[f"L_{name}"]) <= SE * se, (name, mean, se, reduced)
    level = P.pi_P / 2 if block == "P" else P.pi_Q / 2
    assert reduced[f"L_{block}"] == pytest.approx(level, rel=1e-12)  # exact: no attention left
