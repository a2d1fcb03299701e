"""The derived loss, metric, flow and conservation laws, held against the spec's formulas."""

import math

import pytest
import sympy as sp

from reduced_odes import DerivationError
from reduced_odes.models.two_stage_features import TwoStageParams
from reduced_odes.models.two_stage_features.derivation import SYMBOLS as S
from reduced_odes.models.two_stage_features.derivation import derivation, reduction
from reduced_odes.models.two_stage_features.numerics import targets

from . import reference as ref


@pytest.fixture(scope="module")
def relu():
    return reduction("relu")


def test_loss_equals_spec_closed_form_symbolically(relu):
    pi_Q = 1 - S.pi_P
    rho_P, rho_Q = S.pi_P / 2, pi_Q / 4
    s_P = rho_P**2 + rho_P * (1 - rho_P) / S.N
    s_Q = rho_Q**2 + rho_Q * (1 - rho_Q) / S.N
    assert sp.simplify(relu.in_product["P"]
                       - S.pi_P / 2 * (1 - 2 * rho_P * S.A + s_P * S.A**2)) == 0
    assert sp.simplify(relu.in_product["Q"] - pi_Q / 2 * (1 - 2 * rho_Q * S.B + s_Q * S.B**2)) == 0
    assert sp.simplify(relu.optimum["P"] - 2 * S.N / (S.N * S.pi_P - S.pi_P + 2)) == 0
    assert sp.simplify(relu.optimum["Q"] - 4 * S.N / (S.N * pi_Q - pi_Q + 4)) == 0


def test_linear_control_loss_equals_spec(relu):
    linear = reduction("linear")
    pi_P, pi_Q = S.pi_P, 1 - S.pi_P
    spec_P = pi_P / 2 * (1 - 2 * pi_P * S.A + (pi_P**2 + pi_P * (1 - pi_P) / S.N) * S.A**2)
    spec_Q = pi_Q / 2 * (1 + pi_Q * S.B**2 / (2 * S.N))
    assert sp.simplify(linear.in_product["P"] - spec_P) == 0
    assert sp.simplify(linear.in_product["Q"] - spec_Q) == 0
    # dL_Q/db >= 0: b never grows under the linear activation.
    assert sp.factor(sp.diff(linear.in_product["Q"], S.B)).is_nonnegative


def test_metric_is_frobenius_pullback(relu):
    assert relu.frobenius == sp.diag(1, S.d_P, S.d_P, S.d_Q, S.d_Q)
    assert relu.metric.subs(S.tau, 1) == relu.frobenius


def test_flow_is_metric_gradient(relu):
    for i, x in enumerate(S.state):
        expected = -sp.diff(relu.loss, x) / relu.frobenius[i, i]
        assert sp.simplify(relu.rhs[i].subs(S.tau, 1) - expected) == 0
    assert relu.rhs[0].subs(S.tau, 0) == 0  # a frozen value does not move


def test_conservation_and_balanced_identities_are_recorded(relu):
    names = " | ".join(i.name for i in relu.identities)
    for needed in ("k_P^2 - q_P^2", "k_Q^2 - q_Q^2", "v dL/dv", "trained value",
                   "balanced flow da/dt", "balanced flow db/dt", "balanced flow dv/dt", "parity"):
        assert needed in names


def test_balanced_form_matches_spec(relu):
    s_P = (S.pi_P / 2) ** 2 + (S.pi_P / 2) * (1 - S.pi_P / 2) / S.N
    A = S.v * S.gamma**2 * S.a
    A_star = 2 * S.N / (S.N * S.pi_P - S.pi_P + 2)
    spec_da = 2 * S.pi_P * s_P * S.gamma**2 * S.v * S.a / S.d_P * (A_star - A)
    assert sp.simplify(relu.balanced["a"] - spec_da) == 0


def test_parity_in_b_and_no_parity_in_a(relu):
    gap = [i for i in relu.identities if i.name == "L_P(-a) - L_P(a)"][0].lhs
    # Spec: L_P(-a) = (pi_P/2)(1 + 2 rho_P |A| + s_P A^2), so the gap is 2 pi_P rho_P A.
    A = S.v * S.gamma**2 * S.k_P * S.q_P
    assert sp.simplify(gap - 2 * S.pi_P * (S.pi_P / 2) * A) == 0


def test_numeric_targets_match_derivation():
    for p in (TwoStageParams(), TwoStageParams(N=3, pi_P=0.3, gamma=2.0, mu=0.7)):
        A_s, B_s = targets(p)
        A_ref, B_ref = ref.optima(p)
        # The quadratic fit from three float evaluations loses a few ulps only.
        assert A_s == pytest.approx(A_ref, rel=1e-12)
        assert B_s == pytest.approx(B_ref, rel=1e-12)


def test_derivation_observables_and_coordinates():
    d = derivation("relu")
    assert d.coordinate_names == ("v", "log_k_P", "log_q_P", "log_k_Q", "log_q_Q")
    for name in ("L_P", "L_Q", "eig_P", "eig_Q", "A_frac", "B_frac", "log_b_over_a"):
        assert name in d.observables
    # The crossing quantity is exact in the log coordinates: no exp() to underflow.
    assert not d.in_coordinates(d.observables["log_b_over_a"]).has(sp.exp)
    p = TwoStageParams()
    v, a, b = 1.3, 0.7, 0.2
    values = {S.v: v, S.k_P: math.sqrt(a), S.q_P: math.sqrt(a), S.k_Q: math.sqrt(b),
              S.q_Q: math.sqrt(b), S.gamma: p.gamma, S.mu: p.mu, S.pi_P: p.pi_P, S.N: p.N}
    L_P, L_Q = ref.losses(p, v, a, b)
    excess = float(d.observables["L_P_excess"].subs(values))
    L_P_min = ref.losses(p, ref.optima(p)[0], 1.0, 0.0)[0]
    assert excess == pytest.approx(L_P - L_P_min, rel=1e-12)  # float rounding only


def test_unknown_variant_is_a_derivation_error():
    with pytest.raises(DerivationError, match="variant"):
        reduction("tanh")
