"""Gradient flow: balance law, reduction, Jacobian, and unreduced vs reduced trajectories."""

import numpy as np
import pytest
import sympy as sp
from scipy.integrate import solve_ivp

from reduced_odes import SolverConfig, load_system, solve
from reduced_odes._positions import SEQ_LEN as L
from reduced_odes.models.induction_head import ModelParams, derive_flow
from reduced_odes.models.induction_head.declaration import ALPHA, W_KQ, WSTAR
from reduced_odes.models.induction_head.derivation import FULL_STATE
from reduced_odes.models.induction_head.special import NUMERIC_IMPLEMENTATIONS

from .spec_reference import SPEC_IH


@pytest.mark.parametrize("closure", ["linear", "meanfield"])
def test_balance_law_and_product_flow(closure):
    flow = derive_flow(closure)
    assert flow.balance_rate == 0
    # Spec section 4: dw_kq/dt = -2 w_kq dL/dw_kq, here held against the spec's own L_IH.
    expected = -2 * W_KQ * sp.diff(SPEC_IH[closure], W_KQ)
    assert sp.simplify(flow.reduced_rhs[3] - expected) == 0


@pytest.mark.parametrize("closure", ["linear", "meanfield"])
def test_jacobian_matches_finite_differences(closure):
    system = load_system("induction_head", closure)
    args = (0.4, 0.3, 150.0)
    rng = np.random.default_rng(3)
    for y in ([0.2, 0.0, 0.3, -9.0], [0.45, 1.3, 0.55, -1.4], [0.1, -0.4, 0.2, -3.0]):
        y = np.array(y) + 0.01 * rng.standard_normal(4)
        jac = np.array(system.jac(0.0, y, *args))
        for j in range(4):
            h = 1e-6 * max(1.0, abs(y[j]))
            up, down = y.copy(), y.copy()
            up[j] += h
            down[j] -= h
            column = (np.array(system.rhs(0, up, *args)) - np.array(system.rhs(0, down, *args)))
            column /= 2 * h
            # central differences: error O(h^2 f''') + O(eps/h) ~ 1e-10 relative
            np.testing.assert_allclose(jac[:, j], column, rtol=1e-6, atol=1e-12)


def _full_flow(closure, params):
    flow = derive_flow(closure)
    subs = {ALPHA: params.alpha, WSTAR: params.wstar, L: params.L}
    rhs = sp.lambdify(FULL_STATE, list(flow.full_rhs.subs(subs)),
                      modules=[NUMERIC_IMPLEMENTATIONS, "math"])
    return lambda t, y: rhs(*y)


@pytest.mark.parametrize("closure", ["linear", "meanfield"])
def test_unreduced_flow_matches_reduced_flow(closure):
    params = ModelParams(L=20, alpha=0.5, wstar=0.3, sigma=0.05)
    reduced = solve(params, closure, SolverConfig(method="Radau", rtol=1e-11, atol=1e-13))
    t_end = 1.5 * reduced.phases["T_III"]
    s = params.sigma
    full = solve_ivp(_full_flow(closure, params), (0, t_end), [s, 0.0, s, s, s], method="Radau",
                     rtol=1e-11, atol=1e-13, dense_output=True)
    times = np.geomspace(1e-2, t_end, 200)
    y_full, y_red = full.sol(times), reduced.at(times)
    w_kq_full = y_full[3] * y_full[4]
    # Both integrated at rtol 1e-11; accumulated error across the plateau stays < 1e-7.
    np.testing.assert_allclose(w_kq_full, np.exp(y_red[3]), rtol=1e-7)
    np.testing.assert_allclose(y_full[:3], y_red[:3], rtol=1e-7, atol=1e-10)


def test_balance_is_conserved_from_unequal_initialisation():
    params = ModelParams(L=20, alpha=0.5, wstar=0.3, sigma=0.05)
    s = params.sigma
    sol = solve_ivp(_full_flow("linear", params), (0, 3000), [s, 0.0, s, 2 * s, s],
                    method="Radau", rtol=1e-11, atol=1e-14)
    balance = sol.y[3] ** 2 - sol.y[4] ** 2
    assert np.ptp(balance) < 1e-10  # conserved exactly; drift bounded by solver tolerance
    assert np.ptp(sol.y[3] * sol.y[4]) > 0.1  # ... while the product really moved
