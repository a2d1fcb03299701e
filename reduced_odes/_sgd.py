"""Monte-Carlo online SGD on the real two-layer attention model (spec sections 1-4).

This module is the ground truth the reduced ODEs are checked against.  It trains
the actual model, not a reduction: every step draws a fresh batch of Gaussian
sequences and applies the exact batch-mean gradient, computed by hand-written,
vectorised backpropagation.

Model (``x_0 := 0``, tokens ``x_1..x_L`` i.i.d. N(0, 1)):

* layer 1: ``h_s = (x_s, g_s)`` with ``g_s = sum_{tau<s} rho_tau^{(s)}(p1) x_tau`` and
  ``rho_tau^{(s)} ∝ exp(-p1 (s-1-tau))``; ``p1 = +inf`` gives ``g_s = x_{s-1}``.
* head 1: ``y1 = w_v1 sum_{s=1}^{L-1} pi_s(p) g_s``, ``pi_s ∝ exp(-p (L-1-s))``.
* head 2: ``y2 = w_v2 sum_{s=2}^{L-1} A_s(w_k w_q) x_s`` with logits
  ``a_s = w_k w_q x_L g_s``.
* target: ``f1* = alpha x_{L-2}``, ``f2* = (1-alpha) sum_s A_s(w*) x_s`` with logits
  ``w* x_L x_{s-1}`` (the true previous token).
* per-sample loss ``L_G4 + L_IH = ((f1*-y1)^2 + (f2*-y2)^2) / 2``.

The attention ``A_s`` is one of ``"exact"`` (softmax over ``s = 2..L-1``),
``"linear"`` (``exp(a_s)/L``, the paper's simplification) or ``"meanfield"``
(``exp(a_s) / ((L-2) exp(w^2 x_L^2 / 2))``); the target uses the same form.

Parameter vectors are ordered ``(w_v1, p, w_v2, w_k, w_q)`` for the Stage-II model
(``p1 = +inf``) and ``(p1, w_v1, p, w_v2, w_k, w_q)`` for the two-layer model.

Implementation notes: tokens are held position-major, shape ``(L+1, B)`` with
the padding row ``x_0 = 0``; the layer-1 features come from an ``O(L B)`` convex
recursion instead of an ``O(L^2 B)`` product; batches are processed in blocks
of about ``BLOCK_ELEMENTS`` numbers per temporary, which bounds memory and keeps
the allocator from page-faulting fresh buffers on every step.  ``E[L_G4]`` is
recorded exactly (head 1 is linear in the Gaussian tokens), so ``T_I`` carries
no sampling noise beyond that of the SGD parameters themselves.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

__all__ = [
    "ATTENTIONS",
    "MODES",
    "MCEstimate",
    "SGDConfig",
    "SGDTrajectory",
    "first_crossing",
    "loss_and_grad",
    "monte_carlo_loss",
    "simulate_sgd",
    "stage1_loss_and_grad",
]

ATTENTIONS = ("exact", "linear", "meanfield")
MODES = ("stage2", "layerwise", "joint")
STAGE2_NAMES = ("w_v1", "p", "w_v2", "w_k", "w_q")
TWO_LAYER_NAMES = ("p1",) + STAGE2_NAMES


# --------------------------------------------------------------------------- #
# Input validation
# --------------------------------------------------------------------------- #
def _check_real(name: str, value, lo=-math.inf, hi=math.inf, *, lo_open=True, hi_open=True,
                allowed: str | None = None) -> float:
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
    v = float(value) if ok else math.nan
    if ok and math.isfinite(v):
        ok = (v > lo if lo_open else v >= lo) and (v < hi if hi_open else v <= hi)
    else:
        ok = False
    if not ok:
        if allowed is None:
            left = "(" if lo_open else "["
            right = ")" if hi_open else "]"
            allowed = f"a finite real number in {left}{lo}, {hi}{right}"
        raise ValueError(f"{name}={value!r} is invalid: {name} must be {allowed}")
    return v


def _check_int(name: str, value, lo: int) -> int:
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < lo:
        raise ValueError(f"{name}={value!r} is invalid: {name} must be an integer >= {lo}")
    return int(value)


def _check_choice(name: str, value, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ValueError(f"{name}={value!r} is invalid: {name} must be one of {choices}")
    return value


def _check_wstar(wstar, attention: str) -> float:
    """w* must lie where the target's second moment is finite (spec section 5)."""
    w = _check_real("wstar", wstar)
    if attention == "linear" and not abs(2 * w) < 1:
        raise ValueError(f"wstar={wstar!r} is invalid: attention 'linear' needs |2 wstar| < 1")
    if attention == "meanfield" and not 2 * w * w < 1:
        raise ValueError(f"wstar={wstar!r} is invalid: attention 'meanfield' needs 2 wstar^2 < 1")
    return w


def _check_model(L, alpha, wstar, attention) -> tuple[int, float, float, str]:
    L = _check_int("L", L, 4)
    alpha = _check_real("alpha", alpha, 0.0, 1.0)
    attention = _check_choice("attention", attention, ATTENTIONS)
    wstar = _check_wstar(wstar, attention)
    return L, alpha, wstar, attention


