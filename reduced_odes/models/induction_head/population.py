"""Deterministic population flow of exact-softmax training, from sample averages.

Under exact softmax the induction-head loss has no closed form, but it depends
on the parameters only through four averages of the softmax readout
``R(w) = sum_{s=2}^{L-1} softmax_s(w x_L x_{s-1}) x_s``, each a function of
``w = w_kq`` alone::

    M2 = E[R(w)^2]   M1 = E[R(w*) R(w)]   D1 = E[R(w*) R'(w)]   D2 = E[R(w) R'(w)]

    L_IH = 1/2 [(1-alpha)^2 M2(w*) - 2 (1-alpha) w_v2 M1(w) + w_v2^2 M2(w)]

The estimator fixes a sample of Gaussian sequences (antithetic in ``x_L``),
tabulates the four averages at Chebyshev nodes in ``w``, subtracts the
``meanfield`` closure's averages on the same sample (their expectations are
derived symbolically) as a control variate, and integrates the resulting
deterministic flow of ``(w_v2, ln w_kq)``.  Independent samples give error bars.

The generic half (:class:`PopulationModel`, :func:`population_flow`) serves any
model whose loss is a known function of a few intractable one-dimensional
averages; :class:`InductionHeadPopulation` is the induction head's.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Protocol

import numpy as np
from numpy.polynomial import chebyshev as cheb

__all__ = ["InductionHeadPopulation", "PopulationModel", "closure_averages", "population_flow",
           "population_sample", "population_settings", "summarize_samples"]

QUANTITIES = ("M2", "M1", "D1", "D2")
#: A closure's sample average is declared consistent with its closed form when
#: every node's z-score is below this: ~1300 correlated z-scores per run, and
#: 5 sigma is exceeded by a Gaussian with probability 6e-7.
Z_LIMIT = 5.0


# --------------------------------------------------------------------------- #
# The generic protocol
# --------------------------------------------------------------------------- #
class PopulationModel(Protocol):
    """What a model with an intractable expectation declares to get a population flow.

    The loss must depend on the state through a few averages ``E[q(X; w)]`` of
    one scalar coupling ``w``; the model supplies them per sample, and a
    control variate with a known expectation.  :func:`population_flow` does
    the rest: independent samples, Chebyshev tables, control variates, error
    bars, the interpolation error and the closure check.

    Attributes
    ----------
    quantities : tuple of str
        Names of the averages, in the order of the arrays below.
    controls : tuple of str
        Names of the closures whose averages are computed on the same sample;
        the first is the control variate, every one is checked against its
        closed form.
    interval : tuple of float
        The range of ``w`` to tabulate.
    """

    quantities: tuple[str, ...]
    controls: tuple[str, ...]
    interval: tuple[float, float]

    def sample(self, w: np.ndarray, n: int, rng: np.random.Generator
               ) -> dict[str, np.ndarray]:
        """Per-draw values, ``{"target" or control: array (n, len(quantities), len(w))}``."""

    def closed_forms(self, w: np.ndarray) -> dict[str, np.ndarray]:
        """Expectations of each control, ``{control: array (len(quantities), len(w))}``."""

    def flow(self, averages: Callable[[float], np.ndarray]) -> dict[str, float]:
        """Integrate the flow driven by ``averages(w) -> array (len(quantities),)``."""


class _Moments:
    """Running sums of per-draw values: means, variances and covariances with the target."""

    def __init__(self):
        self.n, self.names, self.sum, self.sq, self.cross = 0, (), 0.0, 0.0, 0.0

    def add(self, draws: dict[str, np.ndarray]) -> None:
        self.names = tuple(draws)
        stack = np.stack(list(draws.values()))  # (names, n, quantities, points)
        self.n += stack.shape[1]
        self.sum = self.sum + stack.sum(1)
        self.sq = self.sq + (stack * stack).sum(1)
        self.cross = self.cross + (stack * draws["target"]).sum(1)

    def mean(self, name: str) -> np.ndarray:
        return self.sum[self.names.index(name)] / self.n

    def _spread(self, name: str) -> np.ndarray:
        """Variance of ``name`` with the normalisation ``1/n`` (that of :meth:`controlled`)."""
        return self.sq[self.names.index(name)] / self.n - self.mean(name) ** 2

    def var(self, name: str) -> np.ndarray:
        return self._spread(name) * self.n / (self.n - 1)

    def controlled(self, control: str, expectation: np.ndarray) -> np.ndarray:
        """Target mean minus ``beta (control mean - expectation)``, ``beta`` the optimal slope.

        Covariance and variance carry the same normalisation, so ``beta`` is
        exactly 1 when the target is the control.
        """
        i = self.names.index(control)
        cov = self.cross[i] / self.n - self.mean("target") * self.mean(control)
        var = self._spread(control)
        beta = cov / np.where(var > 0, var, 1.0)
        return self.mean("target") - beta * (self.mean(control) - expectation)

    def z_scores(self, name: str, expectation: np.ndarray) -> np.ndarray:
        """``(mean - expectation) / standard error`` of a control's averages."""
        se = np.sqrt(np.maximum(self.var(name), 0) / self.n)
        return (self.mean(name) - expectation) / np.where(se > 0, se, np.inf)


