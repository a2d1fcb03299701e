"""The reduced loss and gradient against Monte Carlo of the unreduced model (full matrices)."""

import math

import numpy as np
import pytest

from reduced_odes.models.two_stage_features import TwoStageParams
from reduced_odes.models.two_stage_features.unreduced import aligned_weights, estimate

from . import reference as ref

#: Monte-Carlo agreement in standard errors: 4 for the loss (a handful of points),
#: 4.5 for the ~2 d^2 gradient entries (more comparisons, same false-alarm budget).
LOSS_SE, GRADIENT_SE = 4.0, 4.5

POINTS = [  # (params, v, (k_P, k_Q), (q_P, q_Q)); on the manifold, k != q
    (TwoStageParams(N=4, d_P=1, d_Q=2), 1.1, (0.6, 0.9), (0.8, 0.5)),
    (TwoStageParams(N=7, pi_P=0.3, gamma=1.4, mu=0.8, d_P=3, d_Q=3), 0.9, (0.7, 1.2), (0.5, 0.6)),
    (TwoStageParams(N=2, pi_P=0.7, gamma=0.6, mu=1.5, d_P=2, d_Q=5), 1.3, (1.1, 0.4), (0.9, 0.7)),
]


@pytest.mark.parametrize("point", [POINTS[0], pytest.param(POINTS[1], marks=pytest.mark.slow),
                                   pytest.param(POINTS[2], marks=pytest.mark.slow)],
                         ids=["small", "skewed", "wide"])
def test_loss_matches_closed_form(point):
    p, v, k, q = point
    W_K, W_Q = aligned_weights(p, k, q)
    e = estimate(p, v, W_K, W_Q, prompts=10**6, seed=11)
    predicted = sum(ref.losses(p, v, k[0] * q[0], k[1] * q[1]))
    assert abs(e.loss - predicted) <= LOSS_SE * e.loss_se, (e.loss, predicted, e.loss_se)


@pytest.mark.slow
def test_negative_b_has_the_same_loss_and_negative_a_does_not():
    p, v, k, q = POINTS[0]
    W_K, W_Q = aligned_weights(p, (k[0], -k[1]), q)
    e = estimate(p, v, W_K, W_Q, prompts=10**6, seed=12)
    assert abs(e.loss - sum(ref.losses(p, v, k[0] * q[0], k[1] * q[1]))) <= LOSS_SE * e.loss_se
    W_K, W_Q = aligned_weights(p, (-k[0], k[1]), q)
    e = estimate(p, v, W_K, W_Q, prompts=10**6, seed=13)
    rho_P, s_P = ref.rho_s(p.pi_P, p.N, 2)
    A = v * p.gamma**2 * k[0] * q[0]
    flipped_P = p.pi_P / 2 * (1 + 2 * rho_P * A + s_P * A**2)
    predicted = flipped_P + ref.losses(p, v, 0.0, k[1] * q[1])[1]
    assert abs(e.loss - predicted) <= LOSS_SE * e.loss_se


@pytest.mark.slow
def test_linear_activation_loss_matches_control():
    p, v, k, q = POINTS[1]
    W_K, W_Q = aligned_weights(p, k, q)
    e = estimate(p, v, W_K, W_Q, prompts=10**6, seed=14, activation="linear")
    predicted = sum(ref.linear_losses(p, v, k[0] * q[0], k[1] * q[1]))
    assert abs(e.loss - predicted) <= LOSS_SE * e.loss_se


def _reduced_gradient(p, v, k, q):
    """Spec section 4: dL/dk_P etc. from the closed form, by central differences."""
    def loss(state):
        vv, kP, qP, kQ, qQ = state
        return sum(ref.losses(p, vv, kP * qP, kQ * qQ))
    x = np.array([v, k[0], q[0], k[1], q[1]])
    h = 1e-6
    return np.array([(loss(x + h * e) - loss(x - h * e)) / (2 * h) for e in np.eye(5)])


def test_unreduced_gradient_is_reduced_gradient_over_metric():
    p, v, k, q = POINTS[1]
    W_K, W_Q = aligned_weights(p, k, q)
    e = estimate(p, v, W_K, W_Q, prompts=10**6, seed=15)
    g = _reduced_gradient(p, v, k, q)
    d = p.d_P + p.d_Q
    per_entry = [g[1] / p.d_P] * p.d_P + [g[3] / p.d_Q] * p.d_Q
    expected_K = np.diag(per_entry)
    expected_Q = np.diag([g[2] / p.d_P] * p.d_P + [g[4] / p.d_Q] * p.d_Q)
    assert abs(e.grad_v - g[0]) <= GRADIENT_SE * e.grad_v_se
    for measured, se, expected in ((e.grad_K, e.grad_K_se, expected_K),
                                   (e.grad_Q, e.grad_Q_se, expected_Q)):
        gap = np.abs(measured - expected)
        # Entries with zero spread (the cross blocks, exactly 0 by ReLU'(0) = 0) must be exact.
        z = np.where(se > 0, gap / np.where(se > 0, se, 1.0), np.where(gap == 0, 0.0, np.inf))
        assert z.max() <= GRADIENT_SE, (z.max(), np.unravel_index(z.argmax(), (d, d)))
    # The check can fail: the gradient is not the metric-free one (factor d_P on the P block).
    assert abs(e.grad_K[0, 0] - g[1]) > GRADIENT_SE * e.grad_K_se[0, 0]


def test_spectrum_on_manifold_is_a_and_b():
    p = TwoStageParams(d_P=2, d_Q=3)
    W_K, W_Q = aligned_weights(p, (0.3, 0.7), (0.5, 0.2))
    eig = np.sort(np.linalg.eigvals(W_K.T @ W_Q).real)
    assert eig.tolist() == pytest.approx([0.14] * 3 + [0.15] * 2, abs=1e-15)
    assert math.isclose(eig[0], 0.7 * 0.2)
