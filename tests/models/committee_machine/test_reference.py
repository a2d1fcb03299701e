"""The hand-typed ODE of the literature (``reference.py``) against closed forms, Gaussian Monte
Carlo, a second solver and the published reference implementation, Goldt's nn2pp.

nn2pp (``scmpp_ode.cpp``) integrates the same equations by forward Euler with a fixed step
``dt`` in ``α = steps/N``, that is ``η dt`` in our time ``t = η α``; ``reference_data/
nn2pp.json`` holds its output and how it was made.  What limits its precision, and so the
tolerances below:

* Euler's first-order error, ``c η dt`` with ``c`` of order 1 (measured here by halving
  ``dt``): 2e-3 in ``T_escape`` at its default ``dt = 0.01`` and ``η = 0.1``;
* ``ε_g`` printed with 6 significant digits: ±5e-9 at the half-plateau level (~0.006), over
  its slope ``|dε_g/dt|`` ≈ 3.1e-4 there, is ±1.6e-5 in time per sample.

The time of each printed row is exact (replayed from nn2pp's time loop, see the JSON), and
``T_escape`` is read from samples 0.5 apart (one nn2pp run each), where a cubic crossing is
exact to ~1e-8.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

from .reference import (
    CASES,
    PRINTED,
    nn2pp_data,
    nn2pp_escape,
    pack,
    reference_case,
    reference_solution,
    rhs,
    symmetric_fixed_point,
    t_escape,
)


@functools.cache
def _reference_escape(case: str, eta: float) -> float:
    c = reference_case(case)
    return t_escape(c["Q0"], c["R0"], c["K"], c["M"], eta)


def _nn2pp_run(case: str, eta: float, dt: float) -> dict:
    return next(r for r in nn2pp_data()["runs"]
                if (r["case"], r["eta"], r["dt"]) == (case, eta, dt))


@pytest.mark.parametrize("K", [2, 3, 4, 5])
def test_plateau_is_the_closed_form(K):
    q, r, eps = symmetric_fixed_point(K, K, eta=0.0)
    # Newton stops at a residual < 1e-14 on a Jacobian of order 1: the root to ~1e-14.
    assert abs(eps - K / math.pi * (math.pi / 6 - K * math.asin(1 / (2 * K)))) < 1e-10
    assert abs(q - 1 / (2 * K - 1)) < 1e-10
    assert abs(r - 1 / math.sqrt(K * (2 * K - 1))) < 1e-10


@pytest.mark.parametrize("activation", ["erf", "linear"])
def test_reference_drift_is_the_gaussian_expectation(activation):
    """The hand-typed I2, I3, I4, J2 assembled into the flow, against Monte Carlo of the
    definition (spec §3) at a generic state: K = 3, M = 2, T ≠ I, η = 0.7, σ = 0.5."""
    from scipy.special import erf

    rng = np.random.default_rng(0)
    K, M, eta, noise, n = 3, 2, 0.7, 0.5, 2 * 10**6
    A = rng.standard_normal((K + M, K + M + 2)) / 2
    C = A @ A.T
    Q, R, T = C[:K, :K], C[:K, K:], C[K:, K:]
    u = rng.standard_normal((n, K + M)) @ np.linalg.cholesky(C).T
    lam, nu = u[:, :K], u[:, K:]
    if activation == "erf":
        g, dg = erf(u / math.sqrt(2)), math.sqrt(2 / math.pi) * np.exp(-u * u / 2)
    else:
        g, dg = u, np.ones_like(u)
    error = g[:, K:].sum(1) - g[:, :K].sum(1) + noise * rng.standard_normal(n)
    delta = dg[:, :K] * error[:, None]
    dQ = (delta[:, :, None] * lam[:, None, :] + delta[:, None, :] * lam[:, :, None]
          + eta * delta[:, :, None] * delta[:, None, :])
    dR = delta[:, :, None] * nu[:, None, :]
    iu = np.triu_indices(K)
    samples = np.concatenate([dQ[:, iu[0], iu[1]], dR.reshape(n, -1)], axis=1)
    expected = rhs(pack(Q, R), K, M, eta, noise, T, activation)
    se = samples.std(0, ddof=1) / math.sqrt(n)
    # 4.5 standard errors: 12 components, a family-wise false alarm below 1e-4.
    assert np.all(np.abs(samples.mean(0) - expected) < 4.5 * se), (samples.mean(0), expected)


@pytest.mark.parametrize("eta", [0.0, 0.1])
def test_t_escape_is_the_same_with_a_second_solver(eta):
    case = reference_case("near_symmetric")
    lsoda = t_escape(case["Q0"], case["R0"], 2, 2, eta, method="LSODA")
    radau = t_escape(case["Q0"], case["R0"], 2, 2, eta, method="Radau")
    # Both at rtol 1e-11; the saddle magnifies local errors, by e^{λ T} ≈ 1e3 at most.
    assert abs(lsoda - radau) < 1e-6 * lsoda, (lsoda, radau)


@pytest.mark.parametrize("eta", [0.1, 0.01, 0.001])
def test_nn2pp_rests_at_the_reference_plateau(eta):
    """nn2pp started at the reference's fixed point stays there: its drift vanishes too,
    η terms included (Euler's fixed points are the flow's).  A mismatch of the drift by d
    would move the state by ~d·t over the t = 100 of the run."""
    run = next(r for r in nn2pp_data()["plateau_runs"] if r["eta"] == eta)
    q, r, eps = symmetric_fixed_point(2, 2, eta)
    # The run started here (17 digits); fsolve's last iterate at xtol 1e-15 moves by an ulp
    # or two with LAPACK's kernel, so equal to 1e-15 relative, not bit for bit.
    assert (run["q"], run["r"]) == (pytest.approx(q, rel=1e-15), pytest.approx(r, rel=1e-15))
    # 6 printed digits of overlaps of size ~0.4: ±5e-7.
    assert run["max_abs_change_Q"] < 1e-6 and run["max_abs_change_R"] < 1e-6
    # and its ε_g is the reference's ε*(η), to its 6 printed digits (±5e-8 at ~0.012).
    assert np.all(np.abs(np.array(run["eps_g"]) - eps) <= 5e-8)


@pytest.mark.parametrize("case", CASES)
def test_nn2pp_escape_converges_to_the_reference_at_first_order(case):
    """η = 0.1 with nn2pp's default dt = 0.01 and two halvings: its error in T_escape halves
    with dt, and the Richardson extrapolation of the two finest meets the reference."""
    reference = _reference_escape(case, 0.1)
    error = {dt: nn2pp_escape(case, 0.1, dt) - reference for dt in (0.01, 0.005, 0.0025)}
    # First order: 1/2 per halving, to O(dt) relative and the printed digits.
    assert 0.45 < error[0.005] / error[0.01] < 0.55, error
    assert 0.45 < error[0.0025] / error[0.005] < 0.55, error
    # Richardson leaves O(dt²) ~ error(0.0025)²/T ~ 1e-8, and the printed digits (×3).
    assert abs(2 * error[0.0025] - error[0.005]) < 3 * PRINTED, error


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("eta", [0.01, 0.001])
def test_nn2pp_escape_error_at_small_eta_is_its_euler_step(case, eta):
    """In time t, nn2pp's step is η dt, and its error in T_escape is c η dt with the c of
    η = 0.1 (the flow hardly depends on η): 2e-4 at η = 0.01, 2e-5 at η = 0.001."""
    c = (nn2pp_escape(case, 0.1, 0.01) - _reference_escape(case, 0.1)) / (0.1 * 0.01)
    error = nn2pp_escape(case, eta, 0.01) - _reference_escape(case, eta)
    # c itself changes with η by O(η) (10 % from 0.1 to 0); plus the printed digits.
    assert abs(error - c * eta * 0.01) < 0.1 * abs(c) * eta * 0.01 + PRINTED, (error, c)


@pytest.mark.parametrize("case", CASES)
def test_nn2pp_extrapolated_to_eta_0_escapes_with_the_reference_gradient_flow(case):
    """nn2pp cannot run at η = 0 (it multiplies the flow by η).  The line through its T_escape
    at η = 0.01 and 0.001 meets η = 0 within O(η²) (1e-6 here) plus its Euler error,
    which is linear in η too and extrapolates to ~0: the reference at η = 0 exactly."""
    T1, T2 = nn2pp_escape(case, 0.01, 0.01), nn2pp_escape(case, 0.001, 0.01)
    at_zero = T2 - (T1 - T2) * 0.001 / (0.01 - 0.001)
    # The printed digits, weighed by 10/9 and 1/9 in the extrapolation.
    assert abs(at_zero - _reference_escape(case, 0.0)) < 2 * PRINTED, at_zero


@pytest.mark.parametrize("case", CASES)
def test_nn2pp_eps_g_curve_converges_to_the_reference(case):
    """The whole printed ε_g(t), t ≤ 250 and 300 rows: its largest deviation from the
    reference (in the first fast descent, t ≈ 0.5) halves with dt (Euler), and at small η is
    that deviation scaled by η dt."""
    c = reference_case(case)

    def deviation(eta, dt):
        run = _nn2pp_run(case, eta, dt)
        t = eta * np.array(run["alpha"])
        ref = reference_solution(c["Q0"], c["R0"], 2, 2, eta, t_eval=t)
        return np.abs(np.array(run["eps_g"]) - ref.eps_g).max()

    coarse, fine = deviation(0.1, 0.01), deviation(0.1, 0.005)
    assert 0.45 < fine / coarse < 0.55, (coarse, fine)
    # c η dt with c changing by O(η) (within 20 %), plus ε_g ~ 0.16 printed to 6 digits, ±5e-7.
    for eta in (0.01, 0.001):
        assert deviation(eta, 0.01) < 1.2 * coarse * eta / 0.1 + 5e-7, eta