def chebyshev_nodes(n: int, lo: float, hi: float) -> np.ndarray:
    """The ``n`` Chebyshev points of the first kind on ``[lo, hi]``, increasing.

    Examples
    --------
    >>> np.round(chebyshev_nodes(3, 0.0, 2.0), 6).tolist()
    [0.133975, 1.0, 1.866025]
    """
    x = np.cos(np.pi * (np.arange(n) + 0.5) / n)[::-1]
    return lo + (hi - lo) * (x + 1) / 2


@dataclass
class _Table:
    """One independent sample's interpolated averages and its diagnostics."""

    coefficients: np.ndarray  # (n_quantities, n_nodes) Chebyshev coefficients
    interval: tuple[float, float]
    interpolation_error: float
    max_z: dict[str, float] = field(default_factory=dict)

    def __call__(self, w: float) -> np.ndarray:
        x = (2 * w - sum(self.interval)) / (self.interval[1] - self.interval[0])
        return cheb.chebval(x, self.coefficients.T)


def _points(model: PopulationModel, nodes: int, checks: int) -> tuple[np.ndarray, int]:
    """The Chebyshev nodes, then ``checks`` points halfway between neighbouring nodes.

    Halfway between nodes is where a Chebyshev interpolant's error is largest.
    """
    at_nodes = chebyshev_nodes(nodes, *model.interval)
    between = 0.5 * (at_nodes[:-1] + at_nodes[1:])
    picked = between[np.linspace(0, nodes - 2, checks).round().astype(int)]
    return np.concatenate([at_nodes, picked]), nodes


def _table(model: PopulationModel, w: np.ndarray, nodes: int, moments: _Moments) -> _Table:
    """Interpolate one sample's controlled averages; measure the error between nodes."""
    lo, hi = model.interval
    exact = model.closed_forms(w)
    values = moments.controlled(model.controls[0], exact[model.controls[0]])
    x = 2 * (w[:nodes] - lo) / (hi - lo) - 1
    table = _Table(cheb.chebfit(x, values[:, :nodes].T, nodes - 1).T, (lo, hi), 0.0)
    interpolated = np.array([table(wc) for wc in w[nodes:]]).T
    scale = np.abs(values[:, :nodes]).max(axis=1, keepdims=True)
    table.interpolation_error = float(np.max(np.abs(interpolated - values[:, nodes:]) / scale))
    table.max_z = {c: float(np.max(np.abs(moments.z_scores(c, exact[c]))))
                   for c in model.controls}
    return table


def population_sample(model: PopulationModel, k: int, *, draws: int, nodes: int = 32,
                      block: int = 500, seed: int = 0, checks: int = 4) -> dict[str, Any]:
    """Independent sample ``k``: its flow's phase times and its table's diagnostics.

    The unit of parallel work (and of a resumable grid): sample ``k`` draws
    from ``SeedSequence((seed, k))``, so its result does not depend on where it runs.

    Parameters
    ----------
    model : PopulationModel
    k : int
        Index of the sample.
    draws : int
        Draws (antithetic pairs count once).
    nodes : int
        Chebyshev nodes of the table.
    block : int
        Draws per vectorised block (memory).
    seed : int
        Root seed.
    checks : int
        Off-node points at which the interpolation error is measured.

    Returns
    -------
    dict
        ``phases`` (``model.flow``), ``interpolation_error`` (relative to each
        average's scale) and ``max_z`` (largest ``|z|`` of each control's
        averages against their closed forms).

    Examples
    --------
    >>> one = population_sample(InductionHeadPopulation(L=8, wstar=0.3, alpha=0.5,
    ...                         sigmas=(0.3,)), 0, draws=200, nodes=12)
    >>> sorted(one)
    ['interpolation_error', 'max_z', 'phases']
    """
    w, nodes = _points(model, nodes, checks)
    moments, rng = _Moments(), np.random.default_rng(np.random.SeedSequence((seed, k)))
    for start in range(0, draws, block):
        moments.add(model.sample(w, min(block, draws - start), rng))
    table = _table(model, w, nodes, moments)
    return {"phases": model.flow(table), "interpolation_error": table.interpolation_error,
            "max_z": table.max_z}


