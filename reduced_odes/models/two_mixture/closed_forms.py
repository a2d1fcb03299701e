"""Closed-form predictions of the reduced flow, derived by SymPy from the reduction.

From the derived reduced loss and mobility (:mod:`.reduction`):

* the balanced composite flow ``dA/dt``, ``d ell/dt`` (``N = M``, ``q = k``);
* stage 1 at ``theta = 0``: ``T1`` and ``T_A = int_0^inf (1 - A) dt`` as quadratures;
* the plateau growth rate ``lim_{ell->0} (d ell/dt)/ell`` (``kappa A/4`` square);
* the square-loss slow manifold ``A*(theta)``, ``L*``, its ``ell`` flow and
  ``T(ell)``, matched to the plateau; ``T2``, ``T3``;
* the scaling slopes of ``T2`` in ``ln(1/sigma_att)`` and ``ln(1/sigma)``;
* the Algorithm 1 stage quadratures.

SymPy is imported here; :func:`.numerics.predictor` evaluates them as floats, the
quadratures included.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import sympy as sp

from reduced_odes.author import DerivationError

from .reduction import reduce_model

__all__ = ["ClosedForms", "closed_forms", "derive_closed_forms"]


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
