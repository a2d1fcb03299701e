"""Gradient descent and minibatch SGD on the unreduced finite-width network (NumPy).

The population loss is the mean of ``phi(yF)`` over the eight configurations;
a minibatch replaces the uniform weights ``1/8`` by the batch's empirical
frequencies.  Time is mean-field time: a step of size ``eta`` moves the heads
by ``-eta grad`` and the neurons by ``-eta m grad`` (spec section 3), so step
``n`` is at ``t = n eta``.  Every step records ``A``, ``ell`` and the neuron
mass along the signal, the composite variables the reduced model predicts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .simulator import Net, configurations, labels

__all__ = ["Batch", "Gradients", "Record", "gradients", "train"]

SQRT2 = math.sqrt(2)
_CONFIGS = configurations()
_LABELS = labels(_CONFIGS)
_SIGNS = _CONFIGS[:, 1:].astype(float)
_IDENTIFIER = _CONFIGS[:, 0]


@dataclass
class Batch:
    """``R`` networks trained side by side: heads ``Q, K`` (``(R, 2, d_att)``), neurons
    ``a`` (``(R, m)``) and ``W`` (``(R, m, d_val)``), each network's ``width`` neurons
    first and zero neurons after (a zero neuron has zero gradient: it never moves)."""

    Q: np.ndarray
    K: np.ndarray
    a: np.ndarray
    W: np.ndarray
    width: np.ndarray

    @classmethod
    def of(cls, nets: list[Net]) -> Batch:
        """The networks ``nets`` (same ``d_att``, ``d_val``), padded to the largest width."""
        m = max(n.a.size for n in nets)
        a = np.zeros((len(nets), m))
        W = np.zeros((len(nets), m, nets[0].W.shape[1]))
        for r, n in enumerate(nets):
            a[r, :n.a.size], W[r, :n.a.size] = n.a, n.W
        return cls(np.stack([n.Q for n in nets]), np.stack([n.K for n in nets]), a, W,
                   np.array([n.a.size for n in nets], dtype=float))


@dataclass
class Gradients:
    """``dL/dQ``, ``dL/dK``, ``dL/da``, ``dL/dW`` and the loss of every network."""

    Q: np.ndarray
    K: np.ndarray
    a: np.ndarray
    W: np.ndarray
    loss: np.ndarray


def _dphi(loss: str, u: np.ndarray) -> np.ndarray:
    """``phi'(u)``; the logistic one as ``-sig(-u)``, stable for large ``|u|``."""
    if loss == "square":
        return u - 1.0
    return -np.exp(-np.logaddexp(0.0, u))


def _phi(loss: str, u: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 - u) ** 2 if loss == "square" else np.logaddexp(0.0, -u)


def gradients(batch: Batch, loss: str, mu: float, kappa: float,
              weights: np.ndarray | None = None) -> Gradients:
    """The gradient of ``sum_c weights_c phi(y_c F_c)`` over the eight configurations
    (default weights ``1/8``: the population loss), by the chain rule through the
    softmax, the head average ``z`` and the ReLU layer; for every network of ``batch``.

    Examples
    --------
    >>> from .simulator import manifold_net, population_loss
    >>> net = manifold_net(1.0, 1.0, np.ones(2), np.ones(2), np.zeros(2))
    >>> g = gradients(Batch.of([net]), "square", 1.0, 0.5)
    >>> bool(abs(g.loss[0] - population_loss(net, "square", 1.0, 0.5)) < 1e-15)
    True
    """
    weights = np.full((batch.a.shape[0], 8), 0.125) if weights is None else weights
    m = batch.width[:, None]
    query = kappa * batch.Q[:, :, _IDENTIFIER]                  # (R, heads, configs)
    keys = batch.K[:, :, 2:4]                                   # (R, heads, words)
    scores = query[..., None] * keys[:, :, None, :]             # (R, heads, configs, words)
    gap = scores[..., 1] - scores[..., 0]
    S1 = np.exp(-np.logaddexp(0.0, -gap))                       # weight on word 2
    S = np.stack([1.0 - S1, S1], axis=-1)
    z = 0.5 * S.sum(axis=1) * (mu * _SIGNS)                     # (R, configs, 2)
    W2 = batch.W[:, :, :2]
    pre = z @ W2.transpose(0, 2, 1)                             # (R, configs, m)
    relu = np.maximum(pre, 0.0)
    margin = _LABELS * (relu @ batch.a[:, :, None])[..., 0] / m
    g = weights * _dphi(loss, margin) * _LABELS                 # dL/dF_c, (R, configs)
    grad_a = (g[:, None, :] @ relu)[:, 0] / m
    gated = (pre > 0) * g[:, :, None]                           # (R, configs, m)
    grad_W = np.zeros_like(batch.W)
    grad_W[:, :, :2] = batch.a[:, :, None] * (gated.transpose(0, 2, 1) @ z) / m[:, :, None]
    G = (((pre > 0) * batch.a[:, None, :]) @ W2) / m[:, :, None]  # dF_c/dz_c, (R, configs, 2)
    dS = 0.5 * (g[:, :, None] * G * (mu * _SIGNS))[:, None]    # dL/dS, (R, 1, configs, words)
    dgap = S1 * (1.0 - S1) * (dS[..., 1] - dS[..., 0])          # dL/d(score gap)
    dquery = dgap * (keys[..., 1] - keys[..., 0])[..., None]    # (R, heads, configs)
    grad_Q, grad_K = np.zeros_like(batch.Q), np.zeros_like(batch.K)
    grad_Q[:, :, 0] = kappa * dquery[..., _IDENTIFIER == 0].sum(axis=-1)
    grad_Q[:, :, 1] = kappa * dquery[..., _IDENTIFIER == 1].sum(axis=-1)
    dkey = (dgap * query).sum(axis=-1)                          # dL/d(K_2 - K_1)
    grad_K[:, :, 2], grad_K[:, :, 3] = -dkey, dkey
    return Gradients(grad_Q, grad_K, grad_a, grad_W, (weights * _phi(loss, margin)).sum(axis=1))


