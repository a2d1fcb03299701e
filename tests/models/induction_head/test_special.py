"""Tests of reduced_odes.models.induction_head.special against mpmath and against explicit sums."""

from __future__ import annotations

import math
import random
import warnings

import mpmath
import pytest
import sympy as sp
from sympy.core.function import ArgumentIndexError

from reduced_odes.models.induction_head.special import (
    NUMERIC_IMPLEMENTATIONS,
    D2LogPhi,
    D2LogPsi,
    DLogPhi,
    DLogPsi,
    Phi,
    Psi,
    d2log_phi,
    d2log_psi,
    dlog_phi,
    dlog_psi,
    phi,
    psi,
)

mp = mpmath.mp

# --------------------------------------------------------------------------- #
# mpmath references, built only from the defining geometric sums.
# --------------------------------------------------------------------------- #


def _ln_geom(x, n):
    """ln sum_{k=0}^{n-1} e^{-k x} (x != 0), never forming inf/inf or 1 - tiny."""
    if x > 0:
        return mp.log1p(-mp.exp(-n * x)) - mp.log1p(-mp.exp(-x))
    return mp.log(mp.expm1(-n * x)) - mp.log(mp.expm1(-x))


def _ln_phi(p, L):
    return -_ln_geom(p, L - 1)


def _ln_psi(p, L):
    return _ln_geom(2 * p, L - 2) - 2 * _ln_geom(p, L - 1)


def _uniform_cumulants(n):
    """Mean and variance of k uniform on 0..n-1 (the p -> 0 weights)."""
    return mp.mpf(n - 1) / 2, (mp.mpf(n) ** 2 - 1) / 12


def _reference(name, p, L):
    """50-digit value of function ``name`` at exact (p, L)."""
    p, L = mp.mpf(p), mp.mpf(L)
    if p == 0:
        # d ln Z/dp = -E[k], d^2 ln Z/dp^2 = Var[k]; S2 has weights e^{-2kp}.
        (m1, v1), (m2, v2) = _uniform_cumulants(L - 1), _uniform_cumulants(L - 2)
        return {"phi": 1 / (L - 1), "psi": (L - 2) / (L - 1) ** 2,
                "dlog_phi": m1, "dlog_psi": -2 * m2 + 2 * m1,
                "d2log_phi": -v1, "d2log_psi": 4 * v2 - 2 * v1}[name]
    if name == "phi":
        return (1 - mp.exp(-p)) / (1 - mp.exp(-(L - 1) * p))
    if name == "psi":
        s2 = (1 - mp.exp(-2 * (L - 2) * p)) / (1 - mp.exp(-2 * p))
        return s2 * ((1 - mp.exp(-p)) / (1 - mp.exp(-(L - 1) * p))) ** 2
    log_f = _ln_phi if name.endswith("phi") else _ln_psi
    order = 2 if name.startswith("d2") else 1
    # mpmath.diff works at (prec + 20) * (order + 1) bits with step 2^-(prec+10).
    return mpmath.diff(lambda x: log_f(x, L), p, order)


FUNCTIONS = {f.__name__: f for f in (phi, psi, dlog_phi, dlog_psi, d2log_phi, d2log_psi)}

P_GRID = [0.0, 1e-12, -1e-12, 1e-8, -1e-8, 1e-6, -1e-6, 1e-4, -1e-4, 1e-2, -1e-2, 0.1, -0.1,
          0.5, -0.5, 1.0, -1.0, 3.0, -3.0, 10.0, -10.0, 30.0, -50.0, 100.0, 700.0, 1e3, 1e4]
L_GRID = [4, 5, 6, 10, 37, 200, 1e4, 1e5, 1e7]


def _threshold_points(L):
    """Slopes straddling the series/direct switch |n x| = 2 of every D term."""
    pts = []
    for n, s in ((L - 1, 1), (L - 2, 2)):
        for f in (1 - 1e-9, 1 + 1e-9):
            pts += [2 * f / (n * s), -2 * f / (n * s)]
    return pts


CASES = [(p, L) for L in L_GRID for p in P_GRID + _threshold_points(L)]


@pytest.fixture(scope="module")
def references():
    with mpmath.workdps(50):
        return {(name, p, L): _reference(name, p, L)
                for name in FUNCTIONS for p, L in CASES}


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_against_mpmath(name, references):
    worst = 0.0
    for p, L in CASES:
        ref = references[name, p, L]
        got = FUNCTIONS[name](p, L)
        assert math.isfinite(got), (p, L, got)
        if abs(ref) < 1e-290:
            # Reference below the normal range: underflow to 0/tiny is the right answer.
            assert abs(got) < 1e-280, (p, L, got, ref)
            continue
        err = float(abs((got - ref) / ref))
        worst = max(worst, err)
        # Specified accuracy (measured worst on this grid: 8e-15, for d2log_psi).
        assert err <= 1e-12, (name, p, L, got, ref, err)
    print(f"{name}: max relative error {worst:.2e}")


def test_integer_l_cancellation_is_exact():
    # The O(L) constants of dlog_psi cancel exactly, so p = 0 gives exactly 1.
    assert dlog_psi(0.0, 1e7) == 1.0
    assert dlog_psi(-0.0, 4) == 1.0