def summarize_samples(samples: Sequence[dict[str, Any]], *,
                      confidence: float = 0.95) -> dict[str, Any]:
    """Error bars over independent samples (:func:`population_sample` results, possibly
    read back from JSON, where a phase not reached is ``None``).

    Returns
    -------
    dict
        ``phases`` (per phase: :func:`~reduced_odes.author.t_interval` over samples plus
        ``se``), ``per_sample``, ``interpolation_error`` (largest over samples)
        and ``closure_check`` (largest ``|z|`` per control and ``passed``).

    Examples
    --------
    >>> s = summarize_samples([{"phases": {"T": t}, "interpolation_error": 0.0,
    ...                         "max_z": {"c": 1.0}} for t in (1.0, 3.0)])
    >>> s["phases"]["T"]["mean"], s["phases"]["T"]["se"], s["closure_check"]["passed"]
    (2.0, 1.0, True)
    """
    from reduced_odes.author import t_interval

    runs = [{k: math.nan if v is None else v for k, v in s["phases"].items()} for s in samples]
    phases = {}
    for name in runs[0]:
        interval = t_interval([r[name] for r in runs], confidence)
        interval["se"] = interval["sd"] / math.sqrt(interval["n"]) if interval["n"] else math.nan
        phases[name] = interval
    worst_z = {c: max(s["max_z"][c] for s in samples) for c in samples[0]["max_z"]}
    return {
        "phases": phases,
        "per_sample": runs,
        "interpolation_error": max(s["interpolation_error"] for s in samples),
        "closure_check": {"max_abs_z": worst_z, "z_limit": Z_LIMIT,
                          "passed": all(z < Z_LIMIT for z in worst_z.values())},
    }


def population_settings(model: PopulationModel, samples: int, *, confidence: float = 0.95,
                        **options) -> dict[str, Any]:
    """The estimator's settings as recorded with its results.

    Examples
    --------
    >>> model = InductionHeadPopulation(L=8, wstar=0.3, alpha=0.5, sigmas=(0.3,))
    >>> population_settings(model, 2, draws=400)["control"]
    'meanfield'
    """
    return {"samples": samples, **options, "antithetic": "x_L", "control": model.controls[0],
            "confidence": confidence}


def population_flow(model: PopulationModel, *, samples: int = 8, draws: int = 20000,
                    nodes: int = 32, block: int = 500, seed: int = 0, checks: int = 4,
                    executor=None, confidence: float = 0.95,
                    progress: bool = True) -> dict[str, Any]:
    """Phase times of ``model``'s population flow, with error bars from independent samples.

    Parameters
    ----------
    model : PopulationModel
        The sample averages, their control and the flow.
    samples : int
        Independent samples (``>= 2``); each gives its own deterministic flow.
    draws, nodes, block, seed, checks :
        See :func:`population_sample`.
    executor : concurrent.futures.Executor, optional
        Runs the samples, one task each; the result does not depend on it.
    confidence : float
        Coverage of the Student-t intervals.
    progress : bool
        Progress line with ETA on stderr for runs longer than a few seconds.

    Returns
    -------
    dict
        :func:`summarize_samples`, plus ``settings`` and ``wall_time_s``.

    Examples
    --------
    >>> est = population_flow(InductionHeadPopulation(L=8, wstar=0.3, alpha=0.5,
    ...                       sigmas=(0.3,)), samples=2, draws=400, nodes=12, progress=False)
    >>> sorted(est["phases"])[:3]
    ['0.3/T_II', '0.3/T_III', '0.3/T_em']
    """
    from reduced_odes.author import Progress

    if samples < 2:
        raise ValueError(f"samples={samples!r} is invalid: error bars need at least 2")
    start = time.perf_counter()
    options = {"draws": draws, "nodes": nodes, "block": block, "seed": seed, "checks": checks}
    bar = Progress(f"population L={getattr(model, 'L', '?')}", samples, show=progress,
                   quiet=3.0)
    if executor is None:
        results = (population_sample(model, k, **options) for k in range(samples))
    else:
        futures = [executor.submit(population_sample, model, k, **options)
                   for k in range(samples)]
        results = (future.result() for future in futures)
    done = []
    for result in results:
        done.append(result)
        bar.tick()
    bar.close()
    return {**summarize_samples(done, confidence=confidence),
            "settings": population_settings(model, samples, confidence=confidence, **options),
            "wall_time_s": time.perf_counter() - start}


