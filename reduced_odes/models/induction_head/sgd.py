"""Monte-Carlo online SGD on the real two-layer attention model (spec sections 1-4).

This module is the ground truth the reduced ODEs are checked against.  It trains
the actual model, not a reduction: every step draws a fresh batch of Gaussian
sequences and applies the exact batch-mean gradient of
:mod:`reduced_odes.models.induction_head.attention`.  Time is ``t = eta * steps``; runs are
deterministic given a seed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from reduced_odes.author import choice, first_crossing

from .attention import (
    ATTENTIONS,
    MODES,
    TWO_LAYER_NAMES,
    MCEstimate,
    _check_int,
    _check_model,
    _check_real,
    _expected_loss_g4,
    _stage1_sums,
    _sums,
    loss_and_grad,
    monte_carlo_loss,
    stage1_loss_and_grad,
)
from .params import PhaseThresholds

__all__ = [
    "ATTENTIONS",
    "MODES",
    "MCEstimate",
    "SGDConfig",
    "SGDTrajectory",
    "loss_and_grad",
    "monte_carlo_loss",
    "simulate_sgd",
    "stage1_loss_and_grad",
]

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
        choice(*MODES).check("mode", self.mode)
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
        choice(*self.names + ("w_kq",)).check("name", name)
        return self.w_kq if name == "w_kq" else self.params[:, self.names.index(name)]

    def reduced_state(self) -> tuple[np.ndarray, np.ndarray]:
        """Stage-II records as ``(t, state)`` with state columns ``(w_v1, p, w_v2, w_kq)``.

        Time is measured from the start of Stage II, matching the reduced ODE.
        """
        m = self.stage == 2
        state = np.column_stack([self.params[m, 1], self.params[m, 2], self.params[m, 3],
                                 self.w_kq[m]])
        return self.t[m] - self.t_stage2, state

    def phases(self, *, loss_source: str = "expected", smooth: int = 5,
               thresholds: PhaseThresholds | None = None) -> dict[str, float]:
        """Phase times of Stage II, measured from its start (spec section 6).

        ``T_I``: first ``t`` with ``L_G4 <= four_gram`` times its Stage-II initial value.
        ``T_II``, ``T_em``, ``T_III``: first ``t`` with ``w_kq >= onset, emergence,
        converged`` times ``w*`` (the fractions of ``thresholds``, default
        :class:`PhaseThresholds`: 0.01; 0.1, 0.5, 0.9)
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
        thresholds : PhaseThresholds, optional
            The phase definitions; default those of the reduced flow.

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
        choice("expected", "eval", "batch").check("loss_source", loss_source)
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
        th = thresholds or PhaseThresholds()  # the same definitions as the reduced flow's
        return {
            "T_I": first_crossing(t, g4, th.four_gram * g4[0], direction=-1),
            "T_II": first_crossing(t, sign * wkq, th.onset * abs(ws)),
            "T_em": first_crossing(t, sign * wkq, th.emergence * abs(ws)),
            "T_III": first_crossing(t, sign * wkq, th.converged * abs(ws)),
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
