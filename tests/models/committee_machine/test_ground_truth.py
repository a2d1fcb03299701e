"""The SGD ground truth of the soft committee machine, against independent references: a plain
per-sample loop, the exact overlaps of the start, Gaussian Monte Carlo of one step's drift,
a test set of fresh inputs, the full network (for the overlap sampler), and (slow) the
hand-typed ODE of the literature."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from reduced_odes._params import ParameterError
from reduced_odes.author import first_crossing
from reduced_odes.models.committee_machine.ground_truth import (
    ACTIVATIONS,
    generalisation_error,
    initial_weights,
    sgd_steps,
    train,
)

from .reference import reference_cases, reference_solution, symmetric_fixed_point, t_escape

#: The activations held here: the three closed forms and tanh (a numerical pair kernel, its
#: numba steps compiled from the registry's source); the others differ only in that source.
TESTED = ("erf", "relu", "linear", "tanh")

Q0 = np.array([[0.3, 0.05, 0.02], [0.05, 0.25, -0.04], [0.02, -0.04, 0.4]])
R0 = np.array([[0.1, 0.02], [0.0, 0.15], [-0.05, 0.03]])
T0 = np.array([[1.0, 0.2], [0.2, 0.8]])


def _hand_g(activation, u):
    return {"erf": math.erf(u / math.sqrt(2)), "relu": max(u, 0.0), "linear": u,
            "tanh": math.tanh(u)}[activation]


def _hand_dg(activation, u):
    return {"erf": math.sqrt(2 / math.pi) * math.exp(-u * u / 2), "relu": float(u > 0),
            "linear": 1.0, "tanh": 1.0 / math.cosh(u) ** 2}[activation]


def _hand_loop(activation, W, B, X, zeta, eta):
    """One sample at a time, one weight at a time: the update rule as written in the spec."""
    W, N = [list(w) for w in W], len(W[0])
    for x, z in zip(X, zeta, strict=True):
        lam = [sum(w[j] * x[j] for j in range(N)) / math.sqrt(N) for w in W]
        nu = [sum(b[j] * x[j] for j in range(N)) / math.sqrt(N) for b in B]
        error = (sum(_hand_g(activation, v) for v in nu) + z
                 - sum(_hand_g(activation, v) for v in lam))
        for i, w in enumerate(W):
            delta = _hand_dg(activation, lam[i]) * error
            for j in range(N):
                w[j] += eta / math.sqrt(N) * delta * x[j]
    return np.array(W)


def _numba_backends():
    pytest.importorskip("numba")


@pytest.mark.parametrize("K, M, T", [(3, 2, T0), (2, 2, None), (1, 3, None)])
def test_initial_weights_have_exactly_the_overlaps(K, M, T):
    Q, R = Q0[:K, :K], np.resize(R0, (K, M))
    W, B = initial_weights(Q, R, T, 37, np.random.default_rng(K))
    T = np.eye(M) if T is None else T
    # Exact by construction (orthonormal directions): rounding only.
    for measured, wanted in ((W @ W.T / 37, Q), (W @ B.T / 37, R), (B @ B.T / 37, T)):
        np.testing.assert_allclose(measured, wanted, atol=1e-12, rtol=0)


def test_initial_weights_allow_identical_students_and_refuse_impossible_overlaps():
    q, r = 1 / 3, 1 / math.sqrt(6)  # the plateau: both students the same vector
    W, B = initial_weights(np.full((2, 2), q), np.full((2, 2), r), None, 20,
                           np.random.default_rng(0))
    np.testing.assert_allclose(W[0], W[1], atol=1e-13)  # rounding of the symmetric root
    with pytest.raises(ParameterError, match="Gram matrix"):
        initial_weights(np.eye(2) * 0.1, np.eye(2), None, 20, np.random.default_rng(0))


@pytest.mark.parametrize("activation", TESTED)
@pytest.mark.parametrize("backend", ["python", "numba"])
def test_steps_equal_a_plain_loop(activation, backend):
    if backend == "numba":
        _numba_backends()
    rng = np.random.default_rng(3)
    W, B = initial_weights(Q0, R0, T0, 7, rng)
    X, zeta = rng.standard_normal((6, 7)), 0.3 * rng.standard_normal(6)
    expected = _hand_loop(activation, W, B, X, zeta, eta=0.7)
    W_batch = W[None].copy()
    sgd_steps(activation, W_batch, B[None], X[None], zeta[None], 0.7, backend=backend)
    np.testing.assert_allclose(W_batch[0], expected, atol=1e-13, rtol=0)  # summation order


def test_train_is_initial_weights_then_steps_on_its_documented_streams():
    N, eta, noise, steps = 11, 0.4, 0.2, 9
    run = train("erf", Q0, R0, T0, N=N, eta=eta, noise=noise, times=[steps * eta / N],
                seeds=2, rng_seed=5, backend="python")

    def stream(s, k):
        return np.random.default_rng(np.random.SeedSequence(5, spawn_key=(s, k)))

    W, B = initial_weights(Q0, R0, T0, N, stream(1, 0))
    W = _hand_loop("erf", W, B, stream(1, 1).standard_normal((steps, N)), eta=eta,
                   zeta=noise * stream(1, 2).standard_normal(steps))
    np.testing.assert_allclose(run.Q[1, -1], W @ W.T / N, atol=1e-13, rtol=0)
    np.testing.assert_allclose(run.R[1, -1], W @ B.T / N, atol=1e-13, rtol=0)
    assert run.t[-1] == steps * eta / N


@pytest.mark.parametrize("method", ["network", "overlaps"])
def test_a_run_depends_neither_on_its_batch_nor_on_the_records(method):
    kwargs = dict(N=40, eta=0.3, noise=0.1, rng_seed=9, method=method, backend="python")
    batch = train("relu", Q0, R0, T0, times=[0.3, 1.5], seeds=3, **kwargs)
    alone = train("relu", Q0, R0, T0, times=[1.5], seeds=2, **kwargs)
    np.testing.assert_array_equal(batch.Q[:2, -1], alone.Q[:, -1])
    np.testing.assert_array_equal(batch.R[:2, -1], alone.R[:, -1])


@pytest.mark.parametrize("method", ["network", "overlaps"])
def test_numba_and_numpy_give_the_same_runs(method):
    _numba_backends()
    for activation in TESTED:
        kwargs = dict(N=60, eta=0.5, noise=0.3, times=[0.0, 2.0, 6.0], seeds=3, rng_seed=4,
                      method=method)
        fast = train(activation, Q0, R0, T0, backend="numba", **kwargs)
        pure = train(activation, Q0, R0, T0, backend="python", **kwargs)
        # Same random numbers; the dot products are summed in another order: rounding only,
        # which 720 steps of a contracting map do not amplify.
        np.testing.assert_allclose(fast.Q, pure.Q, atol=1e-12, rtol=0)
        np.testing.assert_allclose(fast.R, pure.R, atol=1e-12, rtol=0)


def _gaussian_drift(activation, Q, R, T, eta, samples, rng):
    """Monte Carlo over the fields (λ, ν) ~ N(0, C) of one step's mean (ΔQ, ΔR) · N/η."""
    from reduced_odes.models.committee_machine.ground_truth import _dg, _g  # the same g, g'

    K, M = R.shape
    C = np.block([[Q, R], [R.T, T]])
    u = rng.standard_normal((samples, K + M)) @ np.linalg.cholesky(C).T
    lam, nu = u[:, :K], u[:, K:]
    delta = _dg(activation, lam) * (_g(activation, nu).sum(1) - _g(activation, lam).sum(1))[:, None]
    dR = delta[:, :, None] * nu[:, None, :]
    dQ = (delta[:, :, None] * lam[:, None, :] + delta[:, None, :] * lam[:, :, None]
          + eta * delta[:, :, None] * delta[:, None, :])
    return dQ, dR


