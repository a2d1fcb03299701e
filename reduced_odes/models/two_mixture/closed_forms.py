"""Closed-form predictions of the reduced flow, derived by SymPy from the reduction.

From the derived reduced loss and mobility (:mod:`.reduction`):

* the balanced composite flow ``dA/dt``, ``d ell/dt`` (``N = M``, ``q = k``);
* stage 1 at ``theta = 0``: ``T1`` and ``T_A = int_0^inf (1 - A) dt`` as quadratures;
* the plateau growth rate ``lim_{ell->0} (d ell/dt)/ell`` (``kappa A/4`` square);
* the square-loss slow manifold ``A*(theta)``, ``L*``, its ``ell`` flow and
  ``T(ell)``, matched to the plateau; ``T2``, ``T3``;
* the scaling slopes of ``T2`` in ``ln(1/sigma_att)`` and ``ln(1/sigma)``;
* the Algorithm 1 stage quadratures.

SymPy is imported here only; :func:`predictor` caches the float functions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

import sympy as sp
from scipy.integrate import quad
from scipy.optimize import brentq

from reduced_odes.author import DerivationError

from .reduction import reduce_model

__all__ = ["ClosedForms", "closed_forms", "predictor"]


@dataclass(frozen=True)
class ClosedForms:
    """The derived closed forms of one loss (SymPy expressions; see the module docstring)."""

    loss: str
    A: sp.Symbol
    ell: sp.Symbol
    mu: sp.Symbol
    kappa: sp.Symbol
    A0: sp.Symbol
    ell0: sp.Symbol
    rate_A: sp.Expr          # dA/dt, balanced
    rate_ell: sp.Expr        # d ell/dt, balanced
    plateau_rate: sp.Expr    # lim (d ell/dt)/ell as ell -> 0, in A
    T1: sp.Expr              # time from A0 to A at theta = 0 (in A, A0)
    T_A: sp.Expr | None = None      # int (1 - A) dt (square)
    A_star: sp.Expr | None = None   # slow manifold in theta (square)
    L_star: sp.Expr | None = None   # loss on it, in ell
    manifold_rate: sp.Expr | None = None  # d ell/dt on it
    T_of_ell: sp.Expr | None = None  # T(ell), matched to the plateau (square)
    slope_att: sp.Expr | None = None    # dT2/d ln(1/sigma_att) (square)
    slope_sigma: sp.Expr | None = None  # dT2/d ln(1/sigma) as sigma -> 0 (square)


def _balanced(r) -> tuple[sp.Expr, sp.Expr]:
    """``dA/dt`` and ``d ell/dt`` on the balanced manifold ``N = M = zeta``, ``q = k``."""
    zeta, N, M, q, k = r.state
    A, ell = r.A, r.ell
    on = {N: zeta, M: zeta, r.gate_neurons: 1, r.gate_attention: 1}
    zeta_of_A = sp.solve(sp.Eq(r.A_of_state, A), zeta)[0]
    q_of_ell = sp.sqrt(ell / r.kappa)
    back = {zeta: zeta_of_A, q: q_of_ell, k: q_of_ell}
    rate_A = (sp.diff(r.A_of_state, zeta) * r.rhs[0]).xreplace(on).xreplace(back)
    rate_ell = sum((sp.diff(r.ell_of_state, v) * r.rhs[i] for i, v in enumerate(r.state)),
                   sp.Integer(0)).xreplace(on).xreplace(back)
    return sp.simplify(rate_A), sp.simplify(rate_ell)


def _slow_manifold(rate_ell: sp.Expr, loss_Al: sp.Expr, A: sp.Symbol, ell: sp.Symbol):
    """Square loss: ``A*`` minimises the loss at fixed ``ell``; ``L*`` and ``d ell/dt`` on it."""
    theta = sp.Symbol("theta", positive=True)
    in_theta = loss_Al.xreplace({sp.tanh(ell / 2): theta})
    (A_star,) = sp.solve(sp.diff(in_theta, A), A)
    L_star = sp.simplify(in_theta.xreplace({A: A_star}).xreplace({theta: sp.tanh(ell / 2)}))
    manifold_rate = sp.simplify(rate_ell.xreplace({A: A_star.xreplace({theta: sp.tanh(ell / 2)})})
                                .rewrite(sp.exp))
    return sp.simplify(A_star), sp.simplify(L_star.rewrite(sp.exp)), manifold_rate


def _matched_T(manifold_rate: sp.Expr, plateau_constant: sp.Expr, T_A: sp.Expr,
               ell: sp.Symbol, ell0: sp.Symbol) -> sp.Expr:
    """``T(ell) = T_A + ln(1/ell0)/c + F(ell) - [F - ln(ell)/c]_{ell -> 0}``, with ``F`` the
    antiderivative of ``1/(d ell/dt)`` on the slow manifold and ``c`` the plateau rate."""
    integrand = sp.expand(sp.simplify((1 / manifold_rate).rewrite(sp.cosh)))
    # Term by term without the Risch algorithm: each term is an exponential over ell (an Ei).
    F = sp.integrate(integrand, ell, risch=False).replace(sp.exp_polar, sp.exp)
    F = sp.simplify(F)
    if sp.simplify(sp.diff(F, ell) - integrand) != 0:
        raise DerivationError("T(ell)", f"d/d ell of {F} is not 1/(d ell/dt) = {integrand}")
    offset = sp.limit(F - sp.log(ell) / plateau_constant, ell, 0)
    return T_A + sp.log(1 / ell0) / plateau_constant + F - offset


#: The fields of :class:`ClosedForms` that are expressions (None where a loss has none).
_EXPRESSIONS = ("rate_A", "rate_ell", "plateau_rate", "T1", "T_A", "A_star", "L_star",
                "manifold_rate", "T_of_ell", "slope_att", "slope_sigma")


@cache
def closed_forms(loss: str) -> ClosedForms:
    """The closed forms of ``loss`` (derived once; memoised on disk beside the compiled flow).

    Examples
    --------
    >>> cf = closed_forms("square")  # doctest: +SKIP
    >>> sp.simplify(cf.plateau_rate - cf.kappa * cf.A / 4)  # doctest: +SKIP
    0
    """
    from reduced_odes.author import cached_symbolic

    def derive() -> dict:
        cf = derive_closed_forms(loss)
        stored = {"symbols": sp.Tuple(cf.A, cf.ell, cf.mu, cf.kappa, cf.A0, cf.ell0)}
        return {**stored, **{k: getattr(cf, k) for k in _EXPRESSIONS if getattr(cf, k) is not None}}

    stored = cached_symbolic("two_mixture", loss, "closed_forms", derive)
    return ClosedForms(loss, *stored["symbols"], **{k: stored.get(k) for k in _EXPRESSIONS})


def derive_closed_forms(loss: str) -> ClosedForms:
    """Derive the closed forms of ``loss`` from the reduction.

    Examples
    --------
    >>> derive_closed_forms("logistic").T_A is None  # doctest: +SKIP
    True
    """
    r = reduce_model(loss)
    A, ell, mu, kappa = r.A, r.ell, r.mu, r.kappa
    A0, ell0 = sp.symbols("A_0 ell_0", positive=True)
    rate_A, rate_ell = _balanced(r)
    plateau_rate = sp.simplify(sp.limit(rate_ell / ell, ell, 0))
    stage1 = sp.simplify(rate_A.xreplace({ell: 0}))
    a = sp.Symbol("a", positive=True)
    # logcombine: the square loss's log(A - 1) - log(A0 - 1) is real only combined.
    T1 = sp.logcombine(sp.simplify(sp.integrate(1 / stage1.xreplace({A: a}), (a, A0, A))),
                       force=True)
    if loss != "square":
        return ClosedForms(loss, A, ell, mu, kappa, A0, ell0, rate_A, rate_ell, plateau_rate, T1)
    T_A = sp.simplify(sp.integrate(((1 - a) / stage1.xreplace({A: a})), (a, A0, 1)))
    A_star, L_star, manifold_rate = _slow_manifold(rate_ell, r.loss_Al, A, ell)
    constant = plateau_rate.xreplace({A: 1})
    T_of_ell = _matched_T(manifold_rate, constant, T_A, ell, ell0)
    slope_att, slope_sigma = _slopes(T_of_ell, mu, kappa, A0, ell0, ell)
    return ClosedForms(loss, A, ell, mu, kappa, A0, ell0, rate_A, rate_ell, plateau_rate, T1,
                       T_A, A_star, L_star, manifold_rate, T_of_ell, slope_att, slope_sigma)


class Predictor:
    """Float evaluation of the closed forms of one loss (see :func:`predictor`)."""

    def __init__(self, cf: ClosedForms):
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
        """``ell`` when ``A`` has grown from ``A0``: ``ell0 exp(int rate_p(A) dt)``, ``theta ~ 0``."""
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


def _slopes(T_of_ell: sp.Expr, mu: sp.Symbol, kappa: sp.Symbol, A0: sp.Symbol, ell0: sp.Symbol,
            ell: sp.Symbol) -> tuple[sp.Expr, sp.Expr]:
    """``dT2/d ln(1/sigma_att)`` and ``dT2/d ln(1/sigma)`` from ``ell0 ~ sigma_att^2``,
    ``A0 ~ sigma^2`` (at ``A0 -> 0``)."""
    s_att, s = sp.symbols("s_att s", positive=True)
    theta2 = sp.Rational(1, 2)
    T2 = T_of_ell.xreplace({ell: 2 * sp.atanh(theta2), ell0: kappa * s_att**2,
                            A0: mu * s**2 / (2 * sp.sqrt(2))})
    by_att = sp.simplify(-sp.diff(T2, s_att) * s_att)
    by_sigma = sp.simplify(sp.limit(-sp.diff(T2, s) * s, s, 0))
    return by_att, by_sigma


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
    return Predictor(closed_forms(loss))
