"""Float helpers of the reduced model, without SymPy: the composite variables of a state
in the integration coordinates, the reduced loss, and the initial state.

They serve the stop rule, the parameter checks and the finite-width
comparison; the tests hold each against the derived expressions.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np
from scipy.optimize import minimize_scalar

from .params import TwoMixtureParams

__all__ = ["composite", "initial_moments", "phi", "reduced_loss", "square_optimum"]


def phi(loss: str, u):
    """The per-sample loss of the margin ``u``, stable for large ``|u|``.

    Examples
    --------
    >>> float(phi("square", 0.0)), round(float(phi("logistic", 0.0)), 6)
    (0.5, 0.693147)
    """
    u = np.asarray(u, dtype=float)
    if loss == "square":
        return 0.5 * (1.0 - u) ** 2
    return np.logaddexp(0.0, -u)


def reduced_loss(loss: str, A, theta):
    """``E phi(yF)``: half the samples at margin ``A``, half at ``A theta``.

    Examples
    --------
    >>> float(reduced_loss("square", 1.0, 0.0))
    0.25
    """
    return 0.5 * phi(loss, A) + 0.5 * phi(loss, np.asarray(A) * np.asarray(theta))


def composite(params: TwoMixtureParams, y: Sequence[float]) -> tuple[float, float, float]:
    """``(A, ell, theta)`` at the integration coordinates
    ``y = (zeta / sigma^2, ln N, ln M, ln q, ln k)``.

    Examples
    --------
    >>> A, ell, theta = composite(TwoMixtureParams(), [1.0, 0, 0, math.log(1e-3), math.log(1e-3)])
    >>> round(A / (1e-4 / (2 * math.sqrt(2))), 12), round(ell / 5e-7, 12)
    (1.0, 1.0)
    """
    A = params.mu * params.sigma**2 * y[0] / (2 * math.sqrt(2))
    ell = params.kappa * math.exp(y[3] + y[4])
    return A, ell, math.tanh(ell / 2)


def initial_moments(params: TwoMixtureParams) -> dict[str, float]:
    """``(zeta, N, M, q, k)`` at t = 0: sign-paired neurons and mirror heads.

    ``averaged``: every neuron ``(sigma, sigma u+)`` up to its sign pair;
    ``random``: the m -> infinity moments of ``a ~ N(0, sigma^2)``,
    ``w ~ N(0, sigma^2 I)``.

    Examples
    --------
    >>> initial_moments(TwoMixtureParams(init="random", sigma=0.1))["zeta"]
    0.0
    """
    s2 = params.sigma**2
    zeta = s2 if params.init == "averaged" else 0.0
    return {"zeta": zeta, "N": s2, "M": s2, "q": params.sigma_att, "k": params.sigma_att}


@functools.lru_cache(maxsize=1024)  # every run's parameter check asks it at theta0
def square_optimum(theta: float) -> tuple[float, float]:
    """``(A*, L*)``: the square loss minimised over ``A`` at a fixed margin ``theta``
    (found numerically; the closed form is derived in ``closed_forms``).

    Examples
    --------
    >>> A, L = square_optimum(0.0)
    >>> round(A, 6), round(L, 6)
    (1.0, 0.25)
    """
    best = minimize_scalar(lambda A: float(reduced_loss("square", A, theta)),
                           bracket=(0.0, 1.0), tol=1e-12)
    return float(best.x), float(best.fun)