# --------------------------------------------------------------------------- #
# Position weights (numerically stable)
# --------------------------------------------------------------------------- #
def _alibi_weights(p: float, L: int) -> tuple[np.ndarray, np.ndarray]:
    """Head-1 weights ``pi_s``, ``s = 1..L-1``, and ``d pi_s / d p``.

    ``pi_s ∝ exp(-p k_s)`` with ``k_s = L-1-s``; the maximum logit is subtracted,
    so any finite ``p`` is safe (large ``|p|`` underflows to a one-hot vector).
    """
    k = np.arange(L - 2, -1, -1, dtype=float)  # k_s for s = 1..L-1
    logits = -p * k
    e = np.exp(logits - logits.max())
    pi = e / e.sum()
    return pi, -pi * (k - pi @ k)


def _recency_weights(p1: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Weights ``∝ exp(-p1 j)``, ``j = 0..n-1`` (``j = 0`` is the nearest token), and d/dp1."""
    j = np.arange(n, dtype=float)
    logits = -p1 * j
    e = np.exp(logits - logits.max())
    rho = e / e.sum()
    return rho, -rho * (j - rho @ j)


def _layer1_coefficients(p1: float, L: int) -> tuple[np.ndarray, np.ndarray]:
    """Coefficients of the layer-1 recursion ``g_s = x_{s-1} + c_s (g_{s-1} - x_{s-1})``.

    With ``rho^{(s)}`` the softmax over ``j = s-1-tau = 0..s-2`` of ``-p1 j``,
    ``1 - c_s`` is the weight on the nearest token; ``c_s`` is summed from the other
    weights, so it is exact even when it is tiny.  Returns ``c_s`` and ``dc_s/dp1``
    for ``s = 2..L-1`` (one masked softmax per row, vectorised).
    """
    n = np.arange(1, L - 1)[:, None]  # number of visible tokens, s - 1
    j = np.arange(L - 2, dtype=float)[None, :]
    mask = j < n
    logits = np.where(mask, -p1 * j, -np.inf)
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    rho = e / e.sum(axis=1, keepdims=True)
    jbar = (rho * np.where(mask, j, 0.0)).sum(axis=1)
    c = rho[:, 1:].sum(axis=1)
    dc = -rho[:, 0] * jbar  # = -d rho_0 / d p1
    return c, dc


def _layer1_features(xt: np.ndarray, p1: float, G: np.ndarray | None = None,
                     dG: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``g_s`` and ``dg_s/dp1`` (rows ``s = 1..L-1``) for tokens ``xt`` of shape ``(L+1, B)``.

    Uses the convex recursion ``g_s = x_{s-1} + c_s (g_{s-1} - x_{s-1})`` (``g_1 = 0``),
    which costs ``O(L B)`` and is stable for every finite ``p1`` (``0 <= c_s <= 1``).
    ``G`` and ``dG`` are optional output buffers.
    """
    L = xt.shape[0] - 1
    B = xt.shape[1]
    G = np.empty((L - 1, B)) if G is None else G
    dG = np.empty((L - 1, B)) if dG is None else dG
    c, dc = _layer1_coefficients(p1, L)
    tmp = np.empty(B)
    tmp2 = np.empty(B)
    G[0] = 0.0
    dG[0] = 0.0
    for i in range(L - 2):  # row i+1 holds g_{i+2}
        np.subtract(G[i], xt[i + 1], out=tmp)  # g_{s-1} - x_{s-1}
        np.multiply(dG[i], c[i], out=dG[i + 1])
        np.multiply(tmp, dc[i], out=tmp2)
        dG[i + 1] += tmp2
        np.multiply(tmp, c[i], out=G[i + 1])
        G[i + 1] += xt[i + 1]
    return G, dG


def _expected_loss_g4(theta6: np.ndarray, L: int, alpha: float, stage: int = 2) -> float:
    """Exact ``E[L_G4]``: head 1 is linear in the i.i.d. tokens, so no sampling is needed.

    ``y1 = w_v1 sum_tau beta_tau x_tau`` with ``beta = R pi`` (``R`` the layer-1
    mixing matrix; ``beta_tau = pi_{tau+1}`` for ``p1 = +inf``), hence
    ``E[L_G4] = (w_v1^2 |beta|^2 - 2 alpha w_v1 beta_{L-2} + alpha^2) / 2``.  In
    Stage I (frozen read-out ``y1 = alpha g_{L-1}``) ``w_v1 = alpha``, ``beta = rho^{(L-1)}``.
    """
    p1, wv1, p = theta6[0], theta6[1], theta6[2]
    if stage == 1:
        rho, _ = _recency_weights(p1, L - 2)  # rho[0] is the weight on x_{L-2}
        return 0.5 * alpha**2 * ((1.0 - rho[0]) ** 2 + float(rho[1:] @ rho[1:]))
    pi, _ = _alibi_weights(p, L)
    if math.isinf(p1):
        beta = pi[1:]  # coefficients of x_1..x_{L-2}
    else:
        g_weights = np.zeros((L - 1, L - 2))  # row s-1: weights of g_s on x_1..x_{L-2}
        c, _ = _layer1_coefficients(p1, L)
        for i in range(L - 2):  # the recursion of _layer1_features, on coefficients
            g_weights[i + 1] = c[i] * g_weights[i]
            g_weights[i + 1, i] += 1.0 - c[i]
        beta = pi @ g_weights
    return 0.5 * (wv1**2 * float(beta @ beta) - 2.0 * alpha * wv1 * beta[-1] + alpha**2)


# --------------------------------------------------------------------------- #
# Per-sample forward/backward pass on one block of sequences
# --------------------------------------------------------------------------- #
def _attention(logits: np.ndarray, q: np.ndarray, w: float, attention: str, L: int) -> np.ndarray:
    """Attention weights ``A_s`` (rows: ``s = 2..L-1``, columns: samples)."""
    if attention == "exact":
        e = np.exp(logits - logits.max(axis=0))
        e /= e.sum(axis=0)
        return e
    if attention == "linear":
        e = np.exp(logits)
        e *= 1.0 / L
        return e
    # meanfield: exponent w x_L g_s - w^2 x_L^2 / 2 is bounded above by g_s^2 / 2.
    e = np.exp(logits - 0.5 * (w * q) ** 2)
    e *= 1.0 / (L - 2)
    return e


def _block(theta: np.ndarray, xt: np.ndarray, G: np.ndarray, dG: np.ndarray | None,
           pi: np.ndarray, dpi: np.ndarray, alpha: float, wstar: float,
           attention: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-sample ``L_G4``, ``L_IH`` (shape ``(b,)``) and gradients (shape ``(k, b)``).

    ``xt`` has shape ``(L+1, b)`` (row ``s`` is ``x_s``, row 0 is zero), ``G`` holds
    ``g_s`` for ``s = 1..L-1`` and ``dG`` its ``p1``-derivative (two-layer model only).
    Positions run along axis 0, so every reduction over positions is a row sum.
    """
    two_layer = theta.shape[0] == 6
    if two_layer:
        _, wv1, _, wv2, wk, wq = theta
    else:
        wv1, _, wv2, wk, wq = theta
    L = xt.shape[0] - 1
    b = xt.shape[1]
    # head 1 (4-gram)
    S1 = pi @ G
    r1 = wv1 * S1 - alpha * xt[L - 2]
    # head 2 (induction) and its target
    w = wk * wq
    q = xt[L]  # query x_L
    V = xt[2:L]  # values x_s, s = 2..L-1
    C = G[1:] * q  # key * query, s = 2..L-1
    A = _attention(w * C, q, w, attention, L)
    AV = A * V
    S2 = AV.sum(axis=0)
    CAV = (C * AV).sum(axis=0)
    if attention == "exact":
        dS2_dw = CAV - (A * C).sum(axis=0) * S2
    elif attention == "linear":
        dS2_dw = CAV
    else:
        dS2_dw = CAV - w * q**2 * S2
    Astar = _attention(wstar * (xt[1 : L - 1] * q), q, wstar, attention, L)
    Astar *= V
    r2 = wv2 * S2 - (1.0 - alpha) * Astar.sum(axis=0)

    grads = np.empty((theta.shape[0], b))
    off = 1 if two_layer else 0
    grads[off + 0] = r1 * S1
    grads[off + 1] = r1 * wv1 * (dpi @ G)
    grads[off + 2] = r2 * S2
    gw = r2 * wv2 * dS2_dw
    grads[off + 3] = gw * wq
    grads[off + 4] = gw * wk
    if two_layer:
        # dS2/da_s: the softmax couples the positions; exp-type attentions do not.
        dS2_da = A * (V - S2) if attention == "exact" else AV
        grads[0] = r1 * wv1 * (pi @ dG) + r2 * wv2 * w * q * (dS2_da * dG[1:]).sum(axis=0)
    return 0.5 * r1**2, 0.5 * r2**2, grads


BLOCK_ELEMENTS = 8192


def _block_cols(L: int) -> int:
    """Sequences per block, so that each temporary holds about ``BLOCK_ELEMENTS`` doubles.

    Small temporaries are recycled by the allocator; large ones are freshly mapped
    and page-faulted on every call, which made whole-batch evaluation 2-4x slower.
    """
    return max(8, BLOCK_ELEMENTS // L)


def _sums(theta: np.ndarray, xt: np.ndarray, alpha: float, wstar: float, attention: str,
          squares: bool = False, work: tuple[np.ndarray, np.ndarray] | None = None
          ) -> tuple[np.ndarray, np.ndarray | None]:
    """Sums over sequences of ``(L_G4, L_IH, grad...)`` (and of their squares).

    ``xt`` has shape ``(L+1, B)``; ``work`` optionally provides the ``(L-1, B)``
    buffers for the layer-1 features of the two-layer model.
    """
    L = xt.shape[0] - 1
    if theta.shape[0] == 6:
        pi, dpi = _alibi_weights(theta[2], L)
        G, dG = _layer1_features(xt, theta[0], *(work or (None, None)))
    else:
        pi, dpi = _alibi_weights(theta[1], L)
        G, dG = xt[: L - 1], None  # previous-token head: g_s = x_{s-1}
    step = _block_cols(L)
    tot = np.zeros(2 + theta.shape[0])
    sq = np.zeros_like(tot) if squares else None
    for a in range(0, xt.shape[1], step):
        sl = slice(a, a + step)
        lg4, lih, g = _block(theta, xt[:, sl], G[:, sl], None if dG is None else dG[:, sl],
                             pi, dpi, alpha, wstar, attention)
        tot[0] += lg4.sum()
        tot[1] += lih.sum()
        tot[2:] += g.sum(axis=1)
        if squares:
            sq[0] += lg4 @ lg4
            sq[1] += lih @ lih
            sq[2:] += np.einsum("ij,ij->i", g, g)
    return tot, sq


def _stage1_sums(p1: float, xt: np.ndarray, alpha: float, wstar: float,
                 attention: str, with_ih: bool = True) -> np.ndarray:
    """Sums of the Stage-I loss, of the frozen ``L_IH`` and of ``d loss / d p1``.

    Stage-I read-out: ``y1 = alpha g_{L-1}``, ``g_{L-1} = sum_{tau<=L-2} rho x_tau``;
    the induction head outputs 0, so its partial loss ``((1-alpha) f_IH)^2 / 2`` is
    a constant of ``p1`` (only computed, for the record, if ``with_ih``).
    """
    L = xt.shape[0] - 1
    rho, drho = _recency_weights(p1, L - 2)  # j = L-2-tau, tau = L-2, ..., 1
    past = xt[L - 2 : 0 : -1]  # x_{L-2}, ..., x_1 (matches j = 0..L-3)
    step = _block_cols(L)
    tot = np.zeros(3)
    for a in range(0, xt.shape[1], step):
        sl = slice(a, a + step)
        blk = past[:, sl]
        resid = alpha * (xt[L - 2, sl] - rho @ blk)  # alpha (x_{L-2} - g_{L-1})
        tot[0] += 0.5 * resid @ resid
        tot[2] += -alpha * resid @ (drho @ blk)
        if with_ih:
            q = xt[L, sl]
            Astar = _attention(wstar * (xt[1 : L - 1, sl] * q), q, wstar, attention, L)
            f_ih = (1.0 - alpha) * (Astar * xt[2:L, sl]).sum(axis=0)
            tot[1] += 0.5 * f_ih @ f_ih
    return tot


def _as_theta(theta) -> np.ndarray:
    th = np.asarray(theta, dtype=float)
    if th.ndim != 1 or th.shape[0] not in (5, 6):
        raise ValueError(
            f"theta has shape {th.shape}: theta must be a 1-D vector of length 5 "
            f"{STAGE2_NAMES} or 6 {TWO_LAYER_NAMES}"
        )
    if not np.all(np.isfinite(th)):
        raise ValueError(f"theta={th.tolist()} is invalid: all entries must be finite")
    return th


def _tokens_to_xt(x) -> np.ndarray:
    """``(B, L)`` tokens -> ``(L+1, B)`` layout with the zero padding row ``x_0``."""
    x = np.asarray(x, dtype=float)
    if x.ndim != 2 or x.shape[1] < 4 or x.shape[0] < 1:
        raise ValueError(f"x has shape {x.shape}: x must have shape (B >= 1, L >= 4)")
    xt = np.zeros((x.shape[1] + 1, x.shape[0]))
    xt[1:] = x.T
    return xt


def loss_and_grad(theta, x, *, alpha: float, wstar: float,
                  attention: str = "exact") -> tuple[float, float, np.ndarray]:
    """Batch-mean partial losses and their exact gradient on a fixed batch.

    Parameters
    ----------
    theta : array_like, shape (5,) or (6,)
        ``(w_v1, p, w_v2, w_k, w_q)`` for the Stage-II model (layer 1 an exact
        previous-token head, ``p1 = +inf``) or ``(p1, w_v1, p, w_v2, w_k, w_q)``
        for the two-layer model.
    x : array_like, shape (B, L)
        Tokens ``x_1..x_L`` of ``B`` sequences (``x_0 = 0`` is implicit).
    alpha, wstar : float
        Target mixing weight in (0, 1) and target induction-head strength.
    attention : {"exact", "linear", "meanfield"}
        Form of the induction-head attention (model and target).

    Returns
    -------
    l_g4, l_ih : float
        Batch means of ``(f1*-y1)^2/2`` and ``(f2*-y2)^2/2``.
    grad : numpy.ndarray
        Gradient of ``l_g4 + l_ih`` with respect to ``theta`` (same shape).

    Examples
    --------
    >>> import numpy as np
    >>> x = np.random.default_rng(0).standard_normal((64, 8))
    >>> l_g4, l_ih, g = loss_and_grad([0.1, 0.0, 0.1, 0.1, 0.1], x, alpha=0.5, wstar=0.3)
    >>> g.shape
    (5,)
    """
    th = _as_theta(theta)
    xt = _tokens_to_xt(x)
    _, alpha, wstar, attention = _check_model(xt.shape[0] - 1, alpha, wstar, attention)
    with np.errstate(over="ignore", invalid="ignore"):
        tot, _ = _sums(th, xt, alpha, wstar, attention)
    tot /= xt.shape[1]
    return float(tot[0]), float(tot[1]), tot[2:]


def stage1_loss_and_grad(p1: float, x, *, alpha: float) -> tuple[float, float]:
    """Stage-I loss ``alpha^2/2 * mean (x_{L-2} - g_{L-1})^2`` and its ``p1``-derivative.

    In Stage I (spec section 4) the second layer is frozen at its ideal 4-gram
    read-out (``w_v1 = alpha`` attending only to ``s = L-1``) and the induction
    head contributes a constant, so only this term depends on ``p1``.

    Parameters
    ----------
    p1 : float
        Layer-1 position slope (finite).
    x : array_like, shape (B, L)
        Tokens ``x_1..x_L``.
    alpha : float
        Target mixing weight in (0, 1).

    Returns
    -------
    loss, grad : float

    Examples
    --------
    >>> import numpy as np
    >>> x = np.random.default_rng(0).standard_normal((10_000, 6))
    >>> loss, grad = stage1_loss_and_grad(0.0, x, alpha=0.5)
    >>> bool(grad < 0)   # increasing p1 lowers the loss
    True
    """
    p1 = _check_real("p1", p1)
    xt = _tokens_to_xt(x)
    alpha = _check_real("alpha", alpha, 0.0, 1.0)
    tot = _stage1_sums(p1, xt, alpha, 0.0, "exact") / xt.shape[1]
    return float(tot[0]), float(tot[2])


# --------------------------------------------------------------------------- #
# Monte-Carlo expectations
# --------------------------------------------------------------------------- #
@dataclass(frozen=True)
class MCEstimate:
    """Monte-Carlo estimate of the expected partial losses and gradient.

    Attributes
    ----------
    loss_g4, loss_ih : float
        Sample means of the partial losses.
    grad : numpy.ndarray
        Sample mean of the gradient of the total loss.
    se_loss_g4, se_loss_ih : float
        Standard errors of ``loss_g4`` and ``loss_ih``.
    se_grad : numpy.ndarray
        Standard errors of ``grad``.
    n : int
        Number of sequences.
    """

    loss_g4: float
    loss_ih: float
    grad: np.ndarray
    se_loss_g4: float
    se_loss_ih: float
    se_grad: np.ndarray
    n: int


def monte_carlo_loss(theta, *, L: int, alpha: float, wstar: float, attention: str = "exact",
                     n: int = 200_000, seed: int = 0, chunk: int = 16_384) -> MCEstimate:
    """Estimate ``E[L_G4]``, ``E[L_IH]`` and ``E[grad]`` with standard errors.

    Sequences are drawn and processed ``chunk`` at a time, so memory stays
    bounded for any ``n``.

    Parameters
    ----------
    theta : array_like, shape (5,) or (6,)
        Parameters, as in :func:`loss_and_grad`.
    L : int
        Sequence length, ``L >= 4``.
    alpha, wstar : float
        Target parameters.
    attention : {"exact", "linear", "meanfield"}
        Attention form.
    n : int
        Number of Monte-Carlo sequences (``>= 2``).
    seed : int
        Seed of the PCG64 generator.
    chunk : int
        Sequences drawn at a time.

    Returns
    -------
    MCEstimate

    Examples
    --------
    >>> est = monte_carlo_loss([0.0, 0.0, 0.0, 0.1, 0.1], L=6, alpha=0.5, wstar=0.3,
    ...                        n=20_000, seed=1)
    >>> abs(est.loss_g4 - 0.125) < 4 * est.se_loss_g4   # w_v1 = 0: L_G4 = alpha^2/2
    True
    """
    th = _as_theta(theta)
    L, alpha, wstar, attention = _check_model(L, alpha, wstar, attention)
    n = _check_int("n", n, 2)
    chunk = _check_int("chunk", chunk, 1)
    seed = _check_int("seed", seed, 0)
    rng = np.random.Generator(np.random.PCG64(seed))
    s1 = np.zeros(2 + th.shape[0])
    s2 = np.zeros_like(s1)
    done = 0
    with np.errstate(over="ignore", invalid="ignore"):
        while done < n:
            b = min(chunk, n - done)
            xt = np.zeros((L + 1, b))
            rng.standard_normal(out=xt[1:])
            a1, a2 = _sums(th, xt, alpha, wstar, attention, squares=True)
            s1 += a1
            s2 += a2
            done += b
    mean = s1 / n
    var = np.maximum(s2 / n - mean**2, 0.0) * n / (n - 1)
    se = np.sqrt(var / n)
    return MCEstimate(float(mean[0]), float(mean[1]), mean[2:], float(se[0]), float(se[1]),
                      se[2:], n)


# --------------------------------------------------------------------------- #
# Online SGD
# --------------------------------------------------------------------------- #
@dataclass(frozen=True)
class SGDConfig:
    """Settings of one online-SGD run (validated on construction).

    Parameters
    ----------
    L : int
        Sequence length, ``L >= 4``.
    alpha : float
        Target mixing weight, in (0, 1).
    wstar : float
        Target induction-head strength ``w*`` (``|2 w*| < 1`` for ``"linear"``,
        ``2 w*^2 < 1`` for ``"meanfield"``, so the target has finite variance).
    sigma : float
        Initialisation scale, ``> 0``: ``w_v1 = w_v2 = w_k = w_q = sigma``, ``p = 0``
        (``"linear"`` needs ``2 sigma^2 < 1``, ``"meanfield"`` ``2 sigma^4 < 1``, so
        that ``w_kq(0) = sigma^2`` lies in the attention's domain).
    attention : {"exact", "linear", "meanfield"}
        Induction-head attention form (model and target).
    mode : {"stage2", "layerwise", "joint"}
        ``"stage2"``: layer 1 is an exact previous-token head (``p1 = +inf``),
        train ``(w_v1, p, w_v2, w_k, w_q)``.  ``"layerwise"``: Stage I trains
        ``p1`` alone for ``stage1_time`` with the frozen ideal read-out, then
        Stage II trains the five layer-2 parameters for ``t_max`` with ``p1``
        frozen at its (finite) Stage-I end value.  ``"joint"``: all six
        parameters trained together from ``t = 0`` for ``t_max``.
    batch : int
        Fresh sequences per step, ``>= 1``.
    eta : float
        Learning rate, ``> 0``; time is ``t = eta * steps``.
    t_max : float
        Training time (of Stage II in ``"layerwise"`` mode), ``> 0``.
    record_every : int
        Record every this many steps (the first and last step are always recorded).
    seed : int
        Seed (``>= 0``) of the PCG64 generators (training and evaluation streams).
    stage1_time : float
        Stage-I duration in ``"layerwise"`` mode, ``>= 0``.
    p1_init : float
        Initial ``p1`` for ``"layerwise"`` and ``"joint"`` (finite).
    eval_batch : int
        Size of a fixed evaluation batch (drawn once, from a separate stream) on
        which low-noise loss curves are recorded; 0 (default) disables it.  The
        exact expected ``L_G4`` is always recorded.

    Examples
    --------
    >>> SGDConfig(L=8, alpha=0.5, wstar=0.3, sigma=0.1, t_max=1.0).n_steps
    20
    """

    L: int
    alpha: float
    wstar: float
    sigma: float
    attention: str = "exact"
    mode: str = "stage2"
    batch: int = 256
    eta: float = 0.05
    t_max: float = 100.0
    record_every: int = 10
    seed: int = 0
    stage1_time: float = 50.0
    p1_init: float = 0.0
    eval_batch: int = 0

    def __post_init__(self):
        L, alpha, wstar, attention = _check_model(self.L, self.alpha, self.wstar, self.attention)
        object.__setattr__(self, "L", L)
        object.__setattr__(self, "alpha", alpha)
        object.__setattr__(self, "wstar", wstar)
        sigma = _check_real("sigma", self.sigma, 0.0)
        # w_kq(0) = sigma^2 must lie where the expected loss is finite (spec section 5).
        if attention == "linear" and not 2 * sigma**2 < 1:
            raise ValueError(f"sigma={self.sigma!r} is invalid: attention 'linear' needs "
                             f"|2 w_kq(0)| = 2 sigma^2 < 1, i.e. sigma < {math.sqrt(0.5):.6g}")
        if attention == "meanfield" and not 2 * sigma**4 < 1:
            raise ValueError(f"sigma={self.sigma!r} is invalid: attention 'meanfield' needs "
                             f"2 w_kq(0)^2 = 2 sigma^4 < 1, i.e. sigma < {0.5**0.25:.6g}")
        object.__setattr__(self, "sigma", sigma)
        _check_choice("mode", self.mode, MODES)
        object.__setattr__(self, "batch", _check_int("batch", self.batch, 1))
        object.__setattr__(self, "eta", _check_real("eta", self.eta, 0.0))
        object.__setattr__(self, "t_max", _check_real("t_max", self.t_max, 0.0))
        object.__setattr__(self, "record_every", _check_int("record_every", self.record_every, 1))
        object.__setattr__(self, "seed", _check_int("seed", self.seed, 0))
        object.__setattr__(self, "stage1_time",
                           _check_real("stage1_time", self.stage1_time, 0.0, lo_open=False))
        object.__setattr__(self, "p1_init", _check_real("p1_init", self.p1_init))
        object.__setattr__(self, "eval_batch", _check_int("eval_batch", self.eval_batch, 0))

    @property
    def n_steps(self) -> int:
        """Number of (Stage-II, or joint) SGD steps: ``round(t_max / eta)``, at least 1."""
        return max(1, int(round(self.t_max / self.eta)))

    @property
    def n_steps_stage1(self) -> int:
        """Number of Stage-I steps (``"layerwise"`` only): ``round(stage1_time / eta)``."""
        return int(round(self.stage1_time / self.eta)) if self.mode == "layerwise" else 0


def first_crossing(t, y, level: float, *, above: bool = True) -> float:
    """First time ``y`` reaches ``level``, linearly interpolated between samples.

    Parameters
    ----------
    t, y : array_like
        Sample times (increasing) and values.
    level : float
        Threshold.
    above : bool
        ``True``: first ``t`` with ``y >= level``; ``False``: with ``y <= level``.

    Returns
    -------
    float
        The crossing time, ``t[0]`` if already crossed, ``nan`` if never.

    Examples
    --------
    >>> first_crossing([0.0, 1.0, 2.0], [0.0, 1.0, 3.0], 2.0)
    1.5
    """
    t = np.asarray(t, dtype=float)
    y = np.asarray(y, dtype=float)
    hit = y >= level if above else y <= level
    idx = np.flatnonzero(hit)
    if idx.size == 0:
        return math.nan
    i = int(idx[0])
    if i == 0:
        return float(t[0])
    y0, y1 = y[i - 1], y[i]
    frac = (level - y0) / (y1 - y0)
    return float(t[i - 1] + frac * (t[i] - t[i - 1]))


def _moving_average(y: np.ndarray, window: int) -> np.ndarray:
    """Centred moving average; the window shrinks symmetrically at the ends."""
    n = y.shape[0]
    h = max(0, window // 2)
    if h == 0 or n == 0:
        return y.copy()
    c = np.concatenate([[0.0], np.cumsum(y)])
    i = np.arange(n)
    half = np.minimum(h, np.minimum(i, n - 1 - i))
    lo, hi = i - half, i + half + 1
    return (c[hi] - c[lo]) / (hi - lo)


@dataclass(frozen=True)
class SGDTrajectory:
    """A recorded online-SGD run.

    Attributes
    ----------
    config : SGDConfig
        The settings that produced it.
    t : numpy.ndarray, shape (n,)
        Global time ``eta * steps`` of each record (Stage I included).
    stage : numpy.ndarray of int, shape (n,)
        1 for Stage-I records (``"layerwise"`` only), else 2.
    params : numpy.ndarray, shape (n, 6)
        Columns ``(p1, w_v1, p, w_v2, w_k, w_q)``; ``p1 = inf`` in ``"stage2"``
        mode.  In Stage I the layer-2 columns hold their (not yet trained)
        initial values.
    loss_g4, loss_ih : numpy.ndarray, shape (n,)
        Partial losses on the training batch of that step (before the update).
        In Stage I, ``loss_g4`` is the Stage-I objective and ``loss_ih`` the
        constant ``mean (f2*)^2 / 2`` (induction head output frozen at 0).
    expected_loss_g4 : numpy.ndarray, shape (n,)
        The exact expectation of ``L_G4`` at the recorded parameters (head 1 is
        linear in the Gaussian tokens, so it has a closed form for every mode).
    eval_loss_g4, eval_loss_ih : numpy.ndarray or None
        The same as ``loss_g4``, ``loss_ih`` on the fixed evaluation batch
        (``None`` if ``eval_batch == 0``).
    t_stage2 : float
        Global time at which Stage II starts (``stage1_time`` or 0).
    """

    config: SGDConfig
    t: np.ndarray
    stage: np.ndarray
    params: np.ndarray
    loss_g4: np.ndarray
    loss_ih: np.ndarray
    expected_loss_g4: np.ndarray
    eval_loss_g4: np.ndarray | None
    eval_loss_ih: np.ndarray | None
    t_stage2: float
    names: ClassVar[tuple[str, ...]] = TWO_LAYER_NAMES

    @property
    def w_kq(self) -> np.ndarray:
        """``w_k * w_q`` at each record."""
        return self.params[:, 4] * self.params[:, 5]

    def column(self, name: str) -> np.ndarray:
        """One parameter column by name (``"p1", "w_v1", "p", "w_v2", "w_k", "w_q", "w_kq"``)."""
        _check_choice("name", name, self.names + ("w_kq",))
        return self.w_kq if name == "w_kq" else self.params[:, self.names.index(name)]

    def reduced_state(self) -> tuple[np.ndarray, np.ndarray]:
        """Stage-II records as ``(t, state)`` with state columns ``(w_v1, p, w_v2, w_kq)``.

        Time is measured from the start of Stage II, matching the reduced ODE.
        """
        m = self.stage == 2
        state = np.column_stack([self.params[m, 1], self.params[m, 2], self.params[m, 3],
                                 self.w_kq[m]])
        return self.t[m] - self.t_stage2, state

    def phases(self, *, loss_source: str = "expected", smooth: int = 5) -> dict[str, float]:
        """Phase times of Stage II, measured from its start (spec section 6).

        ``T_I``: first ``t`` with ``L_G4 <= 1%`` of its Stage-II initial value.
        ``T_II``, ``T_em``, ``T_III``: first ``t`` with ``w_kq >= 0.1, 0.5, 0.9 w*``
        (``w_kq`` is a parameter, so these need no loss estimate).  Crossings are
        linearly interpolated between records; ``nan`` if not reached.

        Parameters
        ----------
        loss_source : {"expected", "eval", "batch"}
            The ``L_G4`` curve for ``T_I``: the exact expectation (default, no
            sampling noise), the fixed evaluation batch, or the training-batch
            estimates smoothed by a centred moving average over ``smooth`` records.
        smooth : int
            Window (records) of the moving average for ``loss_source="batch"``.

        Returns
        -------
        dict
            ``{"T_I", "T_II", "T_em", "T_III"}`` as floats.

        Examples
        --------
        >>> cfg = SGDConfig(L=6, alpha=0.5, wstar=0.3, sigma=0.1, eta=0.5, t_max=5.0, batch=8)
        >>> sorted(simulate_sgd(cfg).phases())
        ['T_I', 'T_II', 'T_III', 'T_em']
        """
        _check_choice("loss_source", loss_source, ("expected", "eval", "batch"))
        m = self.stage == 2
        t = self.t[m] - self.t_stage2
        if loss_source == "expected":
            g4 = self.expected_loss_g4[m]
        elif loss_source == "eval":
            if self.eval_loss_g4 is None:
                raise ValueError("loss_source='eval' is invalid: the run has eval_batch=0")
            g4 = self.eval_loss_g4[m]
        else:
            g4 = _moving_average(self.loss_g4[m], _check_int("smooth", smooth, 1))
        wkq = self.w_kq[m]
        ws = self.config.wstar
        sign = 1.0 if ws >= 0 else -1.0
        return {
            "T_I": first_crossing(t, g4, 0.01 * g4[0], above=False),
            "T_II": first_crossing(t, sign * wkq, 0.1 * abs(ws)),
            "T_em": first_crossing(t, sign * wkq, 0.5 * abs(ws)),
            "T_III": first_crossing(t, sign * wkq, 0.9 * abs(ws)),
        }


def _divergence(cfg: SGDConfig, step: int, t: float, theta: np.ndarray) -> FloatingPointError:
    return FloatingPointError(
        f"SGD diverged at step {step} (t={t:.6g}, attention={cfg.attention!r}, "
        f"eta={cfg.eta}, batch={cfg.batch}): non-finite loss or gradient at "
        f"theta={theta.tolist()} (order {TWO_LAYER_NAMES}); for 'linear' attention the "
        f"expected loss only exists for |2 w_k w_q| < 1"
    )


def simulate_sgd(config: SGDConfig) -> SGDTrajectory:
    """Run online SGD on the real attention model.

    Each step draws ``config.batch`` fresh sequences from a PCG64 generator
    seeded with ``config.seed``, computes the exact batch-mean gradient and
    updates ``theta <- theta - eta * grad``.  The run is a deterministic
    function of ``config``.

    Parameters
    ----------
    config : SGDConfig
        Model, protocol and numerical settings.

    Returns
    -------
    SGDTrajectory

    Raises
    ------
    FloatingPointError
        If the loss or gradient becomes non-finite (e.g. ``|2 w_k w_q| >= 1``
        under ``"linear"`` attention); the message gives the step and parameters.

    Examples
    --------
    >>> cfg = SGDConfig(L=8, alpha=0.5, wstar=0.3, sigma=0.1, eta=0.5, t_max=10.0,
    ...                 batch=32, record_every=5, seed=3)
    >>> traj = simulate_sgd(cfg)
    >>> float(traj.t[-1]), traj.params.shape
    (10.0, (5, 6))
    """
    cfg = config
    if not isinstance(cfg, SGDConfig):
        raise TypeError(f"config must be an SGDConfig, got {type(cfg).__name__}")
    L, B = cfg.L, cfg.batch
    train_ss, eval_ss = np.random.SeedSequence(cfg.seed).spawn(2)
    rng = np.random.Generator(np.random.PCG64(train_ss))
    xt = np.zeros((L + 1, B))  # reused every step: row 0 stays x_0 = 0
    work = (np.empty((L - 1, B)), np.empty((L - 1, B))) if cfg.mode != "stage2" else None
    xe = work_e = None
    if cfg.eval_batch > 0:
        xe = np.zeros((L + 1, cfg.eval_batch))
        np.random.Generator(np.random.PCG64(eval_ss)).standard_normal(out=xe[1:])
        if cfg.mode != "stage2":
            work_e = (np.empty((L - 1, cfg.eval_batch)), np.empty((L - 1, cfg.eval_batch)))

    s = cfg.sigma
    p1 = math.inf if cfg.mode == "stage2" else cfg.p1_init
    theta = np.array([p1, s, 0.0, s, s, s])  # (p1, w_v1, p, w_v2, w_k, w_q)
    rec_t, rec_stage, rec_par, rec_l, rec_e = [], [], [], [], []

    def evaluate(stage: int, x: np.ndarray, wk, record: bool = True) -> np.ndarray:
        if stage == 1:
            tot = _stage1_sums(theta[0], x, cfg.alpha, cfg.wstar, cfg.attention, record)
            out = np.zeros(8)
            out[:2] = tot[:2]
            out[2] = tot[2]
        elif math.isinf(theta[0]):
            tot, _ = _sums(theta[1:], x, cfg.alpha, cfg.wstar, cfg.attention)
            out = np.concatenate([tot[:2], [0.0], tot[2:]])
        else:
            out, _ = _sums(theta, x, cfg.alpha, cfg.wstar, cfg.attention, work=wk)
        return out / x.shape[1]

    def run_stage(stage: int, n_steps: int, t0: float, step0: int) -> None:
        nonlocal theta
        if stage == 1:
            active = np.array([1.0, 0, 0, 0, 0, 0])
        elif cfg.mode == "joint":
            active = np.ones(6)
        else:
            active = np.array([0.0, 1, 1, 1, 1, 1])
        for n in range(n_steps + 1):
            t = t0 + cfg.eta * n
            last = n == n_steps
            record = n % cfg.record_every == 0 or last
            rng.standard_normal(out=xt[1:])
            out = evaluate(stage, xt, work, record)
            if not np.all(np.isfinite(out)):
                raise _divergence(cfg, step0 + n, t, theta)
            if record:
                rec_t.append(t)
                rec_stage.append(stage)
                rec_par.append(theta.copy())
                rec_l.append((out[0], out[1], _expected_loss_g4(theta, L, cfg.alpha, stage)))
                if xe is not None:
                    rec_e.append(evaluate(stage, xe, work_e)[:2])
            if last:
                break
            theta = theta - cfg.eta * active * out[2:]

    with np.errstate(over="ignore", invalid="ignore"):
        t0 = 0.0
        if cfg.n_steps_stage1 > 0:
            run_stage(1, cfg.n_steps_stage1, 0.0, 0)
            t0 = cfg.eta * cfg.n_steps_stage1
        run_stage(2, cfg.n_steps, t0, cfg.n_steps_stage1)

    # In layerwise mode the Stage-I end point is recorded twice (end of I, start of
    # II) with different stage labels and losses.
    losses = np.array(rec_l)
    ev = np.array(rec_e) if rec_e else None
    return SGDTrajectory(
        config=cfg,
        t=np.array(rec_t),
        stage=np.array(rec_stage, dtype=int),
        params=np.array(rec_par),
        loss_g4=losses[:, 0],
        loss_ih=losses[:, 1],
        expected_loss_g4=losses[:, 2],
        eval_loss_g4=None if ev is None else ev[:, 0],
        eval_loss_ih=None if ev is None else ev[:, 1],
        t_stage2=t0,
    )
