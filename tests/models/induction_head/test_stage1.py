"""Stage I (spec section 4): the derived 1-D flow of p_1 and Lemma 5.3 (p_1 -> oo)."""

import math

import mpmath
import numpy as np
import pytest
import sympy as sp
from scipy.integrate import solve_ivp

from reduced_odes._positions import SEQ_LEN as L
from reduced_odes.models.induction_head import derive_stage1_flow, derive_stage1_loss
from reduced_odes.models.induction_head.declaration import ALPHA, P1


def _tail_coefficient():
    """c with L_I ~ c u^2, u = e^{-p_1}, from the L -> oo series of the derived loss."""
    p, u = sp.Symbol("p", positive=True), sp.Symbol("u", positive=True)
    limit = sp.limit(derive_stage1_loss().subs(P1, p), L, sp.oo)
    series = sp.series(limit.subs(p, -sp.log(u)), u, 0, 3).removeO()
    assert series.coeff(u, 0) == 0 and series.coeff(u, 1) == 0
    return series.coeff(u, 2)


def test_stage1_loss_matches_monte_carlo():
    length, alpha, p1 = 9, 0.6, 0.7
    rng = np.random.default_rng(11)
    x = rng.standard_normal((400_000, length + 1))
    x[:, 0] = 0.0                                           # padding x_0
    tau = np.arange(1, length - 1)                           # tau = 1..L-2
    rho = np.exp(-p1 * (length - 2 - tau))
    rho /= rho.sum()
    samples = 0.5 * alpha**2 * (x[:, length - 2] - x[:, tau] @ rho) ** 2
    predicted = float(derive_stage1_loss().subs({L: length, ALPHA: alpha, P1: p1}))
    assert abs(samples.mean() - predicted) < 4 * samples.std() / math.sqrt(samples.size)  # 4 sigma


@pytest.mark.parametrize("length", [6, 50, 1000])
def test_lemma_5_3_p1_diverges_at_the_derived_rate(length):
    alpha = 0.5
    # The elementary closed form overflows in doubles (e^{L p_1}); mpmath has the range.
    exact = sp.lambdify(P1, derive_stage1_flow().subs({L: length, ALPHA: alpha}), "mpmath")

    def rate(p):
        with mpmath.workdps(60):  # the closed form cancels catastrophically for large p_1
            return float(exact(mpmath.mpf(float(p))))

    grid = np.linspace(0.01, 30, 300)
    assert all(rate(p) > 0 for p in grid)            # p_1 increases monotonically ...
    c = float(_tail_coefficient().subs(ALPHA, alpha))
    sol = solve_ivp(lambda t, y: [rate(y[0])], (0, 1e7), [1e-6], method="LSODA", rtol=1e-10,
                    atol=1e-12, dense_output=True)
    # ... without bound: u^2 = 1/(4 c t), i.e. p_1 - ln(4 c t)/2 -> 0 like O(t^{-1/2}).
    for t in (1e5, 1e7):
        gap = sol.sol(t)[0] - 0.5 * math.log(4 * c * t)
        assert abs(gap) < 5 / math.sqrt(c * t)
