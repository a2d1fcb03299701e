"""Spectral ablation (spec 7.6, S5): zero one block of eigenvalues of ``W``, read the losses.

This is the model's version of the authors' rank-reduction experiment.  On the
invariant manifold the ablated loss follows from the mixture enumeration
(:func:`ablated_losses`); :func:`ablated_estimate` does the same on full
matrices by Monte Carlo, zeroing the eigenvalues of ``W = W_Kᵀ W_Q`` whose
eigenvectors span the syntactic or the semantic subspace.
"""

from __future__ import annotations

import numpy as np

from .mixture import block_losses
from .params import TwoStageParams

__all__ = ["ablate", "ablated_estimate", "ablated_losses"]


def _relu(s: float) -> float:
    return max(0.0, s)


def ablated_losses(params: TwoStageParams, state: dict[str, float]) -> dict[str, dict[str, float]]:
    """``{"none"|"P"|"Q": {"L_P", "L_Q"}}``: the loss blocks with nothing, P or Q zeroed.

    ``state`` holds ``v, k_P, q_P, k_Q, q_Q``.  Zeroing the P eigenvalues of ``W`` is
    ``a = k_P q_P = 0`` (here ``q_P = 0``), and likewise for Q.

    Examples
    --------
    >>> out = ablated_losses(TwoStageParams(), {"v": 2.0, "k_P": 1.0, "q_P": 1.0, "k_Q": 1.0,
    ...                                         "q_Q": 1.0})
    >>> out["P"]["L_P"], out["P"]["L_Q"] == out["none"]["L_Q"]
    (0.25, True)
    """
    args = (params.pi_P, params.gamma, params.mu, params.N, _relu)
    q_P, q_Q = state["q_P"], state["q_Q"]
    weights = {"none": (q_P, q_Q), "P": (0.0, q_Q), "Q": (q_P, 0.0)}
    out = {}
    for name, (q_P, q_Q) in weights.items():
        blocks = block_losses((state["v"], state["k_P"], q_P, state["k_Q"], q_Q), *args)
        out[name] = {"L_P": float(blocks["P"]), "L_Q": float(blocks["Q"])}
    return out


def ablate(W: np.ndarray, d_P: int, block: str) -> np.ndarray:
    """``W`` with the eigenvalues of its syntactic (``"P"``) or semantic (``"Q"``) block at 0.

    The eigenvectors are classified by where their weight lies (the first
    ``d_P`` coordinates or the rest); ``W`` is symmetrised first (on the manifold it
    is symmetric).

    Examples
    --------
    >>> ablate(np.diag([1.0, 2.0, 3.0]), 1, "P").diagonal().tolist()
    [0.0, 2.0, 3.0]
    """
    values, vectors = np.linalg.eigh((W + W.T) / 2)
    syntactic = np.sum(vectors[:d_P] ** 2, axis=0) > 0.5
    keep = ~syntactic if block == "P" else syntactic
    return (vectors * (values * keep)) @ vectors.T


def ablated_estimate(params: TwoStageParams, v: float, W: np.ndarray, *, prompts: int = 200_000,
                     seed: int = 0) -> dict[str, tuple[float, float]]:
    """Monte-Carlo ``L_P``, ``L_Q`` (mean, standard error) of the unreduced model, attention ``W``.

    The scores only see ``W = W_Kᵀ W_Q``, so ``W_K = I`` and ``W_Q = W``.

    Examples
    --------
    >>> p = TwoStageParams(N=4, d_P=1, d_Q=2)
    >>> est = ablated_estimate(p, 1.0, np.zeros((3, 3)), prompts=1000)
    >>> est["P"][0] + est["Q"][0]
    0.5
    """
    from .unreduced import _factors, sample_prompts

    batch = sample_prompts(np.random.default_rng(seed), prompts, params)
    loss = _factors(batch, v, np.eye(W.shape[0]), W, "relu")[0]
    # A query is syntactic when its syntactic part is non-zero (tokens have pure types).
    syntactic = np.any(batch.tokens[:, -1, :params.d_P] != 0.0, axis=1)
    out = {}
    for name, mask in (("P", syntactic), ("Q", ~syntactic)):
        part = loss * mask
        out[name] = (float(part.mean()), float(part.std(ddof=1) / np.sqrt(prompts)))
    return out