@pytest.mark.parametrize("activation", ["erf", "relu"])
def test_one_step_drift_matches_gaussian_monte_carlo(activation):
    """Many runs of 4 steps at N = 400, η = 0.05 (t = 5e-4: the drift has no time to change):
    the mean of (Q(t) − Q0)/t, (R(t) − R0)/t against E[δ_i ν_n], E[δ_i λ_k + δ_k λ_i + η δ_i δ_k]
    by Monte Carlo of the fields."""
    N, eta, steps, seeds = 400, 0.05, 4, 5000
    t = steps * eta / N
    run = train(activation, Q0, R0, T0, N=N, eta=eta, times=[t], seeds=seeds, rng_seed=1,
                backend="python")
    sgd_dR = ((run.R[:, -1] - R0) / t).reshape(seeds, -1)
    sgd_dQ = ((run.Q[:, -1] - Q0) / t).reshape(seeds, -1)
    mc_dQ, mc_dR = _gaussian_drift(activation, Q0, R0, T0, eta, 10**6, np.random.default_rng(2))
    for sgd, mc in ((sgd_dR, mc_dR.reshape(10**6, -1)), (sgd_dQ, mc_dQ.reshape(10**6, -1))):
        se = np.sqrt(sgd.var(0, ddof=1) / seeds + mc.var(0, ddof=1) / 10**6)
        # 4.5 combined standard errors (15 components, family-wise ~1e-4); the steps' drift
        # changes by O(t) = 5e-4 relative and |x|²/N ≠ 1 by O(1/N) in the η term: below that.
        assert np.all(np.abs(sgd.mean(0) - mc.mean(0)) < 4.5 * se), (sgd.mean(0), mc.mean(0), se)