@dataclass
class Record:
    """Per-step ``A``, ``ell`` and signal alignment ``M / (M + M_perp)`` of one run."""

    eta: float
    A: np.ndarray
    ell: np.ndarray
    alignment: np.ndarray

    @property
    def t(self) -> np.ndarray:
        return self.eta * np.arange(self.A.size)

    def crossing(self, series: str, level: float) -> float:
        """First time ``series >= level`` (``A`` or ``theta``), linear between steps
        (NaN: not reached)."""
        values = self.A if series == "A" else np.tanh(self.ell / 2)
        above = np.nonzero(values >= level)[0]
        if not above.size:
            return math.nan
        i = int(above[0])
        if i == 0:
            return 0.0
        fraction = (level - values[i - 1]) / (values[i] - values[i - 1])
        return float(self.eta * (i - 1 + fraction))


def _composites(batch: Batch, mu: float, kappa: float) -> np.ndarray:
    """``(A, ell, M / (M + M_perp))`` of every network (the reduced model's moments)."""
    along = (batch.W[:, :, 0] + batch.W[:, :, 1]) / SQRT2
    zeta = (batch.a * along).sum(axis=1) / batch.width
    Q, K = batch.Q, batch.K
    q = (Q[:, 0, 0] - Q[:, 0, 1] - Q[:, 1, 0] + Q[:, 1, 1]) / (2 * SQRT2)
    k = (K[:, 0, 2] - K[:, 0, 3] - K[:, 1, 2] + K[:, 1, 3]) / (2 * SQRT2)
    M = (along * along).sum(axis=1)
    mass = (batch.W * batch.W).sum(axis=(1, 2))
    return np.stack([mu * zeta / (2 * SQRT2), kappa * q * k, M / mass])


def train(nets: list[Net], loss: str, mu: float, kappa: float, eta: float, t_max: float,
          batch: int | None = None, rng: np.random.Generator | None = None) -> list[Record]:
    """Train ``nets`` side by side for ``t_max / eta`` steps: gradient descent on the
    population loss, or minibatch SGD with ``batch`` samples a step (drawn by ``rng``,
    independently for each network).

    Examples
    --------
    >>> from .simulator import paired_random_net
    >>> net = paired_random_net(32, 1e-2, 1e-3, 4, 2, np.random.default_rng(0))
    >>> (record,) = train([net], "square", 1.0, 0.5, 0.01, 1.0)
    >>> record.A.size, bool(record.A[-1] > record.A[0])
    (101, True)
    """
    steps = int(round(t_max / eta))
    state = Batch.of(nets)
    R = len(nets)
    mobility = eta * state.width
    history = np.empty((steps + 1, 3, R))
    for n in range(steps + 1):
        history[n] = _composites(state, mu, kappa)
        if n == steps:
            break
        weights = None
        if batch is not None:
            draws = rng.integers(0, 8, (R, batch))
            weights = np.stack([np.bincount(d, minlength=8) for d in draws]) / batch
        g = gradients(state, loss, mu, kappa, weights)
        state.Q -= eta * g.Q
        state.K -= eta * g.K
        state.a -= mobility[:, None] * g.a
        state.W -= mobility[:, None, None] * g.W
    return [Record(eta, history[:, 0, r], history[:, 1, r], history[:, 2, r]) for r in range(R)]
