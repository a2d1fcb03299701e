"""The reduced model's numbers: float helpers without SymPy (the composite variables of a
state in the integration coordinates, the reduced loss, the initial state), and the
closed forms of :mod:`.closed_forms` evaluated as floats (:func:`predictor`).

The helpers serve the stop rule, the parameter checks and the finite-width
comparison; the tests hold each against the derived expressions.  SymPy is imported
only when a :class:`Predictor` is first built.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING

import numpy as np
from scipy.integrate import quad
from scipy.optimize import brentq, minimize_scalar

from .params import TwoMixtureParams

if TYPE_CHECKING:  # SymPy is imported only where the closed forms are first evaluated
    from .closed_forms import ClosedForms

__all__ = ["Predictor", "composite", "initial_moments", "phi", "predictor", "reduced_loss",
           "square_optimum"]


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


def phi_source(loss: str, u: str) -> str:
    """:func:`phi` of the Python expression ``u``, as Python source that does its arithmetic
    operation for operation (``np.logaddexp(0, -u)`` is ``log1p(exp(-u))`` for ``u > 0``,
    else ``-u + log1p(exp(u))``): the same floats, not only the same function.

    Examples
    --------
    >>> import math
    >>> eval(phi_source("logistic", "u"), {"math": math, "u": 3.0}) == float(phi("logistic", 3.0))
    True
    """
    if loss == "square":
        return f"(0.5 * (1.0 - {u}) ** 2)"
    return f"(math.log1p(math.exp(-{u})) if {u} > 0 else -{u} + math.log1p(math.exp({u})))"


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


class Predictor:
    """Float evaluation of the closed forms of one loss (see :func:`predictor`)."""

    def __init__(self, cf: ClosedForms):
        import sympy as sp

        self.loss = cf.loss
        modules = ["scipy", "numpy"]
        sym = (cf.mu, cf.kappa)
        self._rate_A = sp.lambdify((*sym, cf.A, cf.ell), cf.rate_A, modules)
        self._rate_ell = sp.lambdify((*sym, cf.A, cf.ell), cf.rate_ell, modules)
        self._plateau = sp.lambdify((*sym, cf.A), cf.plateau_rate, modules)
        self._T1 = sp.lambdify((*sym, cf.A0, cf.A), cf.T1, modules)
        self.square = cf.T_of_ell is not None
        if self.square:
            theta = sp.Symbol("theta", positive=True)
            self._T = sp.lambdify((*sym, cf.A0, cf.ell0, cf.ell), cf.T_of_ell, modules)
            self._L_star = sp.lambdify((cf.ell,), cf.L_star, modules)
            self._A_star = sp.lambdify((theta,), cf.A_star, modules)
            self._slopes = [sp.lambdify(sym, e, modules) for e in (cf.slope_att, cf.slope_sigma)]

    # -- stage 1 ------------------------------------------------------------------------
    def T1(self, mu: float, kappa: float, A0: float, A1: float) -> float:
        """Time from ``A0`` to ``A1`` while ``theta = 0`` (square: logistic curve)."""
        return float(self._T1(mu, kappa, A0, A1))

    def ell_on_plateau(self, mu: float, kappa: float, ell0: float, A0: float, A: float) -> float:
        """``ell`` when ``A`` has grown from ``A0``: ``ell0 exp(int rate_p(A) dt)``,
        ``theta ~ 0``."""
        exponent = quad(lambda x: self._plateau(mu, kappa, x) / self._rate_A(mu, kappa, x, 0.0),
                        A0, A, epsabs=0, epsrel=1e-12, limit=200)[0]
        return ell0 * math.exp(exponent)

    # -- slow manifold (square) ---------------------------------------------------------
    def T_of_ell(self, mu: float, kappa: float, A0: float, ell0: float, ell: float) -> float:
        """``T(ell)`` along stages 2-3."""
        return float(self._T(mu, kappa, A0, ell0, ell))

    def L_star(self, ell: float) -> float:
        return float(self._L_star(ell))

    def A_star(self, theta: float) -> float:
        return float(self._A_star(theta))

    def ell_of_L(self, L: float) -> float:
        """The ``ell`` at which the slow manifold's loss is ``L``."""
        return brentq(lambda x: math.log(self.L_star(x)) - math.log(L), 1e-9, 300, xtol=1e-14)

    def ell_of_t(self, mu, kappa, A0, ell0, t: float) -> float:
        """``T^{-1}(t)`` by bisection on ``ell`` (``T`` increases)."""
        hi = 1.0
        while self.T_of_ell(mu, kappa, A0, ell0, hi) < t:
            hi *= 2
        return brentq(lambda x: self.T_of_ell(mu, kappa, A0, ell0, x) - t, 1e-300, hi,
                      xtol=1e-13, rtol=1e-13)

    def slopes(self, mu: float, kappa: float) -> tuple[float, float]:
        """``(dT2/d ln(1/sigma_att), dT2/d ln(1/sigma))``."""
        return tuple(float(f(mu, kappa)) for f in self._slopes)

    # -- Algorithm 1 --------------------------------------------------------------------
    def stage_I(self, mu, kappa, A0, ell0, A_I) -> float:
        """Neurons only, attention frozen at ``ell0``: time from ``A0`` to ``A_I``."""
        return quad(lambda x: 1 / self._rate_A(mu, kappa, x, ell0), A0, A_I,
                    epsabs=0, epsrel=1e-12, limit=200)[0]

    def stage_II(self, mu, kappa, ell0, A_I, theta_II) -> float:
        """Attention only, neurons frozen at ``A_I``: time from ``ell0`` to ``theta_II``."""
        ell_II = 2 * math.atanh(theta_II)
        return quad(lambda x: 1 / (x * self._rate_ell(mu, kappa, A_I, x) / x), ell0, ell_II,
                    epsabs=0, epsrel=1e-12, limit=400, points=[1e-3, 1e-2, 1e-1])[0]


@cache
def predictor(loss: str) -> Predictor:
    """Float predictions of ``loss`` (derived once per process).

    Examples
    --------
    >>> p = predictor("square")  # doctest: +SKIP
    >>> A0 = 1e-4 / (2 * math.sqrt(2))
    >>> round(p.T1(1.0, 0.5, A0, 0.5), 4)  # doctest: +SKIP
    28.9915
    """
    from .closed_forms import closed_forms

    return Predictor(closed_forms(loss))