# tanh's exact eps_g of 6000 runs (quadrature, unused here) costs ~10 s: slow.
@pytest.mark.parametrize("activation", [*TESTED[:3], pytest.param("tanh", marks=pytest.mark.slow)])
def test_overlap_sampler_has_the_law_of_the_network(activation):
    """N = 30 (so that the finite-N terms matter), η = 0.5 and noise: 3000 runs of each method
    after 60 steps, every overlap compared by a two-sample Kolmogorov–Smirnov test."""
    kwargs = dict(N=30, eta=0.5, noise=0.4, times=[1.0], seeds=3000, backend="python")
    network = train(activation, Q0, R0, T0, method="network", rng_seed=11, **kwargs)
    chain = train(activation, Q0, R0, T0, method="overlaps", rng_seed=12, **kwargs)
    a = np.concatenate([network.Q[:, -1].reshape(3000, -1), network.R[:, -1].reshape(3000, -1)], 1)
    b = np.concatenate([chain.Q[:, -1].reshape(3000, -1), chain.R[:, -1].reshape(3000, -1)], 1)
    p_values = [stats.ks_2samp(a[:, c], b[:, c]).pvalue for c in range(a.shape[1])]
    # 15 components: a family-wise level of ~1.5e-3 under the null of the same law.
    assert min(p_values) > 1e-4, p_values
    assert np.all(a.std(0) > 1e-3)  # the overlaps did move and spread


@pytest.mark.parametrize("activation", TESTED)
def test_exact_eps_g_matches_a_test_set_of_the_network(activation):
    run = train(activation, Q0, R0, T0, N=50, eta=0.5, times=[0.0, 1.0], seeds=2, rng_seed=3,
                backend="python", test_set=400_000)
    # 5 standard errors of 400 000 fresh inputs through the real weights.
    assert np.all(np.abs(run.eps_test - run.eps_g) < 5 * run.eps_test_se), (run.eps_test,
                                                                           run.eps_g)


def test_exact_eps_g_is_zero_at_the_teacher_and_symmetric():
    for activation in ACTIVATIONS:
        # Quadrature (tanh, ...) sums the same nodes for student and teacher: round-off.
        assert abs(generalisation_error(activation, T0, T0, T0)) < 1e-14


