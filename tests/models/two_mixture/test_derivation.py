"""The reduction derived from the unreduced network, held against the spec's formulas
(typed here, and only here, as the independent reference)."""

import random

import pytest
import sympy as sp

from reduced_odes import DerivationError
from reduced_odes.models.two_mixture.reduction import _assert_tangent, _manifold, reduce_model
from reduced_odes.models.two_mixture.unreduced import network

LOSSES = ("square", "logistic")


def spec_phi(loss, u):
    return (1 - u) ** 2 / 2 if loss == "square" else sp.log(1 + sp.exp(-u))


def at_random_points(expr, symbols, n=5, seed=3):
    """Max |expr| at random points (positive state, unbalanced)."""
    rng = random.Random(seed)
    worst = 0
    for _ in range(n):
        point = {s: sp.Float(rng.uniform(0.2, 1.8), 30) for s in symbols}
        worst = max(worst, abs(sp.N(expr.xreplace(point), 30)))
    return worst


@pytest.mark.parametrize("loss", LOSSES)
def test_composite_variables_and_reduced_loss(loss):
    r = reduce_model(loss)
    zeta, N, M, q, k = r.state
    assert sp.simplify(r.A_of_state - r.mu * zeta / (2 * sp.sqrt(2))) == 0
    assert sp.simplify(r.ell_of_state - r.kappa * q * k) == 0
    A, ell = r.A, r.ell
    theta = sp.tanh(ell / 2)
    spec = spec_phi(loss, A) / 2 + spec_phi(loss, A * theta) / 2
    # 1e-25: both sides are evaluated at 30 digits; any real difference is O(1e-2).
    assert at_random_points(r.loss_Al - spec, [A, ell]) < 1e-25
    assert at_random_points(r.consistent_Al - spec_phi(loss, A), [A, ell]) < 1e-25
    assert at_random_points(r.hard_Al - spec_phi(loss, A * theta), [A, ell]) < 1e-25


@pytest.mark.parametrize("loss", LOSSES)
def test_reduced_flow_matches_spec(loss):
    r = reduce_model(loss)
    zeta, N, M, q, k = r.state
    A, ell, mu, kappa = r.A, r.ell, r.mu, r.kappa
    L_A, L_ell = sp.diff(r.loss_Al, A), sp.diff(r.loss_Al, ell)
    back = {A: r.A_of_state, ell: r.ell_of_state}
    L_A, L_ell = L_A.xreplace(back), L_ell.xreplace(back)
    spec = [-(mu / (2 * sp.sqrt(2))) * (N + M) * L_A, -(mu / sp.sqrt(2)) * zeta * L_A,
            -(mu / sp.sqrt(2)) * zeta * L_A, -(kappa / 2) * k * L_ell, -(kappa / 2) * q * L_ell]
    gates = {r.gate_neurons: 1, r.gate_attention: 1}
    for derived, expected in zip(r.rhs, spec, strict=True):
        # 1e-25: both sides are evaluated at 30 digits; any real difference is O(1e-2).
        assert at_random_points(derived.xreplace(gates) - expected, [*r.state, mu, kappa]) < 1e-25


def test_spec_derivatives_of_the_loss():
    for loss, spec_LA, spec_Lell in (
        ("square", lambda A, t: (A - 1) / 2 + t * (A * t - 1) / 2,
         lambda A, t: A * (1 - t**2) * (A * t - 1) / 4),
        ("logistic", lambda A, t: -sp.exp(-A) / (1 + sp.exp(-A)) / 2
         - t * sp.exp(-A * t) / (1 + sp.exp(-A * t)) / 2,
         lambda A, t: -A * (1 - t**2) * (1 / (1 + sp.exp(A * t))) / 4),
    ):
        r = reduce_model(loss)
        t = sp.tanh(r.ell / 2)
        assert at_random_points(sp.diff(r.loss_Al, r.A) - spec_LA(r.A, t), [r.A, r.ell]) < 1e-25
        assert at_random_points(sp.diff(r.loss_Al, r.ell) - spec_Lell(r.A, t), [r.A, r.ell]) < 1e-25


@pytest.mark.parametrize("loss", LOSSES)
def test_composite_flow_with_invariants(loss):
    """dA/dt = -(mu^2/8) sqrt(Dn^2 + 32 A^2/mu^2) L_A,
    d ell/dt = -(kappa^2/2) sqrt(Da^2 + 4 ell^2/kappa^2) L_ell."""
    r = reduce_model(loss)
    zeta, N, M, q, k = r.state
    mu, kappa = r.mu, r.kappa
    gates = {r.gate_neurons: 1, r.gate_attention: 1}
    rhs = r.rhs.xreplace(gates)
    dA = sp.diff(r.A_of_state, zeta) * rhs[0]
    dell = r.kappa * (k * rhs[3] + q * rhs[4])
    back = {r.A: r.A_of_state, r.ell: r.ell_of_state}
    L_A = sp.diff(r.loss_Al, r.A).xreplace(back)
    L_ell = sp.diff(r.loss_Al, r.ell).xreplace(back)
    Dn2 = (N - M) ** 2 + 4 * (N * M - zeta**2)
    Da = q**2 - k**2
    A, ell = r.A_of_state, r.ell_of_state
    spec_A = -(mu**2 / 8) * sp.sqrt(Dn2 + 32 * A**2 / mu**2) * L_A
    spec_ell = -(kappa**2 / 2) * sp.sqrt(Da**2 + 4 * ell**2 / kappa**2) * L_ell
    symbols = [*r.state, mu, kappa]
    assert at_random_points(dA - spec_A, symbols) < 1e-25  # 30-digit evaluation
    assert at_random_points(dell - spec_ell, symbols) < 1e-25


def test_three_conserved_quantities_asserted():
    names = [i.name for i in reduce_model("square").identities]
    for quantity in ("N - M", "N M - zeta^2", "q^2 - k^2"):
        assert f"d/dt ({quantity}) = 0" in names


def test_tangency_check_can_fail():
    r = reduce_model("square")
    man = _manifold(network(4))
    wrong = r.rhs.copy()
    wrong[3] = wrong[3] * (1 + sp.Rational(1, 10**6))  # a relative error far above 1e-10
    with pytest.raises(DerivationError, match="tangency"):
        _assert_tangent(man, "square", wrong, r.state, (r.gate_neurons, r.gate_attention),
                        points=1)


def test_engine_derivation_has_the_observables():
    from reduced_odes.models.two_mixture import MODEL

    d = MODEL.derive("logistic")
    assert set(d.observables) == {"loss", "loss_consistent", "loss_hard", "A", "ell", "theta"}
    assert d.coordinate_names == ("zeta_scaled", "log_N", "log_M", "log_q", "log_k")
