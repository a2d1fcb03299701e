"""The one verb: integrate the reduced induction-head flow from t = 0 to phase IV.

Two drivers produce the same trajectory, one module each (their shared run
record, guards and diagnostics are in ``_driver``, the result objects in
``_trajectory``):

* ``_lsoda``: ``LSODA`` (the default) is stepped directly through SciPy's ``ode`` wrapper of
  ODEPACK's LSODA, one step per call, exactly as ``solve_ivp(method="LSODA")``
  steps it, but without ``solve_ivp``'s per-step bookkeeping: the events are
  tested on each accepted step in a few float operations and the dense output
  is kept as the raw Nordsieck arrays, evaluated vectorised and only where
  needed.  With the fused attention kernels of the generated code this made a
  default run about 3x faster than ``solve_ivp`` with events (benchmarks/bench_solve.py).
* ``_ivp``: ``Radau`` and ``BDF`` go through :func:`scipy.integrate.solve_ivp` with
  terminal events (and so does LSODA if the fast driver is unavailable in the
  installed SciPy).

Evaluations outside the closure's domain (trial states of a large step) return
NaN to the integrator, which then retries a smaller step; should a non-finite
state be accepted anyway, the direct driver restarts from its last accepted
step.  No NaN reaches a trajectory: a run either stays finite and inside the
domain, or stops with a :class:`DomainError` naming the time, state and
violated (or nearest) domain condition.

Phase times are first crossings, bracketed by the accepted steps and refined by
``brentq`` on the dense output (spec section 6).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from ._compile import CompiledSystem, load_system
from ._driver import _root_in_step, _Run, _violated
from ._ivp import _ivp_run
from ._lsoda import _FastPathUnavailable, _lsoda_run
from ._params import ModelParams, ParameterError, PhaseThresholds, SolverConfig, _number
from ._trajectory import STATE_NAMES, DomainError, SolverStats, Trajectory

__all__ = ["STATE_NAMES", "DomainError", "SolverStats", "Trajectory", "solve"]


def _initial_state(params: ModelParams, initial, system: CompiledSystem) -> np.ndarray:
    """``(w_v1, p, w_v2, ln w_kq)`` at t = 0: spec section 4, or ``initial`` if given."""
    if initial is None:
        y0 = np.array([params.sigma, 0.0, params.sigma, params.log_w_kq0])
    else:
        if isinstance(initial, Mapping):
            unknown = sorted(set(initial) - {*STATE_NAMES, "log_w_kq"})
            if unknown or not {"w_v1", "p", "w_v2"} <= set(initial) or (
                    ("w_kq" in initial) == ("log_w_kq" in initial)):
                raise ParameterError(
                    f"initial={dict(initial)!r}: needs keys w_v1, p, w_v2 and one of w_kq, "
                    f"log_w_kq{f' (unknown: {unknown})' if unknown else ''}")
            values = [initial["w_v1"], initial["p"], initial["w_v2"]]
            w_kq = initial.get("w_kq")
            log_w_kq = initial.get("log_w_kq")
        elif isinstance(initial, Sequence) and len(initial) == 4:
            values, w_kq, log_w_kq = list(initial[:3]), initial[3], None
        else:
            raise ParameterError(f"initial={initial!r} must be a mapping or a sequence "
                                 f"(w_v1, p, w_v2, w_kq)")
        numbers = []
        for name, value in zip(("w_v1", "p", "w_v2"), values, strict=True):
            numbers.append(_number(f"initial {name}", value, "a finite number"))
        if log_w_kq is not None:
            numbers.append(_number("initial log_w_kq", log_w_kq, "a finite number"))
        else:
            w = _number("initial w_kq", w_kq, "a finite number > 0 (w_kq = w_k w_q, w_k = w_q)")
            if not w > 0:
                raise ParameterError(f"initial w_kq={w!r} must be > 0 (w_kq = w_k w_q with "
                                     f"w_k = w_q; its flow keeps it > 0)")
            numbers.append(math.log(w))
        y0 = np.array(numbers)
    margins = system.margins(y0, params.alpha, params.wstar, float(params.L))
    if min(margins) <= 0:
        raise ParameterError(
            f"initial state (w_v1, p, w_v2, w_kq) = ({y0[0]:.6g}, {y0[1]:.6g}, {y0[2]:.6g}, "
            f"{math.exp(y0[3]):.6g}) is outside the domain of closure {system.closure!r}: "
            f"{_violated(system, y0, params)}; allowed: every condition "
            f"{', '.join(system.domain_labels)}")
    return y0


def solve(params: ModelParams, closure: str = "linear", solver: SolverConfig | None = None,
          thresholds: PhaseThresholds | None = None, *, initial=None) -> Trajectory:
    """Integrate the Stage-II gradient flow from initialisation to phase IV.

    Parameters
    ----------
    params : ModelParams
        Model parameters and initialisation scale.
    closure : {"linear", "meanfield"}
        Softmax closure.
    solver : SolverConfig, optional
        Method and tolerances (default LSODA, rtol 1e-10, atol 1e-12).  With
        ``t_end=None`` the run continues past emergence until ``w_kq`` is
        within 1e-6 (relative) of ``w_star``, and then as long again; with a
        ``t_end`` it runs exactly to ``t_end``.
    thresholds : PhaseThresholds, optional
        Definitions of the phase times.
    initial : mapping or sequence, optional
        Initial state instead of the spec's ``w_v1 = w_v2 = sigma, p = 0,
        w_kq = sigma**2`` (the initialisation is a configurable convention):
        a sequence ``(w_v1, p, w_v2, w_kq)`` or a mapping with keys ``w_v1,
        p, w_v2`` and ``w_kq`` or ``log_w_kq`` (for values that underflow).
        It must lie inside the closure's domain.

    Returns
    -------
    Trajectory

    Raises
    ------
    ParameterError
        Bad input, naming the parameter, its value and the allowed range.
    DomainError
        The trajectory reached the boundary of the closure's domain (the
        message gives the time, the violated condition and the state).

    Examples
    --------
    >>> traj = solve(ModelParams(L=200, alpha=0.5, wstar=0.3, sigma=1e-4))
    >>> traj.phases["T_I"] < traj.phases["T_II"] < traj.phases["T_em"] < traj.phases["T_III"]
    True
    """
    solver = solver or SolverConfig()
    thresholds = thresholds or PhaseThresholds()
    if not isinstance(params, ModelParams):
        raise ParameterError(f"params={params!r} must be a ModelParams")
    if not isinstance(solver, SolverConfig):
        raise ParameterError(f"solver={solver!r} must be a SolverConfig")
    if not isinstance(thresholds, PhaseThresholds):
        raise ParameterError(f"thresholds={thresholds!r} must be a PhaseThresholds")
    params.check_closure(closure)
    system = load_system(closure)
    if system.margins is None:  # a hand-made system: margins from its observables
        observables = system.observables
        system = replace(system, margins=lambda y, *args: observables(y, *args)[2:])
    y0 = _initial_state(params, initial, system)
    t_horizon = 1e3 * params.L / params.alpha**2
    run = None
    if solver.method == "LSODA":
        try:
            run = _lsoda_run(system, params, closure, solver, y0, t_horizon)
        except _FastPathUnavailable:
            run = None
    if run is None:
        run = _ivp_run(system, params, closure, solver, y0, t_horizon)
    return _assemble(system, params, closure, solver, thresholds, run, y0)


def _assemble(system, params, closure, solver, thresholds, run: _Run, y0) -> Trajectory:
    args = (params.alpha, params.wstar, float(params.L))
    t_end = float(run.steps[-1])
    t = np.concatenate([[0.0], np.geomspace(min(1e-3, t_end / 10), t_end, solver.n_output)])
    y = run.dense(t)
    y[:, 0] = y0
    y[:, -1] = run.y_steps[:, -1]  # the last step exactly, not its interpolant
    observables = system.observables
    losses = np.array([observables(col, *args)[:2] for col in y.T.tolist()])
    state = y.T.copy()
    state[:, 3] = np.exp(y[3])
    phases = _phase_times(system, run, params, thresholds, args)
    stats = SolverStats(solver.method, solver.rtol, solver.atol, nfev=run.nfev, njev=run.njev,
                        nlu=run.nlu, steps=len(run.steps) - 1)
    return Trajectory(params, closure, solver, thresholds, t, state, y[3].copy(),
                      losses[:, 0], losses[:, 1], phases, stats, run.dense, system)


def _phase_times(system, run: _Run, params, thresholds, args) -> dict[str, float]:
    steps, y_steps = run.steps, run.y_steps
    observables = system.observables
    g4_level = thresholds.four_gram * observables(y_steps[:, 0], *args)[0]

    def g4_at_step(i: int) -> float:
        return g4_level - observables(y_steps[:, i], *args)[0]

    # L_G4 is non-increasing along the flow (its (w_v1, p) block is the gradient flow
    # of L_G4 alone), so the first step at or below the level is found by bisection.
    lo, hi = 0, len(steps) - 1
    if g4_at_step(hi) < 0:
        t_four_gram = math.nan
    elif g4_at_step(0) >= 0:
        t_four_gram = float(steps[0])
    else:
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if g4_at_step(mid) >= 0 else (mid, hi)
        t_four_gram = _root_in_step(run.segment(lo),
                                    lambda v: g4_level - observables(v, *args)[0],
                                    float(steps[lo]), float(steps[hi]))
    phases = {"T_I": t_four_gram}
    for name, fraction in (("T_II", thresholds.onset), ("T_em", thresholds.emergence),
                           ("T_III", thresholds.converged)):
        level = math.log(fraction * params.wstar)
        reached = np.flatnonzero(y_steps[3] >= level)
        if reached.size == 0:
            phases[name] = math.nan
        elif reached[0] == 0:
            phases[name] = float(steps[0])
        else:
            i = int(reached[0])
            phases[name] = _root_in_step(run.segment(i - 1), lambda v, lv=level: v[3] - lv,
                                         float(steps[i - 1]), float(steps[i]))
    return phases
