"""The unreduced finite-width network in NumPy: sampling, forward pass, losses, moments.

The attention space has the basis ``(c1, c2, m1, m2, ...)`` and the value space
``(e1, e2, ...)``; the extra coordinates carry no data.  This is the ground
truth the reduced model is checked against (Monte Carlo of the loss and the
paired initialisation of finite-width runs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import product

import numpy as np

from .numerics import phi

__all__ = ["Net", "configurations", "forward", "manifold_net", "moments", "monte_carlo_loss",
           "paired_random_net", "population_loss", "sample"]

SQRT2 = math.sqrt(2)


@dataclass
class Net:
    """Heads ``Q, K`` (shape ``(2, d_att)``), neurons ``a`` (``m``), ``W`` (``(m, d_val)``)."""

    Q: np.ndarray
    K: np.ndarray
    a: np.ndarray
    W: np.ndarray


def configurations() -> np.ndarray:
    """The eight samples ``(k, s1, s2)`` as rows, ``k`` in {0, 1}.

    Examples
    --------
    >>> configurations().shape
    (8, 3)
    """
    return np.array([(k, s1, s2) for k, s1, s2 in product((0, 1), (1, -1), (1, -1))])


def sample(n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` random samples ``(k, s1, s2)``: all three uniform and independent."""
    return np.column_stack([rng.integers(0, 2, n), rng.choice((-1, 1), n), rng.choice((-1, 1), n)])


def forward(net: Net, samples: np.ndarray, mu: float, kappa: float) -> np.ndarray:
    """``F(X)`` for each sample row ``(k, s1, s2)``; vectorised over samples."""
    k, signs = samples[:, 0], samples[:, 1:].astype(float)
    query = kappa * net.Q[:, k]                       # (2 heads, n): <Q_h, kappa c_k>
    keys = net.K[:, 2:4]                              # (2, 2): <K_h, m_j>
    scores = query[:, :, None] * keys[:, None, :]     # (2, n, 2)
    weights = np.exp(scores - np.logaddexp(scores[..., :1], scores[..., 1:]))
    value = weights.mean(axis=0) * (mu * signs)       # head average, (n, 2)
    pre = value @ net.W[:, :2].T                      # <w_r, z>, (n, m)
    return np.maximum(pre, 0.0) @ net.a / net.a.size


def labels(samples: np.ndarray) -> np.ndarray:
    """``y = s_k``."""
    return np.where(samples[:, 0] == 0, samples[:, 1], samples[:, 2]).astype(float)


def population_loss(net: Net, loss: str, mu: float, kappa: float) -> float:
    """The exact loss: the mean of ``phi(yF)`` over the eight configurations."""
    configs = configurations()
    return float(np.mean(phi(loss, labels(configs) * forward(net, configs, mu, kappa))))


def monte_carlo_loss(net: Net, loss: str, mu: float, kappa: float, n: int,
                     rng: np.random.Generator, chunk: int = 250_000) -> tuple[float, float]:
    """``(mean, standard error)`` of ``phi(yF)`` over ``n`` sampled sequences."""
    total, total_sq, done = 0.0, 0.0, 0
    while done < n:
        size = min(chunk, n - done)
        s = sample(size, rng)
        values = phi(loss, labels(s) * forward(net, s, mu, kappa))
        total, total_sq, done = total + values.sum(), total_sq + (values**2).sum(), done + size
    mean = total / n
    return mean, math.sqrt(max(total_sq / n - mean**2, 0.0) / (n - 1))


def manifold_net(q: float, k: float, a: np.ndarray, b: np.ndarray, c: np.ndarray,
                 d_att: int = 4, d_val: int = 3) -> Net:
    """Mirror heads ``Q1 = q c^, K1 = k m^`` and sign pairs ``(a_p, b_p u+ + c_p e3)``.

    Examples
    --------
    >>> net = manifold_net(1.0, 1.0, np.ones(2), np.ones(2), np.zeros(2))
    >>> net.a.size, net.W.shape
    (4, (4, 3))
    """
    Q, K = np.zeros((2, d_att)), np.zeros((2, d_att))
    Q[0, :2], K[0, 2:4] = (q / SQRT2, -q / SQRT2), (k / SQRT2, -k / SQRT2)
    Q[1], K[1] = -Q[0], -K[0]
    W = np.zeros((a.size, d_val))
    W[:, 0] = W[:, 1] = b / SQRT2
    if d_val > 2:
        W[:, 2] = c
    return Net(Q, K, np.concatenate([a, -a]), np.concatenate([W, -W]))


def paired_random_net(width: int, sigma: float, sigma_att: float, d_att: int, d_val: int,
                      rng: np.random.Generator) -> Net:
    """The ``random`` initialisation: ``a ~ N(0, sigma^2)``, ``w ~ N(0, sigma^2 I)``
    for the first ``width/2`` neurons, their negatives after; mirror heads at ``sigma_att``."""
    half = width // 2
    a = rng.normal(0.0, sigma, half)
    W = rng.normal(0.0, sigma, (half, d_val))
    Q, K = np.zeros((2, d_att)), np.zeros((2, d_att))
    Q[0, :2] = sigma_att * np.array([1, -1]) / SQRT2
    K[0, 2:4] = sigma_att * np.array([1, -1]) / SQRT2
    Q[1], K[1] = -Q[0], -K[0]
    return Net(Q, K, np.concatenate([a, -a]), np.concatenate([W, -W]))


def moments(net: Net) -> dict[str, float]:
    """``(zeta, N, M, q, k)`` of a network, and the neuron mass off the signal plane."""
    along = net.W[:, :2].sum(axis=1) / SQRT2
    m = net.a.size
    return {"zeta": float(net.a @ along / m), "N": float(net.a @ net.a / m),
            "M": float(along @ along / m),
            "q": float((net.Q[0, 0] - net.Q[0, 1] - net.Q[1, 0] + net.Q[1, 1]) / (2 * SQRT2)),
            "k": float((net.K[0, 2] - net.K[0, 3] - net.K[1, 2] + net.K[1, 3]) / (2 * SQRT2)),
            "M_perp": float((net.W**2).sum() / m - along @ along / m)}