@pytest.mark.parametrize("kwargs, name", [
    (dict(eta=0.0), "eta"), (dict(noise=-1.0), "noise"), (dict(N=3), "N"),
    (dict(seeds=0), "seeds"), (dict(times=[2.0, 1.0]), "times"), (dict(method="x"), "method"),
    (dict(activation="step"), "activation"), (dict(backend="gpu"), "backend")])
def test_bad_input_is_refused_in_one_line_naming_it(kwargs, name):
    args = dict(activation="erf", N=10, eta=0.1, times=[1.0]) | kwargs
    activation = args.pop("activation")
    with pytest.raises(ParameterError, match=f"^{name}=") as info:
        train(activation, Q0, R0, T0, **args)
    assert "\n" not in str(info.value)


# -- the ground truth against the ODE of the literature ---------------------------------------

def _t_interval(samples: np.ndarray, level: float = 0.999) -> tuple[float, float]:
    """Student's t interval of the mean of ``samples`` (independent runs)."""
    half = stats.t.ppf(0.5 + level / 2, len(samples) - 1) * samples.std(ddof=1)
    return (samples.mean() - half / math.sqrt(len(samples)),
            samples.mean() + half / math.sqrt(len(samples)))


def _assert_sgd_agrees_with_the_ode(run, case, eta):
    """Plateau height, T_escape and ε_g after the escape: the ODE's value inside the seeds'
    99.9 % t-interval."""
    ode = reference_solution(case["Q0"], case["R0"], 2, 2, eta, t_eval=run.t)
    plateau = symmetric_fixed_point(2, 2, eta)[2]
    t_esc = t_escape(case["Q0"], case["R0"], 2, 2, eta)
    # Plateau height: ε_g averaged over where the ODE is within 5 % of ε*, before the escape.
    window = (np.abs(ode.eps_g / plateau - 1) < 0.05) & (run.t < t_esc)
    low, high = _t_interval(run.eps_g[:, window].mean(1))
    assert low <= ode.eps_g[window].mean() <= high, (low, ode.eps_g[window].mean(), high)
    escapes = first_crossing(run.t, run.eps_g, plateau / 2, direction=-1, strict=True)
    low, high = _t_interval(escapes)
    assert low <= t_esc <= high, (escapes, t_esc)
    # ε_g at t = 100, on its way to 0, on a log scale (its spread over runs is multiplicative).
    at = np.searchsorted(run.t, 100.0)
    low, high = _t_interval(np.log(run.eps_g[:, at]))
    assert low <= math.log(ode.eps_g[at]) <= high, (run.eps_g[:, at], ode.eps_g[at])


@pytest.mark.slow
@pytest.mark.parametrize("N", [2000, 5000])
def test_sgd_agrees_with_the_reference_ode(N):
    """K = M = 2, erf, η = 0.1, 10 runs from ``sgd_start`` (its asymmetry R_ii − R_in = 0.02
    dwarfs the SGD noise, ~√(η/N) ≈ 0.007 at N = 2000), by the overlap sampler (~1e6 steps/s:
    3e6 and 7.5e6 steps per run)."""
    _numba_backends()
    case = next(c for c in reference_cases() if c["name"] == "sgd_start")
    run = train("erf", case["Q0"], case["R0"], N=N, eta=0.1, times=np.arange(0.0, 150.01, 0.25),
                seeds=10, rng_seed=N, method="overlaps")
    _assert_sgd_agrees_with_the_ode(run, case, 0.1)


@pytest.mark.slow
def test_network_sgd_agrees_with_the_reference_ode():
    """The same with the weights themselves, at N = 500 (5e5 steps per run, ~3e4 steps/s)."""
    _numba_backends()
    case = next(c for c in reference_cases() if c["name"] == "sgd_start")
    run = train("erf", case["Q0"], case["R0"], N=500, eta=0.1, times=np.arange(0.0, 100.01, 0.25),
                seeds=6, rng_seed=500, method="network")
    _assert_sgd_agrees_with_the_ode(run, case, 0.1)
