"""Plain SGD on the unreduced model (full ``W_K``, ``W_Q``, scalar ``v``): the ground truth of 7.8.

Each step draws a batch of fresh prompts (:func:`unreduced.sample_prompts`) and
takes the batch-mean gradient (:func:`unreduced.batch_gradient`, vectorised over
the prompts).  Time is ``t = lr × steps``, so that SGD and gradient flow share a
clock.  What is recorded is what the reduced ODE predicts: ``a = tr(W_PP)/d_P``,
``b = tr(W_QQ)/d_Q`` of ``W = W_Kᵀ W_Q``, and ``v``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from reduced_odes.author import first_crossing

from .params import TwoStageParams
from .unreduced import batch_gradient, sample_prompts

__all__ = ["BATCH", "INITS", "LR", "SGDRun", "initial_weights", "stage_times",
           "train"]

#: Learning rate and batch size of spec 7.8.
LR, BATCH = 0.05, 512
#: Relative size of the perturbation of the aligned start, ``σ(I + 0.3 G/√d)`` (spec 7.8).
PERTURBATION = 0.3
#: The starts of spec 7.8.
INITS = ("aligned", "perturbed", "random")


@dataclass(frozen=True)
class SGDRun:
    """One SGD run, recorded every ``every`` steps: times, block traces of ``W``, and ``v``."""

    t: np.ndarray
    a: np.ndarray
    b: np.ndarray
    v: np.ndarray


def initial_weights(params: TwoStageParams, init: str,
                    rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``(W_K, W_Q)`` at ``t = 0``: aligned ``σI``, perturbed ``σ(I + 0.3G/√d)``, or ``N(0, σ²)``.

    Examples
    --------
    >>> W_K, W_Q = initial_weights(TwoStageParams(d_P=1, d_Q=2, sigma=0.5), "aligned",
    ...                            np.random.default_rng(0))
    >>> np.diag(W_K).tolist()
    [0.5, 0.5, 0.5]
    """
    d = params.d_P + params.d_Q
    if init not in INITS:
        raise ValueError(f"init={init!r}; allowed: {', '.join(INITS)}")
    if init == "random":
        return tuple(params.sigma * rng.standard_normal((d, d)) for _ in range(2))
    spread = PERTURBATION / math.sqrt(d) if init == "perturbed" else 0.0
    return tuple(params.sigma * (np.eye(d) + spread * rng.standard_normal((d, d)))
                 for _ in range(2))


def _blocks(params: TwoStageParams, W_K: np.ndarray, W_Q: np.ndarray) -> tuple[float, float]:
    W, d_P = W_K.T @ W_Q, params.d_P
    return float(np.trace(W[:d_P, :d_P]) / d_P), float(np.trace(W[d_P:, d_P:]) / params.d_Q)


def train(params: TwoStageParams, init: str, seed: int, t_end: float, *, lr: float = LR,
          batch: int = BATCH, every: int = 10) -> SGDRun:
    """SGD from ``init`` until ``t_end`` (gradient-flow time), recording every ``every`` steps.

    ``v`` is trained unless ``params.train_value`` is false.

    Examples
    --------
    >>> run = train(TwoStageParams(d_P=2, d_Q=4, N=16), "aligned", 0, t_end=1.0, batch=32)
    >>> float(run.t[-1]), bool(run.a[0] == run.b[0])
    (1.0, True)
    """
    rng = np.random.default_rng(seed)
    W_K, W_Q = initial_weights(params, init, rng)
    v, steps = params.v0, int(round(t_end / lr))
    rows = []
    for step in range(steps + 1):
        if step % every == 0 or step == steps:
            rows.append((step * lr, *_blocks(params, W_K, W_Q), v))
        if step == steps:
            break
        _, grad_v, grad_K, grad_Q = batch_gradient(sample_prompts(rng, batch, params), v, W_K, W_Q)
        W_K, W_Q = W_K - lr * grad_K, W_Q - lr * grad_Q
        v = v - lr * grad_v if params.train_value else v
    t, a, b, v_trace = (np.array(column) for column in zip(*rows, strict=True))
    return SGDRun(t, a, b, v_trace)


def stage_times(params: TwoStageParams, run: SGDRun, A_star: float, B_star: float,
                theta: float = 0.5) -> dict[str, float]:
    """``T_P``, ``T_Q`` (at ``theta``), ``T_cross``, and the plateau ends ``T_P@0.9``, ``T_Q@0.1``.

    ``B`` uses ``|b|`` (the loss is even in ``b``).  ``T_cross`` is the first time
    after ``T_P`` with ``|b| >= a``: on the aligned start ``b = a`` at ``t = 0``.

    Examples
    --------
    >>> run = SGDRun(np.array([0.0, 1.0, 2.0]), np.array([0.0, 2.0, 2.0]),
    ...              np.array([0.0, 0.0, 4.0]), np.ones(3))
    >>> stage_times(TwoStageParams(), run, 2.0, 4.0)["T_Q"]
    1.5
    """
    A = run.v * params.gamma**2 * run.a
    B = run.v * params.mu**2 * np.abs(run.b)
    T_P = first_crossing(run.t, A, theta * A_star)
    return {"T_P": T_P, "T_Q": first_crossing(run.t, B, theta * B_star),
            "T_cross": first_crossing(run.t, np.abs(run.b) - run.a, 0.0, after=T_P),
            "T_P@0.9": first_crossing(run.t, A, 0.9 * A_star),
            "T_Q@0.1": first_crossing(run.t, B, 0.1 * B_star)}
