"""The reduced loss against the unreduced finite-width network: exact 8-configuration sum
and Monte Carlo over sampled sequences (10^6 samples, within 4 standard errors)."""


import numpy as np
import pytest

from reduced_odes.models.two_mixture.numerics import phi
from reduced_odes.models.two_mixture.reduction import reduce_model
from reduced_odes.models.two_mixture.simulator import (
    configurations,
    labels,
    manifold_net,
    moments,
    monte_carlo_loss,
    paired_random_net,
    population_loss,
)


def derived_loss(loss, mu, kappa, m):
    r = reduce_model(loss)
    values = {r.mu: mu, r.kappa: kappa, **{s: m[s.name] for s in r.state}}
    return float(r.in_state(r.loss_Al).xreplace(values).evalf(20))


@pytest.mark.parametrize("loss, seed", [("square", 1), ("logistic", 2)])
def test_monte_carlo_at_random_manifold_points(loss, seed):
    rng = np.random.default_rng(seed)
    mu, kappa = rng.uniform(0.5, 2), rng.uniform(0.1, 1)
    net = manifold_net(rng.uniform(0.5, 3), rng.uniform(0.5, 3), rng.normal(size=3),
                       rng.normal(size=3), rng.normal(size=3))
    expected = derived_loss(loss, mu, kappa, moments(net))
    # The exact 8-configuration sum of the unreduced network: equal to rounding.
    assert abs(population_loss(net, loss, mu, kappa) - expected) < 1e-12
    mean, se = monte_carlo_loss(net, loss, mu, kappa, 10**6, rng)
    assert abs(mean - expected) < 4 * se, (mean, expected, se)  # 4 standard errors


@pytest.mark.parametrize("loss", ["square", "logistic"])
def test_random_direction_network_is_a_linear_readout(loss):
    """Off the swap manifold the pair identity still gives F = <zeta~, z>/2 exactly."""
    rng = np.random.default_rng(5)
    net = paired_random_net(64, 0.7, 0.9, 6, 4, rng)
    net.Q += rng.normal(scale=0.5, size=net.Q.shape)  # non-mirror heads: F is still paired
    zeta = net.a @ net.W / net.a.size
    configs = configurations()
    k, signs = configs[:, 0], configs[:, 1:].astype(float)
    query = 0.4 * net.Q[:, k][:, :, None] * net.K[:, None, 2:4]
    weights = np.exp(query - np.logaddexp(query[..., :1], query[..., 1:])).mean(axis=0)
    z = weights * signs * 1.3
    linear = np.mean(phi(loss, labels(configs) * 0.5 * (z @ zeta[:2])))
    assert abs(population_loss(net, loss, 1.3, 0.4) - linear) < 1e-12  # rounding only
    mean, se = monte_carlo_loss(net, loss, 1.3, 0.4, 10**6, rng)
    assert abs(mean - linear) < 4 * se  # 4 standard errors


@pytest.mark.slow
@pytest.mark.parametrize("loss", ["square", "logistic"])
def test_monte_carlo_ten_million(loss):
    rng = np.random.default_rng(9)
    net = manifold_net(2.0, 1.5, rng.normal(size=8), rng.normal(size=8), rng.normal(size=8))
    expected = derived_loss(loss, 1.0, 0.5, moments(net))
    mean, se = monte_carlo_loss(net, loss, 1.0, 0.5, 10**7, rng)
    assert abs(mean - expected) < 4 * se  # 4 standard errors
