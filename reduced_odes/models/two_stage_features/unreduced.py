"""The unreduced model in numpy: full ``W_K``, ``W_Q``, prompts with their own random directions.

This is the ground truth the reduction is checked against: Monte-Carlo
estimates of the loss and of its gradient (with standard errors), and the
per-batch gradients that plain SGD uses.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .params import TwoStageParams

__all__ = ["Estimate", "Prompts", "aligned_weights", "batch_gradient", "estimate", "sample_prompts"]


@dataclass(frozen=True)
class Prompts:
    """A batch: ``tokens`` ``(n, N+1, d)`` and ``labels`` ``(n, N+1)``; the last token is
    the query."""

    tokens: np.ndarray
    labels: np.ndarray


@dataclass(frozen=True)
class Estimate:
    """Monte-Carlo means and standard errors of the loss and of its gradient."""

    loss: float
    loss_se: float
    grad_v: float
    grad_v_se: float
    grad_K: np.ndarray
    grad_K_se: np.ndarray
    grad_Q: np.ndarray
    grad_Q_se: np.ndarray
    prompts: int


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _directions(rng: np.random.Generator, n: int, d_P: int, d_Q: int) -> tuple[np.ndarray, ...]:
    """Per prompt: a uniform unit ``u`` in ``R^{d_P}`` and a Haar orthonormal pair in ``R^{d_Q}``.

    Gram-Schmidt of two Gaussian vectors gives a Haar-distributed pair (it commutes
    with rotations), without the sign ambiguity of a QR factorisation.
    """
    u = _unit(rng.standard_normal((n, d_P)))
    g1, g2 = rng.standard_normal((2, n, d_Q))
    e1 = _unit(g1)
    e2 = _unit(g2 - np.sum(g2 * e1, axis=1, keepdims=True) * e1)
    return u, e1, e2


def sample_prompts(rng: np.random.Generator, n: int, params: TwoStageParams) -> Prompts:
    """``n`` prompts of ``N`` context tokens and one query, i.i.d. given the prompt's directions.

    Examples
    --------
    >>> batch = sample_prompts(np.random.default_rng(0), 5, TwoStageParams(N=3))
    >>> batch.tokens.shape, batch.labels.shape
    ((5, 4, 10), (5, 4))
    """
    d_P, size = params.d_P, params.N + 1
    u, e1, e2 = _directions(rng, n, d_P, params.d_Q)
    draws = rng.random((4, n, size))
    syntactic = draws[0] < params.pi_P
    y_P, eps1, eps2 = np.where(draws[1:] < 0.5, 1.0, -1.0)          # uniform signs
    # Each token is (coefficients) @ (the prompt's frame u, e1, e2): one batched product.
    semantic = (~syntactic) * (params.mu / np.sqrt(2.0))
    coefficients = np.stack([syntactic * (params.gamma * y_P), semantic * eps1, semantic * eps2],
                            axis=-1)
    frame = np.zeros((n, 3, d_P + params.d_Q))
    frame[:, 0, :d_P], frame[:, 1, d_P:], frame[:, 2, d_P:] = u, e1, e2
    tokens = coefficients @ frame
    labels = np.where(syntactic, y_P, eps1 * eps2)
    return Prompts(tokens, labels)


def aligned_weights(params: TwoStageParams, k: tuple[float, float],
                    q: tuple[float, float]) -> tuple[np.ndarray, np.ndarray]:
    """``W_K = k_P I ⊕ k_Q I`` and ``W_Q = q_P I ⊕ q_Q I`` (a point of the invariant manifold).

    Examples
    --------
    >>> W_K, W_Q = aligned_weights(TwoStageParams(d_P=1, d_Q=2), (1.0, 2.0), (3.0, 4.0))
    >>> np.diag(W_K.T @ W_Q).tolist()
    [3.0, 8.0, 8.0]
    """
    def diagonal(pair: tuple[float, float]) -> np.ndarray:
        return np.diag([pair[0]] * params.d_P + [pair[1]] * params.d_Q)

    return diagonal(k), diagonal(q)


def _factors(prompts: Prompts, v: float, W_K: np.ndarray, W_Q: np.ndarray,
             activation: str) -> tuple[np.ndarray, ...]:
    """Per-prompt loss, ``d/dv``, and the rank-one factors of ``d/dW_K`` and ``d/dW_Q``.

    The gradient of one prompt in ``W_K`` is ``outer(left_K, right_K)`` (and so for
    ``W_Q``): ``(loss, grad_v, left_K, right_K, left_Q, right_Q)``.
    """
    keys, query = prompts.tokens[:, :-1, :], prompts.tokens[:, -1, :]
    y_keys, y_query = prompts.labels[:, :-1], prompts.labels[:, -1]
    n_context = keys.shape[1]
    read_query = query @ W_Q.T                      # W_Q x_q, (n, d)
    read_keys = keys @ W_K.T                        # W_K x_i, (n, N, d)
    scores = np.einsum("nid,nd->ni", read_keys, read_query)
    if activation == "relu":
        active, slope = np.maximum(scores, 0.0), (scores > 0).astype(float)  # ReLU'(0) = 0
    else:
        active, slope = scores, np.ones_like(scores)
    readout = (y_keys * active).sum(axis=1) / n_context
    residual = y_query - v * readout
    weight = (-residual * v / n_context)[:, None]    # d loss / d score_i, up to y_i ReLU'(s_i)
    gated = y_keys * slope
    gated_keys = np.einsum("ni,nid->nd", gated, keys)
    gated_reads = np.einsum("ni,nid->nd", gated, read_keys)
    return (residual**2 / 2, -residual * readout, weight * read_query, gated_keys,
            weight * gated_reads, query)


def _per_prompt(prompts: Prompts, v: float, W_K: np.ndarray, W_Q: np.ndarray,
                activation: str) -> tuple[np.ndarray, ...]:
    """Per-prompt loss and gradients ``(loss, d/dv, d/dW_K, d/dW_Q)``."""
    loss, grad_v, left_K, right_K, left_Q, right_Q = _factors(prompts, v, W_K, W_Q, activation)
    return (loss, grad_v, np.einsum("nd,ne->nde", left_K, right_K),
            np.einsum("nd,ne->nde", left_Q, right_Q))


def batch_gradient(prompts: Prompts, v: float, W_K: np.ndarray, W_Q: np.ndarray,
                   activation: str = "relu") -> tuple[float, float, np.ndarray, np.ndarray]:
    """Mean loss and gradients ``(loss, dL/dv, dL/dW_K, dL/dW_Q)`` over a batch.

    Examples
    --------
    >>> p = TwoStageParams(N=4, d_P=1, d_Q=2)
    >>> batch = sample_prompts(np.random.default_rng(1), 8, p)
    >>> W_K, W_Q = aligned_weights(p, (0.0, 0.0), (0.0, 0.0))
    >>> batch_gradient(batch, 1.0, W_K, W_Q)[0]
    0.5
    """
    loss, grad_v, left_K, right_K, left_Q, right_Q = _factors(prompts, v, W_K, W_Q, activation)
    n = loss.shape[0]
    # The mean of the per-prompt outer products, as one matrix product.
    return float(loss.mean()), float(grad_v.mean()), left_K.T @ right_K / n, left_Q.T @ right_Q / n


def estimate(params: TwoStageParams, v: float, W_K: np.ndarray, W_Q: np.ndarray, *,
             prompts: int = 10**6, seed: int = 0, chunk: int = 100_000,
             activation: str = "relu") -> Estimate:
    """Monte-Carlo loss and gradient of the unreduced model, with standard errors.

    Examples
    --------
    >>> p = TwoStageParams(N=4, d_P=1, d_Q=2)
    >>> W_K, W_Q = aligned_weights(p, (0.5, 0.5), (0.5, 0.5))
    >>> e = estimate(p, 1.0, W_K, W_Q, prompts=20_000, seed=1)
    >>> abs(e.loss - 0.4555) < 0.01
    True
    """
    rng = np.random.default_rng(seed)
    totals, squares, done = [0.0] * 4, [0.0] * 4, 0
    while done < prompts:
        size = min(chunk, prompts - done)
        parts = _per_prompt(sample_prompts(rng, size, params), v, W_K, W_Q, activation)
        for i, part in enumerate(parts):
            totals[i] = totals[i] + part.sum(axis=0)
            squares[i] = squares[i] + (part**2).sum(axis=0)
        done += size
    means = [total / done for total in totals]
    errors = [np.sqrt(np.maximum(square / done - mean**2, 0.0) / done)
              for square, mean in zip(squares, means, strict=True)]
    return Estimate(float(means[0]), float(errors[0]), float(means[1]), float(errors[1]),
                    means[2], errors[2], means[3], errors[3], done)
