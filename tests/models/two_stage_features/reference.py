"""The spec's formulas, typed in as the independent reference for the tests (never used by
the package)."""

from __future__ import annotations

import math

import numpy as np


def rho_s(pi: float, N: int, per: int) -> tuple[float, float]:
    """``rho_X = pi_X/per`` (per = 2 for P, 4 for Q) and ``s_X``."""
    rho = pi / per
    return rho, rho**2 + rho * (1 - rho) / N


def losses(p, v: float, a: float, b: float) -> tuple[float, float]:
    """``(L_P, L_Q)`` of spec section 3 (ReLU, a, b > 0)."""
    pi_Q = 1 - p.pi_P
    rho_P, s_P = rho_s(p.pi_P, p.N, 2)
    rho_Q, s_Q = rho_s(pi_Q, p.N, 4)
    A, B = v * p.gamma**2 * a, v * p.mu**2 * abs(b)
    return (p.pi_P / 2 * (1 - 2 * rho_P * A + s_P * A**2),
            pi_Q / 2 * (1 - 2 * rho_Q * B + s_Q * B**2))


def linear_losses(p, v: float, a: float, b: float) -> tuple[float, float]:
    """``(L_P, L_Q)`` of spec section 7.7 (linear activation)."""
    pi_P, pi_Q = p.pi_P, 1 - p.pi_P
    A, B = v * p.gamma**2 * a, v * p.mu**2 * b
    return (pi_P / 2 * (1 - 2 * pi_P * A + (pi_P**2 + pi_P * (1 - pi_P) / p.N) * A**2),
            pi_Q / 2 * (1 + pi_Q * B**2 / (2 * p.N)))


def optima(p) -> tuple[float, float]:
    """``(A*, B*)``."""
    pi_Q = 1 - p.pi_P
    return (2 * p.N / (p.N * p.pi_P - p.pi_P + 2), 4 * p.N / (p.N * pi_Q - pi_Q + 4))


def rates(p) -> tuple[float, float, float]:
    """``(lambda_P, lambda_Q, kappa)`` of section 6.1."""
    pi_Q = 1 - p.pi_P
    lam_P = p.pi_P**2 * p.gamma**2 * p.v0 / p.d_P
    lam_Q = pi_Q**2 * p.mu**2 * p.v0 / (2 * p.d_Q)
    return lam_P, lam_Q, lam_Q / lam_P


def real_root_above(coefficients, floor: float) -> float:
    roots = np.roots(coefficients)
    return float(max(r.real for r in roots if abs(r.imag) < 1e-9 and r.real > floor))


def stage_values(p) -> dict:
    """Section 6.2: w1, v1, a1, v_inf, a_inf, b_inf."""
    A_s, B_s = optima(p)
    if not p.train_value:
        return {"w1": 1.0, "v1": p.v0, "a1": A_s / (p.gamma**2 * p.v0), "v_inf": p.v0,
                "a_inf": A_s / (p.gamma**2 * p.v0), "b_inf": B_s / (p.mu**2 * p.v0)}
    c_P = p.d_P * A_s / (p.gamma**2 * p.v0**3)
    w1 = real_root_above([1, 0, -1, -c_P], 1.0)
    C = p.v0**2 - (p.d_P + p.d_Q) * p.sigma**2
    v_inf = real_root_above([1, 0, -C, -(p.d_P * A_s / p.gamma**2 + p.d_Q * B_s / p.mu**2)], 0.0)
    return {"w1": w1, "v1": w1 * p.v0, "a1": A_s / (p.gamma**2 * w1 * p.v0), "v_inf": v_inf,
            "a_inf": A_s / (p.gamma**2 * v_inf), "b_inf": B_s / (p.mu**2 * v_inf), "c_P": c_P}


def ell(p) -> float:
    return -2 * math.log(p.sigma)


def spec_lag(p, v, a, b, B):
    """The adiabatic lag ``A - A*`` of Stage II exactly as spec section 6.7 types it."""
    pi_Q = 1 - p.pi_P
    _, s_P = rho_s(p.pi_P, p.N, 2)
    _, s_Q = rho_s(pi_Q, p.N, 4)
    B_star = optima(p)[1]
    return p.d_P * pi_Q * s_Q * p.mu**2 * b * (B_star - B) / (2 * p.pi_P * s_P * p.gamma**2 * v**2)
