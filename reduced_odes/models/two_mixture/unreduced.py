"""The unreduced model, symbolically: tokens, attention, mean-field ReLU layer, exact loss.

A sample is one of eight equally likely configurations ``(k, s1, s2)``; the
population loss is their finite mixture.  The network is written for general
(off-manifold) parameters: two heads with rank-one query/key vectors in the
attention space, and ``width`` neurons ``(a_r, w_r)`` in the value space.

Bases: the attention space has the orthonormal basis ``(c1, c2, m1, m2)``
(coordinates beyond carry no data); the value space has ``(e1, e2, e3)``,
``e3`` an inert direction.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import product

import sympy as sp

from reduced_odes.author import mixture_expectation, relu

__all__ = ["Network", "configurations", "config_loss", "network", "output", "phi",
           "head_average", "population_loss", "scores"]

#: Attention-space coordinates of the identifiers c_k and word identities m_j.
C_INDEX = {1: 0, 2: 1}
M_INDEX = {1: 2, 2: 3}
D_ATT, D_VAL = 4, 3


def phi(loss: str) -> Callable[[sp.Expr], sp.Expr]:
    """The per-sample loss ``phi(u)`` of the margin ``u = y F``.

    Examples
    --------
    >>> u = sp.Symbol("u")
    >>> phi("square")(u), phi("logistic")(u)
    ((1 - u)**2/2, log(1 + exp(-u)))
    """
    if loss == "square":
        return lambda u: (1 - u) ** 2 / 2
    if loss == "logistic":
        return lambda u: sp.log(1 + sp.exp(-u))
    raise ValueError(f"loss={loss!r}; allowed: square, logistic")


@dataclass(frozen=True)
class Network:
    """Symbols of the unreduced network: heads ``Q[h], K[h]``, neurons ``a[r], w[r]``."""

    mu: sp.Symbol
    kappa: sp.Symbol
    Q: tuple[sp.Matrix, sp.Matrix]
    K: tuple[sp.Matrix, sp.Matrix]
    a: tuple[sp.Symbol, ...]
    w: tuple[sp.Matrix, ...]

    @property
    def width(self) -> int:
        return len(self.a)

    @property
    def attention(self) -> list[sp.Symbol]:
        return [x for v in (*self.Q, *self.K) for x in v]

    @property
    def neurons(self) -> list[sp.Symbol]:
        return [*self.a, *(x for v in self.w for x in v)]

    @property
    def parameters(self) -> list[sp.Symbol]:
        return self.attention + self.neurons


def network(width: int = 4) -> Network:
    """A network of ``width`` neurons with one real symbol per coordinate.

    Examples
    --------
    >>> len(network(4).parameters)  # 2 heads x 2 vectors x 4 + 4 x (1 + 3)
    32
    """
    mu, kappa = sp.symbols("mu kappa", positive=True)
    vec = lambda name, n: sp.Matrix(sp.symbols(f"{name}_0:{n}", real=True))  # noqa: E731
    return Network(mu, kappa, (vec("Q1", D_ATT), vec("Q2", D_ATT)),
                   (vec("K1", D_ATT), vec("K2", D_ATT)),
                   sp.symbols(f"a_0:{width}", real=True),
                   tuple(vec(f"w{r}", D_VAL) for r in range(width)))


def configurations() -> list[tuple[sp.Rational, dict[str, int]]]:
    """The eight equally likely samples ``(k, s1, s2)`` with their probability."""
    return [(sp.Rational(1, 8), {"k": k, "s1": s1, "s2": s2})
            for k, s1, s2 in product((1, 2), (1, -1), (1, -1))]


def _value_vector(index: int, scale: sp.Expr) -> sp.Matrix:
    v = sp.zeros(D_VAL, 1)
    v[index] = scale
    return v


def scores(net: Network, config: dict[str, int], head: int) -> dict[int, sp.Expr]:
    """Attention scores ``<Q_h, kappa c_k> <K_h, m_j>`` of the two signal tokens ``j``."""
    query = net.Q[head][C_INDEX[config["k"]]] * net.kappa
    return {j: query * net.K[head][M_INDEX[j]] for j in (1, 2)}


def head_average(net: Network, config: dict[str, int]) -> sp.Matrix:
    """``z(X) = 1/2 sum_h sum_j S_hj mu s_j e_j``: the heads averaged (before the ReLU)."""
    signs = {1: config["s1"], 2: config["s2"]}
    z = sp.zeros(D_VAL, 1)
    for head in range(len(net.Q)):
        score = scores(net, config, head)
        for j in (1, 2):  # softmax over the two keys, as a logistic of the score gap
            weight = 1 / (1 + sp.exp(score[3 - j] - score[j]))
            z += weight * _value_vector(j - 1, net.mu * signs[j])
    return z / 2


def output(net: Network, config: dict[str, int],
           activation: Callable[[sp.Expr], sp.Expr] = relu) -> sp.Expr:
    """``F(X)``: identifier as query, the two signal tokens as keys, heads averaged
    before the mean-field ReLU layer, read out at the identifier.

    ``activation`` is the ReLU; a caller that substitutes into ``F`` at once may pass
    an unevaluated one (the sign queries on the general expression are costly).
    """
    z = head_average(net, config)
    return sum((a * activation((w.T * z)[0]) for a, w in zip(net.a, net.w, strict=True)),
               sp.Integer(0)) / net.width


def config_loss(net: Network, loss: str, config: dict[str, int]) -> sp.Expr:
    """``phi(y F)`` for one configuration, ``y = s_k``."""
    y = config[f"s{config['k']}"]
    return phi(loss)(y * output(net, config))


def population_loss(net: Network, loss: str,
                    which: Callable[[dict], bool] | None = None) -> sp.Expr:
    """``E phi(yF)`` over the eight configurations (or the conditional mean over those
    ``which`` selects: e.g. the consistent samples ``s1 == s2``)."""
    chosen = [(p, c) for p, c in configurations() if which is None or which(c)]
    total = sum(p for p, _ in chosen)
    return mixture_expectation(lambda c: config_loss(net, loss, c),
                               [(p / total, c) for p, c in chosen])
