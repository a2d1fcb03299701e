"""The induction-head model of Wang, Yu, E & Wu (arXiv 2410.11474), as data.

Everything here is a declaration: which tokens each head reads, with which
position weights and which attention closure.  The losses are derived from
these declarations by :mod:`reduced_odes.models.induction_head.losses`; nothing downstream knows
the closed forms.

Conventions (spec ``induction_head.md``): tokens ``x_1..x_L`` are i.i.d.
N(0, 1) with padding ``x_0 = 0``; layer 1 is the exact previous-token head in
Stage II, so position ``s`` carries ``(x_s, x_{s-1})``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import sympy as sp

from reduced_odes.author import SEQ_LEN, SUM_INDEX, Fixed, Index, PositionSum, geometric_sum, token

__all__ = [
    "ALPHA",
    "CLOSURES",
    "Closure",
    "Readout",
    "WSTAR",
    "W_K",
    "W_KQ",
    "W_Q",
    "W_V1",
    "W_V2",
    "P",
    "P1",
    "induction_head_readouts",
    "stage1_readout",
]

L, s = SEQ_LEN, SUM_INDEX
ALPHA = sp.Symbol("alpha", positive=True)
WSTAR = sp.Symbol("w_star", positive=True)
W_V1, P, W_V2, W_K, W_Q = sp.symbols("w_v1 p w_v2 w_k w_q", real=True)
W_KQ = sp.Symbol("w_kq", positive=True)
P1 = sp.Symbol("p_1", real=True)

FIRST, LAST = Index("0", 1), Index("L", -1)


@dataclass(frozen=True)
class Closure:
    """How the softmax over ``s = 2..L-1`` is replaced by a closed-form weight.

    ``weight`` is the position-independent normaliser and ``factor(logit,
    coupling)`` the token-dependent attention factor.
    """

    name: str
    description: str
    weight: sp.Expr
    factor: Callable[[sp.Expr, sp.Expr], sp.Expr]


CLOSURES: dict[str, Closure] = {
    closure.name: closure
    for closure in (
        Closure(
            "linear",
            "softmax_s(a) -> exp(a_s) / L, the paper's simplification (after Bai et al.)",
            1 / L,
            lambda logit, coupling: sp.exp(logit),
        ),
        Closure(
            "meanfield",
            "normaliser replaced by its large-L value (L-2) exp(w^2 x_L^2 / 2)",
            1 / (L - 2),
            lambda logit, coupling: sp.exp(logit - coupling**2 * token("L") ** 2 / 2),
        ),
    )
}


@dataclass(frozen=True)
class Readout:
    """One output coordinate: target terms minus model terms."""

    name: str
    target: tuple[PositionSum | Fixed, ...]
    model: tuple[PositionSum | Fixed, ...]


def _recency_weights(slope: sp.Expr, last: Index, first: Index = FIRST) -> sp.Expr:
    """Normalised ALiBi weights ``exp(-slope * (last - s))`` over ``first..last``."""
    unnormalised = sp.exp(-slope * (last.as_expr() - s))
    return unnormalised / geometric_sum(unnormalised, s, first.as_expr(), last.as_expr())


def _induction_head(value: sp.Expr, coupling: sp.Expr, closure: Closure) -> PositionSum:
    """``value * sum_{s=2}^{L-1} attention_s(coupling * x_L * x_{s-1}) * x_s``."""
    logit = coupling * token("L") * token("s", -1)
    return PositionSum(value * closure.weight, closure.factor(logit, coupling) * token("s"),
                       Index("0", 2), LAST)


def induction_head_readouts(closure: str, coupling: sp.Expr = W_KQ) -> tuple[Readout, Readout]:
    """The Stage-II readouts ``(G4, IH)`` under ``closure``.

    ``coupling`` is the query-key product; pass ``W_K * W_Q`` for the
    unreduced five-parameter model.

    Examples
    --------
    >>> g4, ih = induction_head_readouts("linear")
    >>> g4.name, ih.name, len(ih.model)
    ('G4', 'IH', 1)
    """
    try:
        chosen = CLOSURES[closure]
    except KeyError:
        raise ValueError(f"closure={closure!r}; allowed: {sorted(CLOSURES)}") from None
    four_gram = Readout(
        "G4",
        target=(Fixed(ALPHA * token("L", -2)),),
        model=(PositionSum(W_V1 * _recency_weights(P, LAST), token("s", -1), FIRST, LAST),),
    )
    induction = Readout(
        "IH",
        target=(_induction_head(1 - ALPHA, WSTAR, chosen),),
        model=(_induction_head(W_V2, coupling, chosen),),
    )
    return four_gram, induction


def stage1_readout() -> Readout:
    """Stage I: only ``p_1`` trains; layer 2 reads ``alpha * (h_{L-1})_2``.

    ``(h_{L-1})_2 = sum_{tau=1}^{L-2} rho_tau x_tau`` with recency weights of
    slope ``p_1``; the head does not see itself (spec convention).  The
    induction head contributes a constant and drops out of the gradient.
    """
    last = Index("L", -2)
    return Readout(
        "StageI",
        target=(Fixed(ALPHA * token("L", -2)),),
        model=(PositionSum(ALPHA * _recency_weights(P1, last), token("s"), FIRST, last),),
    )
