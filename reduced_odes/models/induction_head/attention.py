"""The real two-layer attention model: losses and exact gradients, by hand-written backprop.

The ground truth the reduced ODEs are checked against (spec sections 1-4): per-batch
losses and their exact gradients, vectorised over batch and positions, and Monte-Carlo
expectations with standard errors.  :mod:`reduced_odes.models.induction_head.sgd` trains
the model with them.

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
from dataclasses import dataclass

import numpy as np

from reduced_odes.author import ParameterError, choice, integer, interval

from .params import CLOSURE_WSTAR_LIMITS

__all__ = [
    "ATTENTIONS",
    "MCEstimate",
    "MODES",
    "STAGE2_NAMES",
    "TWO_LAYER_NAMES",
    "loss_and_grad",
    "monte_carlo_loss",
    "stage1_loss_and_grad",
]

ATTENTIONS = ("exact", "linear", "meanfield")
MODES = ("stage2", "layerwise", "joint")
STAGE2_NAMES = ("w_v1", "p", "w_v2", "w_k", "w_q")
TWO_LAYER_NAMES = ("p1",) + STAGE2_NAMES


# --------------------------------------------------------------------------- #
# Input validation
# --------------------------------------------------------------------------- #
def _check_real(name: str, value, lo=-math.inf, hi=math.inf, *, lo_open=True,
                hi_open=True) -> float:
    closed = ("" if lo_open else "lo") + ("" if hi_open else "hi")
    return interval(lo, hi, closed=closed).check(name, value)


def _check_int(name: str, value, lo: int) -> int:
    if isinstance(value, float):  # an SGD count given as 2.0 is a slip, not a count
        raise ParameterError(f"{name}={value!r} must be an integer >= {lo}")
    return integer(lo).check(name, value)


def _check_wstar(wstar, attention: str) -> float:
    """w* must lie where the target's second moment is finite (spec section 5)."""
    w = _check_real("wstar", wstar)
    limit = CLOSURE_WSTAR_LIMITS.get(attention)  # the closure domains; "exact" has none
    if limit is not None and not abs(w) < limit:
        raise ParameterError(f"wstar={wstar!r} is invalid: attention {attention!r} needs "
                         f"|wstar| < {limit:.6g}")
    return w


def _check_model(L, alpha, wstar, attention) -> tuple[int, float, float, str]:
    L = _check_int("L", L, 4)
    alpha = _check_real("alpha", alpha, 0.0, 1.0)
    attention = choice(*ATTENTIONS).check("attention", attention)
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
