"""Gradient flow of the Stage-II parameters, derived from the losses.

Steps, each checked symbolically:

1. the five-parameter flow ``d theta/dt = -grad L`` of (w_v1, p, w_v2, w_k, w_q);
2. the balance law ``d/dt (w_k^2 - w_q^2) = 0`` (Lemma 5.4);
3. the reduction to ``w_kq = w_k w_q`` on the balanced manifold ``w_k = w_q``,
   whose flow comes out as ``-2 w_kq dL/dw_kq``;
4. the integration coordinates ``(w_v1, p, w_v2, ell = ln w_kq)``: with
   ``ell`` the initial value ``2 ln sigma`` never underflows, and the
   exponential plateau growth becomes linear;
5. the analytic Jacobian.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import sympy as sp

from reduced_odes.author import (
    SEQ_LEN,
    Block,
    CoordinateChange,
    Derivation,
    Identity,
    assert_same,
    gradient_flow,
)

from .declaration import ALPHA, P1, W_K, W_KQ, W_Q, W_V1, W_V2, WSTAR, P
from .losses import InductionHeadLosses, derive_losses, derive_stage1_loss

__all__ = ["GradientFlow", "LOG_WKQ", "derivation", "derive_flow", "derive_stage1_flow"]

#: ``ell = ln w_kq``, the integration coordinate of the query-key weight.
LOG_WKQ = sp.Symbol("ell", real=True)
FULL_STATE = (W_V1, P, W_V2, W_K, W_Q)
REDUCED_STATE = (W_V1, P, W_V2, W_KQ)
LOG_STATE = (W_V1, P, W_V2, LOG_WKQ)


@dataclass(frozen=True)
class GradientFlow:
    """The derived flow of one closure.

    Attributes
    ----------
    full_rhs : sympy.Matrix
        ``-grad L`` over (w_v1, p, w_v2, w_k, w_q).
    balance_rate : sympy.Expr
        ``d/dt (w_k^2 - w_q^2)`` along ``full_rhs``; simplifies to 0.
    reduced_rhs : sympy.Matrix
        Flow of (w_v1, p, w_v2, w_kq) on the balanced manifold.
    log_rhs, log_jacobian : sympy.Matrix
        Flow and Jacobian in the coordinates (w_v1, p, w_v2, ell = ln w_kq).
    domain : tuple of sympy.Boolean
        The closure's domain in ``w_kq``; trajectories must stay inside.
    """

    closure: str
    losses: InductionHeadLosses
    full_rhs: sp.Matrix
    balance_rate: sp.Expr
    reduced_rhs: sp.Matrix
    log_rhs: sp.Matrix
    log_jacobian: sp.Matrix

    @property
    def domain(self) -> tuple[sp.Basic, ...]:
        return self.losses.domain


def _reduce_to_product(full_rhs: sp.Matrix) -> sp.Expr:
    """``d(w_k w_q)/dt`` on ``w_k = w_q = r``, written in ``w_kq = r^2``."""
    r = sp.Symbol("r", positive=True)
    balanced = {W_K: r, W_Q: r}
    rate = (W_Q * full_rhs[3] + W_K * full_rhs[4]).subs(balanced)
    rate = sp.factor_terms(rate.subs(r, sp.sqrt(W_KQ)))
    if rate.has(r):
        raise AssertionError(f"w_kq flow does not close on w_kq: {rate}")
    return rate


@cache
def derive_flow(closure: str) -> GradientFlow:
    """Derive the Stage-II gradient flow and its Jacobian under ``closure``.

    Examples
    --------
    >>> flow = derive_flow("meanfield")
    >>> flow.balance_rate
    0
    >>> flow.log_jacobian.shape
    (4, 4)
    """
    losses = derive_losses(closure)
    loss5 = losses.total.subs(W_KQ, W_K * W_Q)
    full_rhs = sp.Matrix([-sp.diff(loss5, v) for v in FULL_STATE])
    balance_rate = sp.simplify(2 * W_K * full_rhs[3] - 2 * W_Q * full_rhs[4])
    if balance_rate != 0:
        raise AssertionError(f"balance law fails: d/dt(w_k^2 - w_q^2) = {balance_rate}")
    wkq_rate = _reduce_to_product(full_rhs)
    assert_same(wkq_rate, -2 * W_KQ * sp.diff(losses.induction, W_KQ))
    reduced_rhs = sp.Matrix([full_rhs[0], full_rhs[1], full_rhs[2], wkq_rate])
    reduced_rhs = reduced_rhs.subs({W_K: sp.sqrt(W_KQ), W_Q: sp.sqrt(W_KQ)})
    log_rate = wkq_rate / W_KQ  # factor_terms exposed the w_kq factor; it cancels
    if log_rate.subs(W_KQ, 0).has(sp.zoo, sp.nan):
        raise AssertionError(f"w_kq flow is not proportional to w_kq: {wkq_rate}")
    log_rhs = sp.Matrix([*reduced_rhs[:3], log_rate]).subs(W_KQ, sp.exp(LOG_WKQ))
    log_jacobian = log_rhs.jacobian(LOG_STATE)
    return GradientFlow(closure, losses, full_rhs, balance_rate, reduced_rhs, log_rhs,
                        log_jacobian)


@cache
def derive_stage1_flow() -> sp.Expr:
    """``dp_1/dt = -dL_I/dp_1`` of Stage I (a one-dimensional flow).

    Examples
    --------
    >>> flow = derive_stage1_flow()
    >>> symbol = {s.name: s for s in flow.free_symbols}
    >>> sp.simplify(flow + sp.diff(derive_stage1_loss(), symbol["p_1"]))
    0
    >>> float(flow.subs({symbol["L"]: 10, symbol["alpha"]: 0.5, symbol["p_1"]: 1})) > 0
    True
    """
    return -sp.diff(derive_stage1_loss(), P1)


#: The module of the fused attention kernels that the generated code calls.
KERNELS = "reduced_odes.models.induction_head.kernels"


#: The 4-gram block and the induction-head block are uncoupled (asserted by
#: ``gradient_flow``).  The 4-gram block ends in an algebraic tail, ``L_G4 ~ 1/(4t)``,
#: followed in ``s = ln(1 + t/10)``; 10 is a numerical choice (fewest native steps among
#: 0.1, 1, 10 and 100 at L = 1e2..1e7), not part of the model.
BLOCKS = (Block(("w_v1", "p"), log_time=10.0), Block(("w_v2", "log_w_kq")))


@cache
def derivation(closure: str) -> Derivation:
    """The compiler's view of :func:`derive_flow`: state, loss, metric, coordinates, observables.

    The reduced flow is the gradient flow of ``L = L_G4 + L_IH`` in the metric
    ``diag(1, 1, 1, 1/(2 w_kq))`` (``gradient_flow`` asserts that the flow
    obtained by reduction equals it); it is integrated in ``ell = ln w_kq``.

    Examples
    --------
    >>> d = derivation("linear")
    >>> d.coordinate_names, list(d.observables)
    (('w_v1', 'p', 'w_v2', 'log_w_kq'), ['L_G4', 'L_IH'])
    """
    flow = derive_flow(closure)
    losses = flow.losses
    metric = sp.diag(1, 1, 1, 1 / (2 * W_KQ))
    identities = (
        Identity("balance law d/dt (w_k^2 - w_q^2)", flow.balance_rate),
        Identity("reduced w_kq flow + 2 w_kq dL_IH/dw_kq", flow.reduced_rhs[3]
                 + 2 * W_KQ * sp.diff(losses.induction, W_KQ)),
    )
    to_log = CoordinateChange(W_KQ, LOG_WKQ, sp.log(W_KQ), sp.exp(LOG_WKQ), "log_w_kq", "w_kq > 0")
    return gradient_flow(REDUCED_STATE, losses.total, parameters=(ALPHA, WSTAR, SEQ_LEN),
                         metric=metric, rhs=flow.reduced_rhs, coordinates=(to_log,),
                         observables={"L_G4": losses.four_gram, "L_IH": losses.induction},
                         domain=losses.domain, identities=identities, kernels=KERNELS,
                         check={P: (-2.0, 2.0)}, blocks=BLOCKS)
