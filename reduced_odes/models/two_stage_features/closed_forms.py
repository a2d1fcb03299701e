"""Section-6 closed forms, derived by SymPy from the reduced flow (imported only when asked for).

Stage I runs on the curve ``b = 0`` of the conservation law, Stage II on the
slow manifold ``A = A*``; both are written in ``w = v/v0``.  Each stage time
is ``(1/rate) ∫ dt/d ln(x)`` with the logarithmic singularity at the start
subtracted; what is subtracted is added back as ``ℓ = ln(1/σ²)`` and the
matching constant of the plateau.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import sympy as sp

from .derivation import SYMBOLS, reduction

__all__ = ["ClosedForms", "closed_forms"]


@dataclass(frozen=True)
class ClosedForms:
    """The derived expressions; every one is in ``w``, ``w1``, ``c_P``, ``c_Q`` and the
    parameters."""

    rate: dict[str, sp.Expr]            # ln-growth rate of a (P) and b (Q) at the origin, in v
    kappa: sp.Expr
    stage_one_value: sp.Expr             # polynomial in w whose root > 1 is w1
    final_value: sp.Expr                 # polynomial in v whose positive root is v_inf
    c: dict[str, sp.Expr]                # c_P, c_Q in the parameters
    leading: dict[str, sp.Expr]          # T_P, T_Q, plateau to leading order in ell
    fraction: dict[str, sp.Expr]         # A/A* on Stage I, B/B* on Stage II, b/a on Stage II
    log_product: dict[str, sp.Expr]      # ln a (Stage I) and ln b (Stage II), in w
    integrand: dict[str, sp.Expr]        # J_P, K, J_Q
    gram: sp.Matrix                      # Gram matrix of grad A, grad B in the metric
    curvature: tuple[sp.Expr, sp.Expr]   # d^2 L/dA^2, d^2 L/dB^2
    logistic: dict[str, sp.Expr]         # fixed value: a(t), T(theta) per block
    lag: sp.Expr                         # adiabatic A - A* in Stage II


W1, C_P, C_Q, THETA, ELL, T, V0 = sp.symbols("w1 c_P c_Q theta ell t v0", positive=True)


def _rates(r) -> dict[str, sp.Expr]:
    S = SYMBOLS
    return {"P": sp.simplify(sp.limit(r.balanced["a"] / S.a, S.a, 0)),
            "Q": sp.simplify(sp.limit(r.balanced["b"] / S.b, S.b, 0))}


def _stage_curves(r) -> tuple[dict, dict]:
    """``a(w)`` on Stage I and ``(a, b)(w)`` on Stage II from the conservation law (σ → 0)."""
    S = SYMBOLS
    law = (V0 * S.w) ** 2 - V0**2 - S.d_P * S.a - S.d_Q * S.b     # v^2 - C - d_P a - d_Q b
    a_one = sp.solve(law.subs(S.b, 0), S.a)[0]
    a_slow = sp.solve(sp.Eq(V0 * S.w * S.gamma**2 * S.a, r.optimum["P"]), S.a)[0]
    b_slow = sp.solve(law.subs(S.a, a_slow), S.b)[0]
    return {"a": a_one}, {"a": a_slow, "b": b_slow}


def _c_values(r) -> dict[str, sp.Expr]:
    S = SYMBOLS
    return {"P": S.d_P * r.optimum["P"] / (S.gamma**2 * V0**3),
            "Q": S.d_Q * r.optimum["Q"] / (S.mu**2 * V0**3)}


def _in_c(expr: sp.Expr, r) -> sp.Expr:
    """``expr`` with ``A*`` and ``B*`` written through ``c_P`` and ``c_Q``."""
    S = SYMBOLS
    c = _c_values(r)
    swap = {S.gamma: sp.sqrt(S.d_P * r.optimum["P"] / (C_P * V0**3)),
            S.mu: sp.sqrt(S.d_Q * r.optimum["Q"] / (C_Q * V0**3))}
    assert c  # c_P, c_Q are defined by the same relations
    return sp.simplify(expr.subs(swap))


def _stage_integrands(r, rate, one, slow) -> tuple[dict, dict, dict]:
    S = SYMBOLS
    on_one = {S.v: V0 * S.w, S.a: one["a"], S.b: 0}
    on_slow = {S.v: V0 * S.w, S.a: slow["a"], S.b: slow["b"]}
    lam_P, lam_Q = rate["P"].subs(S.v, V0), rate["Q"].subs(S.v, V0)
    # lambda * dt/d ln x along each stage, and d ln x/dw.
    time_one = _in_c(sp.simplify(lam_P * one["a"] / r.balanced["a"].subs(on_one)), r)
    time_two = _in_c(sp.simplify(lam_Q * slow["b"] / r.balanced["b"].subs(on_slow)), r)
    dlog_one = sp.simplify(sp.diff(sp.log(one["a"]), S.w))
    log_b = sp.expand_log(sp.log(_in_c(slow["b"], r)), force=True)
    dlog_two = sp.simplify(sp.diff(log_b, S.w))
    plateau_one = sp.factor(sp.cancel(((W1 - S.w) * time_one).subs(C_P, W1**3 - W1)))
    integrand = {"J_P": (time_one - 1) * dlog_one,
                 "K": (plateau_one - (W1 - 1)) * dlog_one,
                 "J_Q": (time_two - 1 / W1) * dlog_two}
    fraction = {
        "A_one": _in_c(sp.simplify((V0 * S.w * S.gamma**2 * one["a"]) / r.optimum["P"]), r),
        "B_two": _in_c(sp.simplify((V0 * S.w * S.mu**2 * slow["b"]) / r.optimum["Q"]), r),
        "b_over_a": _in_c(sp.simplify(slow["b"] / slow["a"]), r),
    }
    logs = {"a_one": sp.log(_in_c(one["a"], r)), "b_two": log_b}
    return integrand, fraction, logs


def _gram(r) -> tuple[sp.Matrix, tuple]:
    """``G = J M^{-1} Jᵀ`` for ``(A, B)`` at a balanced point, and the curvatures of ``L``."""
    S = SYMBOLS
    A = S.v * S.gamma**2 * S.k_P * S.q_P
    B = S.v * S.mu**2 * S.k_Q * S.q_Q
    jac = sp.Matrix([[sp.diff(x, s) for s in S.state] for x in (A, B)])
    balanced = {S.k_P: sp.sqrt(S.a), S.q_P: sp.sqrt(S.a), S.k_Q: sp.sqrt(S.b), S.q_Q: sp.sqrt(S.b)}
    gram = sp.simplify((jac * r.metric.inv() * jac.T).subs(balanced))
    curvature = (sp.diff(r.in_product["P"], S.A, 2), sp.diff(r.in_product["Q"], S.B, 2))
    return gram, curvature


def _logistic(r, rate) -> dict[str, sp.Expr]:
    """Fixed value: each block is logistic; the time to reach ``theta`` of its limit from σ²."""
    S = SYMBOLS
    out = {}
    for name, x, flow in (("P", S.a, r.balanced["a"]), ("Q", S.b, r.balanced["b"])):
        limit = sp.solve(flow / x, x)[0]
        lam = rate[name]
        # flow = lam x (1 - x/limit) is asserted, then separated: dt = dx / flow.
        if sp.simplify(flow - lam * x * (1 - x / limit)) != 0:
            raise AssertionError(f"the {name} block is not logistic: {flow}")
        y, log_y = sp.symbols("y log_y", positive=True)
        # A primitive of dt = dx/flow, checked by differentiation; written with ln x kept
        # apart so that x = sigma^2 = e^{-ell} never has to be formed.
        primitive = (sp.log(y) - sp.log(limit - y)) / lam
        if sp.simplify(sp.diff(primitive, y) - 1 / flow.subs(x, y)) != 0:
            raise AssertionError(f"wrong primitive for the {name} block")
        start = primitive.subs(sp.log(y), log_y).subs(y, sp.exp(log_y)).subs(log_y, -ELL)
        time = primitive.subs(y, THETA * limit) - start
        out[f"T_{name}"], out[f"limit_{name}"] = time, limit
    return out


@cache
def closed_forms() -> ClosedForms:
    """Derive the section-6 closed forms of the ReLU model.

    Examples
    --------
    >>> cf = closed_forms()
    >>> cf.stage_one_value
    -c_P + w**3 - w
    """
    S = SYMBOLS
    r = reduction("relu")
    rate = _rates(r)
    kappa = sp.simplify(rate["Q"] / rate["P"])
    one, slow = _stage_curves(r)
    stage_one = sp.expand(sp.numer(sp.together(
        _in_c((V0 * S.w) ** 2 - V0**2 - S.d_P * r.optimum["P"] / (S.gamma**2 * V0 * S.w), r)
        / V0**2)))
    # v^2 - C = d_P a + d_Q b with a = A*/(gamma^2 v), b = B*/(mu^2 v), times v.
    drive = sp.simplify(S.v * (S.d_P * r.optimum["P"] / (S.gamma**2 * S.v)
                               + S.d_Q * r.optimum["Q"] / (S.mu**2 * S.v)))
    if S.v in drive.free_symbols:
        raise AssertionError(f"the final-value polynomial is not a cubic: {drive}")
    final = S.v**3 - sp.Symbol("C") * S.v - drive
    lam_P, lam_Q = rate["P"].subs(S.v, V0), rate["Q"].subs(S.v, V0)
    t_P, t_Q = sp.symbols("T_P T_Q", positive=True)
    # ln a: -ell + lam_P T_P = 0.  ln b: -ell + lam_Q T_P + lam_Q w1 (T_Q - T_P) = 0.
    T_P_lead = sp.solve(-ELL + lam_P * t_P, t_P)[0]
    T_Q_lead = sp.simplify(
        sp.solve(-ELL + lam_Q * T_P_lead + lam_Q * W1 * (t_Q - T_P_lead), t_Q)[0])
    integrand, fraction, logs = _stage_integrands(r, rate, one, slow)
    gram, curvature = _gram(r)
    lag = sp.simplify(-gram[0, 1] * curvature[1] * (S.B - r.optimum["Q"])
                      / (gram[0, 0] * curvature[0]))
    return ClosedForms(rate, kappa, stage_one, final, _c_values(r),
                       {"T_P": T_P_lead, "T_Q": T_Q_lead,
                        "plateau": sp.simplify(T_Q_lead - T_P_lead)},
                       fraction, logs, integrand, gram, curvature, _logistic(r, rate), lag)