# --------------------------------------------------------------------------- #
# The induction head
# --------------------------------------------------------------------------- #
@lru_cache(maxsize=4)
def closure_averages(closure: str) -> Callable[..., np.ndarray]:
    """The four averages of a closure, from its derived ``L_IH``, as ``f(w, wstar, L)``.

    ``L_IH = 1/2 [c0 - 2 (1-alpha) w_v2 M1 + w_v2^2 M2]`` is read off the
    derivation; ``D1 = dM1/dw`` and ``D2 = dM2/dw / 2``.

    Examples
    --------
    >>> f = closure_averages("meanfield")
    >>> m2, m1, d1, d2 = f(np.array([0.0]), 0.3, 10)
    >>> float(m2[0]), float(m1[0]) == 1 / 8
    (0.125, True)
    """
    from reduced_odes.author import cached_symbolic

    def derive() -> dict:
        import sympy as sp

        from .declaration import ALPHA, W_KQ, W_V2
        from .losses import derive_losses

        loss = sp.expand(derive_losses(closure).induction)
        m2 = sp.simplify(2 * loss.coeff(W_V2, 2))
        m1 = sp.simplify(-loss.coeff(W_V2, 1) / (1 - ALPHA))
        assert not m1.has(ALPHA) and not m2.has(ALPHA), "L_IH is not of the assumed form"
        return {"M2": m2, "M1": m1, "D1": sp.diff(m1, W_KQ), "D2": sp.diff(m2, W_KQ) / 2}

    import sympy as sp

    from reduced_odes.author import SEQ_LEN

    from .declaration import W_KQ, WSTAR

    exprs = cached_symbolic("induction_head", closure, "population-averages", derive)
    fn = sp.lambdify((W_KQ, WSTAR, SEQ_LEN), [exprs[q] for q in QUANTITIES], "numpy")

    def averages(w: np.ndarray, wstar: float, L: int) -> np.ndarray:
        return np.array([np.broadcast_to(v, np.shape(w)) for v in fn(w, wstar, L)], float)

    return averages


def _rising(level: float) -> Callable:
    """A ``solve_ivp`` event: ``ln w_kq`` rises through ``level``."""
    def event(t, y):
        return y[1] - level
    event.direction = 1
    return event


