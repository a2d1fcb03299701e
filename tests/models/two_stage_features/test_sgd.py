"""Ground truth (spec 7.8): plain SGD on the unreduced model against the reduced ODE."""

import math

import numpy as np
import pytest

from reduced_odes import solve
from reduced_odes.models.two_stage_features import TwoStageParams
from reduced_odes.models.two_stage_features.ground_truth import (
    SETUP,
    compare,
    format_compare,
    run_seed,
)
from reduced_odes.models.two_stage_features.sgd import initial_weights
from reduced_odes.models.two_stage_features.unreduced import (
    aligned_weights,
    batch_gradient,
    sample_prompts,
)

P = TwoStageParams(sigma=1e-2, **SETUP)


def test_aligned_gradient_has_no_cross_blocks():
    rng = np.random.default_rng(3)
    W_K, W_Q = aligned_weights(P, (0.7, 0.4), (0.9, 0.3))
    _, _, grad_K, grad_Q = batch_gradient(sample_prompts(rng, 256, P), 1.2, W_K, W_Q)
    d_P = P.d_P
    for grad in (grad_K, grad_Q):
        # Spec 2: with ReLU'(0) = 0 every cross-type score is exactly 0, so these blocks are 0.
        assert np.all(grad[:d_P, d_P:] == 0.0) and np.all(grad[d_P:, :d_P] == 0.0)
        assert np.any(grad[:d_P, :d_P] != 0.0) and np.any(grad[d_P:, d_P:] != 0.0)


def test_starts_have_the_spec_scales():
    rng = np.random.default_rng(0)
    d = P.d_P + P.d_Q
    W_K, W_Q = initial_weights(P, "perturbed", rng)
    assert not np.allclose(W_K, W_Q)
    # 0.3 G/sqrt(d) has entries of sd 0.3/sqrt(6) ~ 0.12: the perturbation stays below 0.6 sigma.
    assert np.max(np.abs(W_K - P.sigma * np.eye(d))) < 0.6 * P.sigma
    W_K, _ = initial_weights(P, "random", np.random.default_rng(1))
    # 36 i.i.d. N(0, sigma^2) entries: the sample sd is within 35% of sigma.
    assert np.std(W_K) == pytest.approx(P.sigma, rel=0.35)
    with pytest.raises(ValueError, match="init='diagonal'"):
        initial_weights(P, "diagonal", rng)


def test_one_sgd_seed_follows_stage_one():
    t_end = 1.1 * solve(P).phases["T_P@0.9"]
    result = run_seed(("aligned", P.sigma, 0, t_end))
    ode = solve(P).phases
    # Spec 7.8: SGD stage times within 2% of the ODE (one seed: noise ~0.3% of T_P).
    assert result["times"]["T_P"] == pytest.approx(ode["T_P"], rel=0.02)
    assert math.isnan(result["times"]["T_Q"])  # Stage II has not started
    for key in ("a", "v"):
        # Spec 7.8: max deviation within 5% of the range of the ODE trajectory.
        assert result["deviation"][key] < 0.05, key


@pytest.mark.slow
def test_quick_comparison_passes_and_random_start_keeps_two_stages():
    result = compare(quick=True)
    table = format_compare(result)
    assert result["passed"], table
    shifts = result["random_start"]["relative_shift"]
    # Spec 7.8: random starts learn syntax earlier and semantics later than the aligned ODE.
    assert shifts["T_P"]["mean"] < 0 < shifts["T_Q"]["mean"], table
