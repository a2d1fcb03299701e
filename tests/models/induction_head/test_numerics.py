"""Derived predictions against spec section 6 and against the compiled flow."""

import math

import numpy as np
import pytest
import sympy as sp

from reduced_odes import load_system, solve
from reduced_odes._positions import SEQ_LEN as L
from reduced_odes.models.induction_head import ModelParams
from reduced_odes.models.induction_head.declaration import ALPHA, WSTAR
from reduced_odes.models.induction_head.numerics import SIGMA, THETA_EM, THETA_I, derive_predictions

# Spec section 6, typed in as independent references.
SPEC_LAMBDA = {"linear": 2 * (L - 2) * (1 - ALPHA) ** 2 * WSTAR / (L**2 * (1 - WSTAR**2) ** 2),
               "meanfield": 2 * (1 - ALPHA) ** 2 * WSTAR / (L - 2)}
SPEC_PLATEAU_W_V2 = {"linear": (1 - ALPHA) / sp.sqrt(1 - WSTAR**2), "meanfield": 1 - ALPHA}
CLOSURES = ["linear", "meanfield"]


@pytest.mark.parametrize("closure", CLOSURES)
def test_plateau_predictions_equal_spec(closure):
    e = derive_predictions(closure).expressions
    assert sp.simplify(e["lambda"] - SPEC_LAMBDA[closure]) == 0
    assert sp.simplify(e["plateau_w_v2"] - SPEC_PLATEAU_W_V2[closure]) == 0
    spec_t_em = sp.log(WSTAR / (2 * SIGMA**2)) / SPEC_LAMBDA[closure]
    assert sp.simplify(e["T_em_leading"].subs(THETA_EM, sp.Rational(1, 2)) - spec_t_em) == 0
    assert sp.simplify(e["T_em_slope"] - 2 / SPEC_LAMBDA[closure]) == 0


@pytest.mark.parametrize("closure", CLOSURES)
def test_phase_one_and_tail_equal_spec(closure):
    e = derive_predictions(closure).expressions
    assert sp.simplify(e["growth_rate_I_large_L"] - ALPHA / 2) == 0
    assert sp.simplify(e["T_I_leading"].subs(THETA_I, sp.Rational(1, 100)) - 50 / ALPHA**2) == 0
    assert e["tail_t_L_G4"] == sp.Rational(1, 4)
    u = sp.Symbol("u", positive=True)
    assert sp.simplify(e["tail_u_rate"] - (-(ALPHA**2) * u**3)) == 0


@pytest.mark.parametrize("closure", CLOSURES)
@pytest.mark.parametrize("alpha,wstar,length", [(0.5, 0.3, 200), (0.2, 0.45, 50), (0.8, 0.1, 5000)])
def test_mu_is_the_slowest_eigenvalue_of_the_compiled_jacobian(closure, alpha, wstar, length):
    predicted = derive_predictions(closure).evaluate(alpha, wstar, length, 1e-4)["mu"]
    jac = np.array(load_system("induction_head", closure).jac(
        0, [alpha, 30.0, 1 - alpha, math.log(wstar)], alpha, wstar, float(length)))
    # (w_v2, ln w_kq) block: similar to the (w_v2, w_kq) Jacobian, same eigenvalues.
    eigenvalues = np.linalg.eigvals(jac[2:, 2:])
    assert np.all(eigenvalues.real < 0) and np.allclose(eigenvalues.imag, 0)
    assert predicted == pytest.approx(-eigenvalues.real.max(), rel=1e-10)  # two exact forms


@pytest.mark.parametrize("closure", CLOSURES)
def test_window_limit_matches_a_long_sequence(closure):
    pred = derive_predictions(closure)
    params = ModelParams(L=100000, alpha=0.5, wstar=0.3, sigma=1e-8)
    phases = solve(params, closure).phases
    measured = (phases["T_III"] - phases["T_II"]) / params.L
    # The L -> oo limit system differs from L = 1e5 by O(1/L) ~ 1e-5.
    assert measured == pytest.approx(pred.window_over_l(0.5, 0.3), rel=1e-3)