def _readouts(w: np.ndarray, coupling: np.ndarray, values: np.ndarray, lead: np.ndarray,
              L: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``(R, R')`` per draw at ``w`` then ``-w``, for the exact softmax and both closures.

    ``coupling`` is ``x_L x_{s-1}`` and ``values`` ``x_s``, shape ``(n, L-2)``;
    ``lead`` is ``x_L``; ``w >= 0``.  Results have shape ``(n, 2 len(w))``.
    """
    weights = np.stack([np.ones_like(values), values, coupling * values, coupling], -1)
    e = np.exp(coupling[:, None, :] * w[None, :, None])  # |w c| stays far from overflow
    e = np.concatenate([e, np.reciprocal(e)], 1)  # exp(-w c) at the price of a division
    # One batched product reads e once: sums over positions of e, e x, e c x and e c.
    s0, s1, s2, s3 = np.moveaxis(np.matmul(e, weights), -1, 0).transpose(0, 2, 1)
    signed = np.concatenate([w, -w])[:, None]
    exact = (s1 / s0, s2 / s0 - s1 * s3 / s0**2)
    linear = (s1 / L, s2 / L)
    gauge = np.exp(-(signed * lead[None]) ** 2 / 2) / (L - 2)
    meanfield = (gauge * s1, gauge * (s2 - signed * lead[None] ** 2 * s1))
    return {name: (r.T, dr.T) for name, (r, dr) in
            (("exact", exact), ("linear", linear), ("meanfield", meanfield))}


@dataclass
class InductionHeadPopulation:
    """The induction head as a :class:`PopulationModel`.

    Parameters
    ----------
    L, wstar, alpha : model parameters (``ModelParams``).
    sigmas : sequence of float
        Initialisation scales; the tables do not depend on them, so one
        sample serves every ``sigma`` (phase names are prefixed ``"<sigma>/"``).
    attention : {"exact", "linear", "meanfield"}
        The attention whose flow is estimated; a closure gives a validation
        run whose answer is that closure's ODE.
    thresholds : PhaseThresholds, optional

    Examples
    --------
    >>> model = InductionHeadPopulation(L=8, wstar=0.3, alpha=0.5, sigmas=(0.1,))
    >>> model.interval
    (0.0, 0.33)
    """

    L: int
    wstar: float
    alpha: float
    sigmas: Sequence[float]
    attention: str = "exact"
    thresholds: Any = None
    quantities: tuple[str, ...] = QUANTITIES
    controls: tuple[str, ...] = ("meanfield", "linear")

    def __post_init__(self):
        from .params import PhaseThresholds

        self.thresholds = self.thresholds or PhaseThresholds()
        if self.attention not in ("exact", "linear", "meanfield"):
            raise ValueError(f"attention={self.attention!r}; allowed: exact, linear, meanfield")
        # The flow rises monotonically from w_kq(0) = sigma^2 towards w*; 10% of
        # headroom keeps the last phase and its settling inside the table.
        top = max([self.wstar, *(s**2 for s in self.sigmas)])
        self.interval = (0.0, round(1.1 * top, 12))

    def sample(self, w: np.ndarray, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        x = rng.standard_normal((n, self.L))
        lead, coupling = x[:, -1], x[:, -1:] * x[:, :self.L - 2]
        values = x[:, 1:self.L - 1]
        grid = np.concatenate([w, [self.wstar]])
        out = {}
        k = len(w)
        for name, (r, dr) in _readouts(grid, coupling, values, lead, self.L).items():
            # Negating x_L is negating w: the antithetic partner reads R(-w), -R'(-w).
            rp, rm, dp, dm = r[:, :k], r[:, k + 1:-1], dr[:, :k], -dr[:, k + 1:-1]
            tp, tm = r[:, k:k + 1], r[:, -1:]
            out[name] = 0.5 * np.stack([rp**2 + rm**2, tp * rp + tm * rm,
                                        tp * dp + tm * dm, rp * dp + rm * dm], axis=1)
        return {"target": out[self.attention], **{c: out[c] for c in self.controls}}

    def closed_forms(self, w: np.ndarray) -> dict[str, np.ndarray]:
        return {c: closure_averages(c)(w, self.wstar, self.L) for c in self.controls}

    def flow(self, averages: Callable[[float], np.ndarray]) -> dict[str, float]:
        """Phase times of the ``(w_v2, ln w_kq)`` flow for every ``sigma``."""
        out = {}
        for sigma in self.sigmas:
            for name, value in self._phases(averages, sigma).items():
                out[f"{sigma:g}/{name}"] = value
        return out

    def _phases(self, averages: Callable[[float], np.ndarray], sigma: float) -> dict[str, float]:
        from scipy.integrate import solve_ivp

        a, th = self.alpha, self.thresholds
        levels = {"T_II": th.onset, "T_em": th.emergence, "T_III": th.converged}
        u0 = 2 * math.log(sigma)

        def rhs(t, y):
            m2, m1, d1, d2 = averages(math.exp(y[1]))
            return [(1 - a) * m1 - y[0] * m2, 2 * ((1 - a) * y[0] * d1 - y[0] ** 2 * d2)]

        events = [_rising(math.log(fraction * self.wstar)) for fraction in levels.values()]
        events[-1].terminal = True
        # The plateau lasts (1/lambda) ln(w*/sigma^2) with lambda ~ 1/L: 1e4 L ln(...) is ample.
        horizon = 1e4 * self.L * (1 + abs(u0)) / a**2
        sol = solve_ivp(rhs, (0.0, horizon), [sigma, u0], method="DOP853", rtol=1e-10,
                        atol=1e-12, events=events)
        if sol.status != 1:
            raise RuntimeError(f"population flow did not reach T_III: {sol.message}")
        out = {name: (0.0 if u0 >= math.log(fraction * self.wstar) else
                      float(sol.t_events[i][0]) if len(sol.t_events[i]) else math.inf)
               for i, (name, fraction) in enumerate(levels.items())}
        out["window"] = out["T_III"] - out["T_II"]
        return out