def test_reflection_symmetry():
    for p, L in [(0.3, 10), (2.5, 4), (1e-3, 1e5)]:
        # ln psi(p) - ln psi(-p) = 2p, so the log-derivatives add to 2; rounding-level tolerance.
        assert dlog_psi(p, L) + dlog_psi(-p, L) == pytest.approx(2.0, rel=1e-14, abs=1e-14 * L)
        assert d2log_phi(p, L) == d2log_phi(-p, L)  # even by construction, bit for bit
        assert d2log_psi(p, L) == d2log_psi(-p, L)


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_edge_values_finite_without_warnings(name):
    f = FUNCTIONS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for p, L in [(0.0, 4), (0, 4), (-0.0, 1e7), (1e4, 4), (1e4, 1e7), (-50.0, 1e7),
                     (-50.0, 4), (1e-300, 1e7), (-1e-300, 1e7), (5e-324, 10), (800.0, 10)]:
            value = f(p, L)
            assert isinstance(value, float) and math.isfinite(value), (p, L, value)


def test_underflow_returns_zero():
    assert phi(-50.0, 1e7) == 0.0
    assert psi(-50.0, 1e7) > 0.0  # psi(-50) = e^{-100} psi(50) is a normal double


# --------------------------------------------------------------------------- #
# SymPy side.
# --------------------------------------------------------------------------- #

P, L_SYM = sp.symbols("p L")
CLASSES = [Phi, Psi, DLogPhi, DLogPsi, D2LogPhi, D2LogPsi]


def _close(a, b, digits=30):
    a, b = sp.N(a, digits + 10), sp.N(b, digits + 10)
    return abs(a - b) <= sp.Float(10) ** (-digits) * max(abs(b), 1)


def _random_points(count=4, seed=1):
    rng = random.Random(seed)
    return [(sp.Rational(rng.randint(-3000, 3000), 1000) or sp.Rational(1, 7),
             rng.choice([4, 5, 7, 23, 200])) for _ in range(count)]


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_derivative_rule_matches_closed_form(cls):
    f = cls(P, L_SYM)
    lhs = sp.diff(f, P).rewrite(sp.exp)
    rhs = sp.diff(f.rewrite(sp.exp), P)
    assert not lhs.has(*CLASSES) and not rhs.has(*CLASSES)
    for p0, l0 in _random_points():
        at = {P: p0, L_SYM: l0}
        # 30 of 40 evaluated digits: both sides are exact expressions, only evalf rounds.
        assert _close(lhs.subs(at), rhs.subs(at)), (cls, p0, l0)


def test_chain_rule_and_l_derivative():
    assert sp.diff(Phi(2 * P, L_SYM), P) == 2 * Phi(2 * P, L_SYM) * DLogPhi(2 * P, L_SYM)
    assert sp.diff(DLogPsi(P, L_SYM), P) == D2LogPsi(P, L_SYM)
    with pytest.raises(ArgumentIndexError):
        Phi(P, L_SYM).fdiff(2)
    assert isinstance(sp.diff(Psi(P, L_SYM), L_SYM), sp.Derivative)


def _explicit(L):
    """ln phi and ln psi from the finite sums at integer L."""
    z = sum(sp.exp(-k * P) for k in range(L - 1))
    s2 = sum(sp.exp(-2 * k * P) for k in range(L - 2))
    return -sp.log(z), sp.log(s2) - 2 * sp.log(z)


@pytest.mark.parametrize("L", [4, 5, 6, 7])
def test_closed_forms_match_finite_sums(L):
    ln_phi, ln_psi = _explicit(L)
    assert sp.simplify(Phi(P, L).rewrite(sp.exp) - sp.exp(ln_phi)) == 0
    assert sp.simplify(Psi(P, L).rewrite(sp.exp) - sp.exp(ln_psi)) == 0
    expected = {DLogPhi: sp.diff(ln_phi, P), DLogPsi: sp.diff(ln_psi, P),
                D2LogPhi: sp.diff(ln_phi, P, 2), D2LogPsi: sp.diff(ln_psi, P, 2)}
    for cls, ref in expected.items():
        closed = cls(P, L).rewrite(sp.exp)
        for p0 in (sp.Rational(-7, 3), sp.Rational(1, 1000), sp.Rational(5, 2)):
            # Independent derivation (differentiated sums) vs closed form, to 30 digits.
            assert _close(closed.subs(P, p0), ref.subs(P, p0)), (cls, L, p0)
        # p = 0 limit (eval) equals the limit of the finite-sum derivative.
        assert cls(0, L) == sp.limit(ref, P, 0)


def test_evalf_and_lambdify_use_matching_numerics():
    with mpmath.workdps(60):
        p0 = mp.mpf(0.3)  # the binary value of the Float passed below
        ref = (1 - mp.exp(-p0)) / (1 - mp.exp(-9 * p0))
    # 50 requested digits; compare to 45 to leave room for the last-digit rounding.
    assert abs(Phi(0.3, 10).evalf(50) - sp.Float(ref, 60)) < sp.Float("1e-45")
    assert Phi(0, 10) == sp.Rational(1, 9) and DLogPsi(0.0, 10) == 1
    assert abs(DLogPsi(sp.Float("1e-40", 60), 10).evalf(30) - 1) < 1e-30
    expr = Psi(P, L_SYM) * DLogPhi(P, L_SYM) + D2LogPsi(P, L_SYM)
    f = sp.lambdify((P, L_SYM), expr, modules=[NUMERIC_IMPLEMENTATIONS, "math"])
    for p0, l0 in [(0.3, 10), (-1.5, 50), (1e-9, 1000)]:
        want = float(expr.subs({P: sp.Rational(p0), L_SYM: l0}).evalf(30))
        # Double-precision evaluation of a three-term sum; cancellation is mild here.
        assert f(p0, l0) == pytest.approx(want, rel=1e-13)
    assert set(NUMERIC_IMPLEMENTATIONS) == {c.__name__ for c in CLASSES}
