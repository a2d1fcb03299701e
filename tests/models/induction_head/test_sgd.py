"""Tests of the Monte-Carlo online-SGD simulator (reduced_odes._sgd).

The closed forms of spec section 5 and a loop-based transcription of the model
of spec sections 1-3 are typed in here independently of the package, as
references.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from reduced_odes.author import first_crossing
from reduced_odes.models.induction_head.attention import (
    ATTENTIONS,
    loss_and_grad,
    monte_carlo_loss,
    stage1_loss_and_grad,
)
from reduced_odes.models.induction_head.sgd import (
    SGDConfig,
    SGDTrajectory,
    _expected_loss_g4,
    simulate_sgd,
)

# --------------------------------------------------------------------------- #
# Independent references
# --------------------------------------------------------------------------- #


def _softmax(v):
    e = np.exp(np.asarray(v) - np.max(v))
    return e / e.sum()


def reference_losses(theta, x, alpha, wstar, attention):
    """Batch-mean (L_G4, L_IH), transcribed with loops from spec sections 1-3."""
    theta = list(theta)
    p1 = theta.pop(0) if len(theta) == 6 else math.inf
    wv1, p, wv2, wk, wq = theta
    B, L = x.shape
    lg4 = lih = 0.0
    for b in range(B):
        xs = [0.0] + list(x[b])  # xs[s] = x_s, x_0 = 0

        def h2(s, xs=xs):  # second component of h_s
            if math.isinf(p1):
                return xs[s - 1]
            if s == 1:
                return 0.0
            rho = _softmax([-p1 * (s - 1 - tau) for tau in range(1, s)])
            return sum(rho[tau - 1] * xs[tau] for tau in range(1, s))

        def attn(w, keys, xs=xs):
            logits = [w * xs[L] * k for k in keys]
            if attention == "exact":
                return _softmax(logits)
            if attention == "linear":
                return np.exp(logits) / L
            return np.exp(logits) / ((L - 2) * math.exp(w**2 * xs[L] ** 2 / 2))

        pi = _softmax([-p * (L - 1 - s) for s in range(1, L)])
        y1 = wv1 * sum(pi[s - 1] * h2(s) for s in range(1, L))
        A = attn(wk * wq, [h2(s) for s in range(2, L)])
        y2 = wv2 * sum(A[s - 2] * xs[s] for s in range(2, L))
        Astar = attn(wstar, [xs[s - 1] for s in range(2, L)])
        f2 = (1 - alpha) * sum(Astar[s - 2] * xs[s] for s in range(2, L))
        lg4 += 0.5 * (alpha * xs[L - 2] - y1) ** 2
        lih += 0.5 * (f2 - y2) ** 2
    return lg4 / B, lih / B


def closed_form_g4(wv1, p, L, alpha):
    """Spec section 5, 4-gram partial loss (p != 0)."""
    Z = (1 - math.exp(-(L - 1) * p)) / (1 - math.exp(-p))
    phi = 1 / Z
    psi = ((1 - math.exp(-2 * (L - 2) * p)) / (1 - math.exp(-2 * p))) / Z**2
    return 0.5 * (psi * wv1**2 - 2 * alpha * phi * wv1 + alpha**2)


def closed_form_ih(wv2, wkq, L, alpha, wstar, attention):
    """Spec section 5, induction-head partial loss under the two closures."""
    if attention == "linear":
        return (L - 2) / (2 * L**2) * (
            wv2**2 * (1 - 4 * wkq**2) ** -0.5
            - 2 * (1 - alpha) * wv2 * (1 - (wkq + wstar) ** 2) ** -0.5
            + (1 - alpha) ** 2 * (1 - 4 * wstar**2) ** -0.5
        )
    return 1 / (2 * (L - 2)) * (
        wv2**2 * (1 - 2 * wkq**2) ** -0.5
        - 2 * (1 - alpha) * wv2 * (1 - 2 * wkq * wstar) ** -0.5
        + (1 - alpha) ** 2 * (1 - 2 * wstar**2) ** -0.5
    )


def _random_point(seed):
    """A random parameter point; |w_k w_q|, |w*| <= 0.2 keep the MC variance finite
    (the squared loss contains exp(4 w x z), whose mean needs |4 w| < 1)."""
    r = np.random.default_rng(seed)
    theta = np.array([r.uniform(-1, 1), r.uniform(-1, 2), r.uniform(-1, 1),
                      r.uniform(-0.44, 0.44), r.uniform(-0.44, 0.44)])
    return theta, float(r.uniform(0.2, 0.8)), float(r.uniform(-0.2, 0.2))


# --------------------------------------------------------------------------- #
# 0. The vectorised model is the model of the spec
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("attention", ATTENTIONS)
@pytest.mark.parametrize("p1", [None, 0.7, -0.4, 0.0])
def test_losses_match_loop_reference(attention, p1):
    x = np.random.default_rng(5).standard_normal((6, 7))
    theta = [0.3, 0.8, -0.5, 0.6, -0.7]
    if p1 is not None:
        theta = [p1] + theta
    got = loss_and_grad(theta, x, alpha=0.35, wstar=0.3, attention=attention)[:2]
    want = reference_losses(theta, x, 0.35, 0.3, attention)
    # Same arithmetic up to summation order: agreement to rounding error.
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


def test_large_p1_is_the_previous_token_head():
    x = np.random.default_rng(6).standard_normal((40, 9))
    theta = np.array([0.3, 0.8, -0.5, 0.6, -0.7])
    a = loss_and_grad(theta, x, alpha=0.4, wstar=0.3)
    b = loss_and_grad(np.r_[60.0, theta], x, alpha=0.4, wstar=0.3)
    # exp(-60) ~ 1e-26: below double precision relative to O(1) terms.
    np.testing.assert_allclose(a[:2], b[:2], rtol=1e-13)
    np.testing.assert_allclose(a[2], b[2][1:], rtol=1e-12, atol=1e-15)


# --------------------------------------------------------------------------- #
# 1. Analytic batch gradient == central finite differences (same fixed batch)
# --------------------------------------------------------------------------- #
def _fd_grad(f, theta, h=1e-6):
    theta = np.asarray(theta, dtype=float)
    return np.array([(f(theta + h * e) - f(theta - h * e)) / (2 * h)
                     for e in np.eye(theta.size)])


@pytest.mark.parametrize("attention", ATTENTIONS)
@pytest.mark.parametrize("theta", [
    [0.3, 0.7, 0.4, 0.5, -0.6],             # Stage II (p1 = +inf)
    [0.8, 0.3, 0.7, 0.4, 0.5, -0.6],        # two-layer, p1 > 0
    [-0.6, -0.2, -1.1, 0.9, 0.3, 0.45],     # two-layer, p1 < 0, p < 0
])
def test_gradient_matches_finite_differences(attention, theta):
    x = np.random.default_rng(1).standard_normal((64, 7))

    def total(th):
        l1, l2, _ = loss_and_grad(th, x, alpha=0.4, wstar=0.3, attention=attention)
        return l1 + l2

    grad = loss_and_grad(theta, x, alpha=0.4, wstar=0.3, attention=attention)[2]
    # Central differences with h = 1e-6: truncation ~h^2 and round-off ~1e-16/h,
    # both below 1e-9 for these O(1) losses.
    np.testing.assert_allclose(grad, _fd_grad(total, theta), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("p1", [-1.0, 0.0, 0.5, 3.0])
def test_stage1_gradient_matches_finite_differences(p1):
    x = np.random.default_rng(2).standard_normal((64, 8))
    grad = stage1_loss_and_grad(p1, x, alpha=0.6)[1]
    fd = _fd_grad(lambda v: stage1_loss_and_grad(float(v[0]), x, alpha=0.6)[0], [p1])[0]
    # Same finite-difference accuracy argument as above.
    assert grad == pytest.approx(fd, rel=1e-6, abs=1e-9)


@pytest.mark.parametrize("theta,stage", [
    ([math.inf, 0.4, 0.3, 0.2, 0.2, 0.2], 2),
    ([0.7, 0.4, -0.3, 0.2, 0.2, 0.2], 2),
    ([-0.5, 0.9, 1.5, 0.2, 0.2, 0.2], 2),
    ([0.7, 0.0, 0.0, 0.0, 0.0, 0.0], 1),
])
def test_exact_expected_loss_g4_matches_monte_carlo(theta, stage):
    L, alpha = 9, 0.4
    exact = _expected_loss_g4(np.array(theta), L, alpha, stage)
    if stage == 1:
        x = np.random.default_rng(4).standard_normal((400_000, L))
        mc = stage1_loss_and_grad(theta[0], x, alpha=alpha)[0]
        # relative SE of a chi-square-like mean with 4e5 samples ~ 0.22%.
        assert mc == pytest.approx(exact, rel=0.01)
        return
    th = theta[1:] if math.isinf(theta[0]) else theta
    est = monte_carlo_loss(th, L=L, alpha=alpha, wstar=0.3, n=400_000, seed=3)
    # 4 standard errors of the MC mean.
    assert abs(est.loss_g4 - exact) < 4 * est.se_loss_g4
    if math.isinf(theta[0]):  # and the spec's closed form, an independent reference
        assert exact == pytest.approx(closed_form_g4(theta[1], theta[2], L, alpha), rel=1e-12)


def test_stage1_loss_matches_closed_form():
    # E (x_{L-2} - g_{L-1})^2 = (1 - rho_0)^2 + sum_{j>=1} rho_j^2 (independent tokens).
    L, p1, alpha = 8, 0.4, 0.6
    rho = _softmax([-p1 * j for j in range(L - 2)])
    exact = 0.5 * alpha**2 * ((1 - rho[0]) ** 2 + np.sum(rho[1:] ** 2))
    x = np.random.default_rng(3).standard_normal((200_000, L))
    loss = stage1_loss_and_grad(p1, x, alpha=alpha)[0]
    # The sample mean of a chi-square-like variable: relative SE ~ sqrt(2/2e5) = 0.3%.
    assert loss == pytest.approx(exact, rel=0.015)


# --------------------------------------------------------------------------- #
# 2./3. Monte Carlo against the closed forms of spec section 5
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("attention", ["linear", "meanfield"])
def test_mc_losses_match_closed_forms(attention):
    L = 8
    theta, alpha, wstar = _random_point(11)
    est = monte_carlo_loss(theta, L=L, alpha=alpha, wstar=wstar, attention=attention,
                           n=200_000, seed=7)
    g4 = closed_form_g4(theta[0], theta[1], L, alpha)
    ih = closed_form_ih(theta[2], theta[3] * theta[4], L, alpha, wstar, attention)
    # 4 standard errors: a false failure has probability ~6e-5 per quantity.
    assert abs(est.loss_g4 - g4) < 4 * est.se_loss_g4
    assert abs(est.loss_ih - ih) < 4 * est.se_loss_ih
    # Guard against a vacuous pass: the standard errors are small compared with the values.
    assert est.se_loss_g4 < 0.02 * g4 and est.se_loss_ih < 0.02 * ih


def test_mc_losses_distinguish_the_closures():
    # The check above must be able to fail: the other closure's formula is rejected.
    L = 8
    theta, alpha, wstar = _random_point(11)
    theta[3] = theta[4] = 0.42  # w_kq ~ 0.18, where the closures differ clearly
    est = monte_carlo_loss(theta, L=L, alpha=alpha, wstar=wstar, attention="linear",
                           n=200_000, seed=8)
    wrong = closed_form_ih(theta[2], theta[3] * theta[4], L, alpha, wstar, "meanfield")
    assert abs(est.loss_ih - wrong) > 10 * est.se_loss_ih


def test_mc_gradient_matches_closed_form_derivative_linear():
    L = 8
    theta, alpha, wstar = _random_point(12)

    def closed(th):
        return (closed_form_g4(th[0], th[1], L, alpha)
                + closed_form_ih(th[2], th[3] * th[4], L, alpha, wstar, "linear"))

    est = monte_carlo_loss(theta, L=L, alpha=alpha, wstar=wstar, attention="linear",
                           n=400_000, seed=9)
    fd = _fd_grad(closed, theta, h=1e-5)
    # 4 standard errors of the MC mean, plus 1e-8 for the finite-difference error.
    assert np.all(np.abs(est.grad - fd) < 4 * est.se_grad + 1e-8), (est.grad, fd, est.se_grad)
    # Non-vacuous: every component is resolved (|grad| >> SE) for this point.
    assert np.all(np.abs(fd) > 8 * est.se_grad)


# --------------------------------------------------------------------------- #
# 4. Determinism, SGD behaviour, phase extraction
# --------------------------------------------------------------------------- #
def _short(**kw):
    base = dict(L=10, alpha=0.5, wstar=0.3, sigma=0.1, batch=64, eta=0.5, t_max=20.0,
                record_every=4, eval_batch=128)
    base.update(kw)
    return SGDConfig(**base)


@pytest.mark.parametrize("mode", ["stage2", "layerwise", "joint"])
def test_same_seed_same_trajectory_different_seed_different(mode):
    cfg = _short(mode=mode, seed=4, stage1_time=5.0)
    a, b = simulate_sgd(cfg), simulate_sgd(cfg)
    c = simulate_sgd(_short(mode=mode, seed=5, stage1_time=5.0))
    assert np.array_equal(a.params, b.params) and np.array_equal(a.loss_g4, b.loss_g4)
    assert np.array_equal(a.eval_loss_ih, b.eval_loss_ih)
    assert not np.array_equal(a.params[-1], c.params[-1])
    assert np.all(np.isfinite(a.params[:, 1:]))


def test_sgd_learns_the_4gram_and_stage1_learns_p1():
    tr = simulate_sgd(_short(mode="layerwise", stage1_time=20.0, t_max=60.0, batch=256))
    s1, s2 = tr.stage == 1, tr.stage == 2
    # Stage I: only p1 moves, upward, and the Stage-I loss falls by more than half.
    assert np.all(np.diff(tr.params[s1, 1:], axis=0) == 0)
    assert tr.params[s1, 0][-1] > tr.params[s1, 0][0] + 0.5
    assert tr.eval_loss_g4[s1][-1] < 0.5 * tr.eval_loss_g4[s1][0]
    # Stage II: p1 frozen, w_v1 moves toward alpha and L_G4 drops by 4x.
    assert np.all(tr.params[s2, 0] == tr.params[s1, 0][-1])
    assert tr.params[-1, 1] > 0.3
    assert tr.eval_loss_g4[-1] < 0.25 * tr.eval_loss_g4[s2][0]
    assert tr.t[-1] == pytest.approx(80.0)


def test_phase_extraction_interpolates():
    cfg = _short()
    t = np.array([0.0, 10.0, 20.0, 30.0, 40.0])
    wkq = np.array([0.01, 0.02, 0.12, 0.3, 0.3])
    params = np.zeros((5, 6))
    params[:, 0] = np.inf
    params[:, 4] = np.sqrt(wkq)
    params[:, 5] = np.sqrt(wkq)
    g4 = np.array([1.0, 0.5, 0.02, 0.005, 0.001])
    tr = SGDTrajectory(cfg, t, np.full(5, 2), params, g4, g4, g4, None, None, 0.0)
    ph = tr.phases()
    assert tr.phases(loss_source="batch", smooth=1) == ph
    assert ph["T_I"] == pytest.approx(20 + 10 * (0.02 - 0.01) / (0.02 - 0.005))
    assert ph["T_II"] == pytest.approx(10 + 10 * (0.03 - 0.02) / 0.10)
    assert ph["T_em"] == pytest.approx(20 + 10 * (0.15 - 0.12) / 0.18)
    assert ph["T_III"] == pytest.approx(20 + 10 * (0.27 - 0.12) / 0.18)
    assert math.isnan(first_crossing(t, wkq, 0.5))


def test_divergence_is_reported_not_a_nan_trajectory():
    # eta = 1e3 makes the w_v1 iteration expand by ~100x per step until overflow.
    with pytest.raises(FloatingPointError, match="diverged at step"):
        simulate_sgd(_short(eta=1e3, t_max=1e6, eval_batch=0))


# --------------------------------------------------------------------------- #
# 5. Bad input
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("field,value,needle", [
    ("alpha", 0.0, "(0, 1)"),
    ("alpha", 1.5, "(0, 1)"),
    ("alpha", math.nan, "(0, 1)"),
    ("L", 3, ">= 4"),
    ("L", 8.0, "integer"),
    ("L", True, "integer"),
    ("sigma", 0.0, "(0, inf)"),
    ("sigma", -0.1, "(0, inf)"),
    ("sigma", math.inf, "(0, inf)"),
    ("eta", 0.0, "(0, inf)"),
    ("eta", math.nan, "(0, inf)"),
    ("batch", 0, ">= 1"),
    ("batch", 2.5, "integer"),
    ("attention", "softmax", "exact, linear, meanfield"),
    ("mode", "both", "stage2, layerwise, joint"),
    ("t_max", -1.0, "(0, inf)"),
    ("record_every", 0, ">= 1"),
    ("seed", -1, ">= 0"),
    ("wstar", math.inf, "finite"),
])
def test_bad_config_raises_naming_parameter(field, value, needle):
    kw = dict(L=8, alpha=0.5, wstar=0.3, sigma=0.1)
    kw[field] = value
    with pytest.raises(ValueError) as exc:
        SGDConfig(**kw)
    msg = str(exc.value)
    assert msg.startswith(f"{field}={value!r}") and needle in msg, msg


@pytest.mark.parametrize("attention,field,value", [
    ("linear", "wstar", 0.5),       # |2 w*| < 1
    ("meanfield", "wstar", 0.75),   # 2 w*^2 < 1
    ("linear", "sigma", 0.75),      # 2 sigma^2 < 1
])
def test_closure_domain_is_enforced(attention, field, value):
    kw = dict(L=8, alpha=0.5, wstar=0.3, sigma=0.1, attention=attention)
    kw[field] = value
    with pytest.raises(ValueError, match=f"{field}={value!r} is invalid: attention '{attention}'"):
        SGDConfig(**kw)


def test_bad_arrays_raise():
    x = np.zeros((4, 8))
    with pytest.raises(ValueError, match="theta"):
        loss_and_grad([0.1, 0.2], x, alpha=0.5, wstar=0.3)
    with pytest.raises(ValueError, match="theta"):
        loss_and_grad([0.1, np.nan, 0.1, 0.1, 0.1], x, alpha=0.5, wstar=0.3)
    with pytest.raises(ValueError, match="x has shape"):
        loss_and_grad([0.1] * 5, np.zeros((4, 3)), alpha=0.5, wstar=0.3)
    with pytest.raises(ValueError, match="alpha=2"):
        loss_and_grad([0.1] * 5, x, alpha=2, wstar=0.3)
    with pytest.raises(TypeError, match="SGDConfig"):
        simulate_sgd({"L": 8})
