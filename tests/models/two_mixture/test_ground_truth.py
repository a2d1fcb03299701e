"""Ground truth (spec section 7): the finite-width network by GD and SGD against the reduced
ODE started from the network's own moments, with the spec's bounds."""

import numpy as np
import pytest

from reduced_odes.models.two_mixture.ground_truth import (
    BOUNDS,
    ORDER_BAND,
    SETTING,
    compare,
    discrepancy,
    reduced_reference,
)
from reduced_odes.models.two_mixture.simulator import paired_random_net, population_loss
from reduced_odes.models.two_mixture.training import Batch, Record, gradients, train


@pytest.mark.parametrize("loss", ["square", "logistic"])
def test_gradient_is_the_derivative_of_the_population_loss(loss):
    rng = np.random.default_rng(4)
    net = paired_random_net(8, 0.7, 0.9, 5, 3, rng)
    net.Q += rng.normal(scale=0.3, size=net.Q.shape)  # off the mirror manifold: the general case
    net.K += rng.normal(scale=0.3, size=net.K.shape)
    other = paired_random_net(4, 0.5, 0.5, 5, 3, rng)  # a narrower network padded in the batch
    g = gradients(Batch.of([net, other]), loss, 1.3, 0.7)
    assert g.loss[1] == pytest.approx(population_loss(other, loss, 1.3, 0.7), abs=1e-15)  # rounding
    for name in "QKaW":
        values, gradient = getattr(net, name), getattr(g, name)[0]
        for index in np.ndindex(values.shape):
            old, h = values[index], 1e-6
            values[index] = old + h
            up = population_loss(net, loss, 1.3, 0.7)
            values[index] = old - h
            down = population_loss(net, loss, 1.3, 0.7)
            values[index] = old
            # Central difference: O(h^2) = 1e-12 truncation, ~1e-10 cancellation at h = 1e-6.
            assert (up - down) / (2 * h) == pytest.approx(gradient[index], abs=1e-8), (name, index)


def test_small_width_gradient_descent_follows_the_reduced_ode():
    """m = 32, eta = 0.01 over stages 1 and 2: every spec bound of the GD check."""
    net = paired_random_net(32, SETTING.sigma, SETTING.sigma_att, SETTING.d_att, SETTING.d_val,
                            np.random.default_rng(3))
    ref = reduced_reference(net, "square", SETTING, 90.0)
    assert ref["T2"] < 90.0
    (record,) = train([net], "square", SETTING.mu, SETTING.kappa, 0.01, 90.0)
    errors = discrepancy(record, ref)
    for key in ("A", "ell", "alignment"):
        assert errors[key] <= BOUNDS["GD"][key], (key, errors)
    assert max(errors["T1"], errors["T2"]) <= BOUNDS["GD"]["T"], errors
    # The alignment rises from about 1/d_val during stage 1 (spec P1).
    assert record.alignment[0] < 0.5 and record.alignment[-1] > 0.99


def test_a_wrong_trajectory_breaks_the_bounds():
    t = np.linspace(0.0, 10.0, 11)
    ref = {"t": t, "A": t / 10, "ell": 1e-3 * np.exp(t), "alignment": 0.5 + 0 * t,
           "T1": 5.0, "T2": 9.0}
    shifted = Record(1.0, t / 10 + 0.02, 1e-3 * np.exp(t) * 1.03, 0.5 + 0 * t)
    errors = discrepancy(shifted, ref)
    assert errors["A"] > BOUNDS["GD"]["A"] and errors["ell"] > BOUNDS["GD"]["ell"]
    assert errors["T1"] > BOUNDS["GD"]["T"]  # A reaches 1/2 two steps early


@pytest.mark.slow
def test_quick_comparison_meets_every_bound():
    result = compare(quick=True)
    failed = [r for r in result["width"] + result["step"] + result["sgd"] if not r["passed"]]
    assert not failed, failed
    for order in result["order"].values():
        assert ORDER_BAND[0] <= order["T2"] <= ORDER_BAND[1], order  # GD discrepancy is O(eta)
