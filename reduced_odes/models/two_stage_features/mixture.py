"""The finite mixture of token kinds, shared by the symbolic derivation and by numbers.

On the invariant manifold ``W_K = k_P I ⊕ k_Q I``, ``W_Q = q_P I ⊕ q_Q I`` the
score ``(W_K x_i) . (W_Q x_q)`` depends on the tokens only through their Gram
matrix, which is the same for every draw of the prompt's directions ``u`` and
``(e1, e2)``.  So the tokens are written in the frame ``(u, e1, e2)``: the
random directions drop out, and the loss is a finite sum over token kinds.

The functions take the arithmetic they need (``sqrt``, ``relu``) so that the
same enumeration yields SymPy expressions (in ``derivation``) and floats
(here, for the numeric targets used on the warm path, without SymPy).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["TokenKind", "block_losses", "numeric_optimum", "query_moments", "token_kinds"]


@dataclass(frozen=True)
class TokenKind:
    """One kind of token: its type (``"P"`` or ``"Q"``), probability, label and frame vector."""

    type: str
    probability: Any
    label: int
    vector: tuple


def token_kinds(pi_P: Any, gamma: Any, mu: Any, sqrt: Callable = math.sqrt) -> Iterator[TokenKind]:
    """Every token kind: P with ``y = ±1``, Q with ``(ε1, ε2) ∈ {±1}²`` and ``y = ε1 ε2``.

    Examples
    --------
    >>> kinds = list(token_kinds(0.5, 1.0, 1.0))
    >>> len(kinds), sum(k.probability for k in kinds)
    (6, 1.0)
    """
    for y in (1, -1):
        yield TokenKind("P", pi_P / 2, y, (gamma * y, 0 * gamma, 0 * gamma))
    for e1 in (1, -1):
        for e2 in (1, -1):
            yield TokenKind("Q", (1 - pi_P) / 4, e1 * e2,
                            (0 * mu, mu * e1 / sqrt(2), mu * e2 / sqrt(2)))


def _score(key: TokenKind, query: TokenKind, weights: tuple) -> Any:
    """``(W_K x_key) . (W_Q x_query)`` with ``weights = (k_P, q_P, k_Q, q_Q)``."""
    k_P, q_P, k_Q, q_Q = weights
    scale_K, scale_Q = (k_P, k_Q, k_Q), (q_P, q_Q, q_Q)
    return sum(kk * xk * qq * xq for kk, xk, qq, xq
               in zip(scale_K, key.vector, scale_Q, query.vector, strict=True))


def query_moments(query: TokenKind, kinds: list[TokenKind], weights: tuple,
                  activation: Callable, expectation: Callable | None = None) -> tuple[Any, Any]:
    """First two moments over one key of ``z = y_q y_key act(score)``, given the query.

    ``expectation(f, components)`` sums ``p f(kind)`` over the keys (default: a
    plain sum; the derivation passes the mixture expectation that checks the
    probabilities).

    Examples
    --------
    >>> kinds = list(token_kinds(0.5, 1.0, 1.0))
    >>> query_moments(kinds[0], kinds, (1.0, 1.0, 1.0, 1.0), lambda s: max(0.0, s))
    (0.25, 0.25)
    """
    def z(key: TokenKind) -> Any:
        return query.label * key.label * activation(_score(key, query, weights))

    if expectation is None:
        def expectation(f, components):
            return sum(p * f(k) for p, k in components)
    components = [(k.probability, k) for k in kinds]
    return expectation(z, components), expectation(lambda k: z(k) ** 2, components)


def block_losses(state: tuple, pi_P: Any, gamma: Any, mu: Any, N: Any, activation: Callable,
                 sqrt: Callable = math.sqrt, expectation: Callable | None = None) -> dict[str, Any]:
    """``{"P": L_P, "Q": L_Q}``: the loss ``½ E(y_q - ŷ)²`` split by the query's type.

    Given the query, the ``N`` context tokens are i.i.d., so with ``Z`` the mean
    of ``z_i``: ``E(1 - vZ)² = 1 - 2 v m1 + v² (m1² + (m2 - m1²)/N)``.

    Examples
    --------
    >>> relu = lambda s: max(0.0, s)
    >>> block_losses((1.0, 0.0, 0.0, 0.0, 0.0), 0.5, 1.0, 1.0, 32, relu)
    {'P': 0.25, 'Q': 0.25}
    """
    v, *weights = state
    kinds = list(token_kinds(pi_P, gamma, mu, sqrt))
    blocks = {"P": 0 * v, "Q": 0 * v}
    for query in kinds:
        m1, m2 = query_moments(query, kinds, tuple(weights), activation, expectation)
        square = 1 - 2 * v * m1 + v**2 * (m1**2 + (m2 - m1**2) / N)
        blocks[query.type] = blocks[query.type] + query.probability * square / 2
    return blocks


#: Round-off of a difference of the block losses, relative to their size (64 ulp).
ROUND_OFF = 64 * sys.float_info.epsilon


def numeric_optimum(block: str, pi_P: float, gamma: float, mu: float, N: float,
                    activation: Callable) -> float:
    """``A*`` (block ``"P"``) or ``B*`` (``"Q"``): the minimiser of the block loss in
    ``A`` or ``B``.

    The derivation asserts that each block loss is a quadratic in ``A = v γ² a``
    (resp. ``B = v μ² b``); three evaluations at ``v = 1`` fix it.

    Examples
    --------
    >>> round(numeric_optimum("P", 0.5, 1.0, 1.0, 32, lambda s: max(0.0, s)), 12)
    3.657142857143
    """
    scale = gamma**2 if block == "P" else mu**2

    def loss(product: float) -> float:
        root = math.sqrt(product)
        state = (1.0, root, root, 0.0, 0.0) if block == "P" else (1.0, 0.0, 0.0, root, root)
        return block_losses(state, pi_P, gamma, mu, N, activation)[block]

    l0, l1, l2 = loss(0.0), loss(1.0), loss(2.0)
    curvature = (l2 - 2 * l1 + l0) / 2
    slope = l1 - l0 - curvature
    if abs(slope) <= ROUND_OFF * max(abs(l0), abs(l1), abs(l2)):
        # A block the activation cannot see (Q under the linear control) has no linear
        # term: what is left is round-off of the O(1) losses, which the division by a
        # small curvature (~1/N) would make a spurious optimum of 1e-14 or more.
        slope = 0.0
    return scale * (-slope / (2 * curvature))
