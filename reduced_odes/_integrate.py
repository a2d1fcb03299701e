"""The one verb: integrate the reduced induction-head flow from t = 0 to phase IV.

Two drivers produce the same trajectory:

* ``LSODA`` (the default) is stepped directly through SciPy's ``ode`` wrapper of
  ODEPACK's LSODA, one step per call, exactly as ``solve_ivp(method="LSODA")``
  steps it, but without ``solve_ivp``'s per-step bookkeeping: the events are
  tested on each accepted step in a few float operations and the dense output
  is kept as the raw Nordsieck arrays, evaluated vectorised and only where
  needed.  With the fused attention kernels of the generated code this made a
  default run 3-5x faster than ``solve_ivp`` with events (benchmarks/bench_solve.py).
* ``Radau`` and ``BDF`` go through :func:`scipy.integrate.solve_ivp` with
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
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from ._compile import CompiledSystem, load_system
from ._params import ModelParams, ParameterError, PhaseThresholds, SolverConfig
from ._provenance import versions

__all__ = ["DomainError", "SolverStats", "Trajectory", "solve", "STATE_NAMES"]

STATE_NAMES = ("w_v1", "p", "w_v2", "w_kq")

#: Phase IV is taken as reached once w_kq is within this relative distance of
#: w_star; the run then continues for ``_TAIL_FACTOR`` times the elapsed time so
#: that the exponential decay of L_IH and the algebraic tail t * L_G4 -> 1/4 are
#: both resolved.
_NEAR_FIXED_POINT = 1e-6
_TAIL_FACTOR = 1.0
#: Largest horizon tried before giving up (far beyond any O(L ln(1/sigma)) plateau).
_T_MAX = 1e18
#: Step budget of the direct LSODA driver.  A run to phase IV takes 1e3 to 5e3
#: steps (L up to 1e7, sigma down to 1e-300); only a state pressed against the
#: domain boundary, where the flow is singularly stiff, needs more.
_MAX_STEPS = 100_000
#: Restarts of the direct LSODA driver from its last accepted step, after a step
#: that failed or came out non-finite (trial states outside the domain).
_MAX_RESTARTS = 8
#: Exceptions that evaluating the compiled flow outside its domain can raise
#: (``math.sqrt`` of a negative number, a complex power converted to float, ...).
_EVALUATION_ERRORS = (ValueError, TypeError, OverflowError, ZeroDivisionError)


class DomainError(RuntimeError):
    """A trajectory reached the boundary of its closure's domain."""


@dataclass(frozen=True)
class SolverStats:
    """Cost of one integration, as reported by the integrator."""

    method: str
    rtol: float
    atol: float
    nfev: int
    njev: int
    nlu: int
    steps: int

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Trajectory:
    """A solved trajectory on a log-spaced grid, with its dense output.

    Attributes
    ----------
    t : ndarray, shape (n,)
        Output times: 0, then log-spaced up to the end of the run.
    state : ndarray, shape (n, 4)
        Columns ``w_v1, p, w_v2, w_kq``.
    log_w_kq : ndarray, shape (n,)
        ``ln w_kq``, the integration coordinate (finite even where w_kq underflows).
    loss_g4, loss_ih : ndarray, shape (n,)
        The partial losses along the trajectory.
    phases : dict
        ``T_I, T_II, T_em, T_III`` located by root-finding on the dense output.
    stats : SolverStats
    dense : callable
        ``dense(t)``: state ``(w_v1, p, w_v2, ln w_kq)`` at ``t`` (shape ``(4,)``
        for a scalar, ``(4, m)`` for ``m`` times), like SciPy's ``OdeSolution``;
        ``dense.ts`` are the accepted steps.
    """

    params: ModelParams
    closure: str
    solver: SolverConfig
    thresholds: PhaseThresholds
    t: np.ndarray
    state: np.ndarray
    log_w_kq: np.ndarray
    loss_g4: np.ndarray
    loss_ih: np.ndarray
    phases: dict[str, float]
    stats: SolverStats
    dense: Callable = field(repr=False)
    system: CompiledSystem = field(repr=False)

    def at(self, times) -> np.ndarray:
        """State ``(w_v1, p, w_v2, ln w_kq)`` at arbitrary times from the dense output."""
        return self.dense(times)

    def losses_at(self, times) -> tuple[np.ndarray, np.ndarray]:
        """``(L_G4, L_IH)`` at arbitrary times."""
        states = np.atleast_2d(self.dense(np.atleast_1d(times)).T)
        values = np.array([self.system.observables(y, *self._args)[:2] for y in states])
        return values[:, 0], values[:, 1]

    @property
    def _args(self) -> tuple:
        return (self.params.alpha, self.params.wstar, float(self.params.L))

    @property
    def final(self) -> dict:
        """State and losses at the end of the run."""
        final = dict(zip(STATE_NAMES, (float(v) for v in self.state[-1]), strict=True))
        final.update(t=float(self.t[-1]), log_w_kq=float(self.log_w_kq[-1]),
                     L_G4=float(self.loss_g4[-1]), L_IH=float(self.loss_ih[-1]))
        return final

    def to_dict(self) -> dict:
        """The stable JSON schema of ``reduced-odes solve --json``."""
        return {
            "params": self.params.as_dict(),
            "closure": self.closure,
            "phases": {k: _json_float(v) for k, v in self.phases.items()},
            "final": self.final,
            "solver": {**self.stats.as_dict(), "t_end": float(self.t[-1])},
            "thresholds": self.thresholds.__dict__,
            "versions": versions(),
        }


def _json_float(value: float) -> float | None:
    return None if not math.isfinite(value) else float(value)


# --------------------------------------------------------------------------- #
# Dense output of the direct LSODA driver.
# --------------------------------------------------------------------------- #


class NordsieckSolution:
    """Piecewise-polynomial dense output from LSODA's Nordsieck history arrays.

    Step ``k`` ends at ``ts[k + 1]``; on ``[ts[k], ts[k + 1]]`` the state is
    ``sum_j yh[k, :, j] ((t - ts[k + 1]) / h[k])**j`` (the interpolant that
    ``solve_ivp``'s ``LsodaDenseOutput`` builds, with unused orders zero).
    Called like :class:`scipy.integrate.OdeSolution`.
    """

    def __init__(self, ts: np.ndarray, h: np.ndarray, yh: np.ndarray):
        self.ts, self.h, self.yh = ts, h, yh  # yh: (steps, n, max_order + 1)
        self._powers = np.arange(yh.shape[2])

    def segment(self, k: int) -> Callable[[float], np.ndarray]:
        """The interpolant of step ``k`` alone, as a fast scalar function."""
        t_k, h_k, coeffs = float(self.ts[k + 1]), float(self.h[k]), self.yh[k]
        powers = self._powers

        def value(t: float) -> np.ndarray:
            return coeffs @ ((t - t_k) / h_k) ** powers

        return value

    def __call__(self, t):
        t = np.asarray(t, dtype=float)
        flat = np.atleast_1d(t)
        k = np.clip(np.searchsorted(self.ts, flat, side="left") - 1, 0, len(self.h) - 1)
        x = (flat - self.ts[k + 1]) / self.h[k]
        y = np.einsum("mij,mj->im", self.yh[k], x[:, None] ** self._powers)
        return y[:, 0] if t.ndim == 0 else y


class _FastPathUnavailable(Exception):
    """The installed SciPy's ``ode('lsoda')`` lacks the internals the direct driver uses."""


@dataclass
class _Run:
    """What a driver hands to ``_assemble``."""

    dense: Callable  # dense(t) -> state, OdeSolution-like
    steps: np.ndarray  # accepted step times, from t0
    y_steps: np.ndarray  # (4, steps) states there
    segment: Callable[[int], Callable[[float], np.ndarray]]  # interpolant of step (k-1, k]
    nfev: int
    njev: int
    nlu: int


def _guarded(system: CompiledSystem) -> tuple[Callable, Callable]:
    """``rhs, jac`` that return NaN instead of raising outside the domain.

    The integrators evaluate the flow at trial states (predictor values, Newton
    iterates) that a large step may carry outside the closure's domain; a NaN
    makes them reject that step and retry a smaller one, where an exception
    would abort the whole run.  Accepted states are checked to be finite and
    inside the domain, so no NaN reaches a trajectory.
    """
    rhs, jac = system.rhs, system.jac
    nan_rates, nan_jac = [math.nan] * 4, [[math.nan] * 4 for _ in range(4)]

    def guarded_rhs(t, y, *args):
        try:
            return rhs(t, y, *args)
        except _EVALUATION_ERRORS:
            return nan_rates

    def guarded_jac(t, y, *args):
        try:
            return jac(t, y, *args)
        except _EVALUATION_ERRORS:
            return nan_jac

    return guarded_rhs, guarded_jac


# --------------------------------------------------------------------------- #
# Events, shared by both drivers.
# --------------------------------------------------------------------------- #


def _edge_error(system: CompiledSystem, closure: str, params: ModelParams, t: float,
                y) -> DomainError:
    return DomainError(
        f"trajectory reached the boundary of the {closure!r} domain at t={t:.6g}: "
        f"{_violated(system, y, params)}; state (w_v1, p, w_v2, w_kq) = "
        f"({y[0]:.6g}, {y[1]:.6g}, {y[2]:.6g}, {math.exp(y[3]):.6g})")


def _violated(system, y, params) -> str:
    margins = system.margins(y, params.alpha, params.wstar, float(params.L))
    worst = int(np.argmin(margins))
    return f"condition {system.domain_labels[worst]} fails (margin {margins[worst]:.3g})"


def _describe(system, y, params) -> str:
    """The state and its nearest domain condition, for diagnostics."""
    if not np.all(np.isfinite(y)):
        return f"state {[float(v) for v in y]}"
    margins = system.margins(y, params.alpha, params.wstar, float(params.L))
    worst = int(np.argmin(margins))
    return (f"state (w_v1, p, w_v2, w_kq) = ({y[0]:.6g}, {y[1]:.6g}, {y[2]:.6g}, "
            f"{math.exp(y[3]):.6g}); nearest domain condition {system.domain_labels[worst]} "
            f"(margin {margins[worst]:.3g}); L={params.L}, alpha={params.alpha}, "
            f"wstar={params.wstar}")


def _evaluation_error(system, closure, params, t, y, exc) -> DomainError:
    return DomainError(
        f"closure {closure!r} could not be evaluated ({type(exc).__name__}: {exc}) after "
        f"the step to t={t:.6g}; last accepted {_describe(system, y, params)}")


# --------------------------------------------------------------------------- #
# Driver 1: LSODA stepped directly.
# --------------------------------------------------------------------------- #

_LSODA_MAX_ORDER = 12  # Adams; the stiff BDF branch uses <= 5


def _lsoda_run(system, params, closure, solver, y0, t_horizon) -> _Run:
    """Step LSODA one accepted step at a time until phase IV (see :func:`solve`)."""
    from scipy.integrate import ode

    args = (params.alpha, params.wstar, float(params.L))
    n = y0.size
    r = ode(*_guarded(system))
    r.set_integrator("lsoda", rtol=solver.rtol, atol=solver.atol, nsteps=10**6)
    r.set_initial_value(y0.copy(), 0.0)  # LSODA overwrites its state array in place
    try:
        integrator = r._integrator
        rwork, iwork, call_args = integrator.rwork, integrator.iwork, integrator.call_args
        run, size = integrator.run, 20 + (_LSODA_MAX_ORDER + 1) * n
        if rwork.size < size or iwork.size < 15 or len(call_args) < 5:
            raise _FastPathUnavailable
    except AttributeError:
        raise _FastPathUnavailable from None
    call_args[2] = 5  # itask 5: one step, never past tcrit = rwork[0]
    fixed_end = solver.t_end is not None
    t_out = solver.t_end if fixed_end else t_horizon
    rwork[0] = t_out
    target, margins, edge_free = math.log(params.wstar), system.margins, True
    inside = abs(y0[3] - target) <= _NEAR_FIXED_POINT
    if inside and not fixed_end:  # started at the fixed point: run to the first horizon
        fixed_end = True
    ts, records, orders = [0.0], [], []
    restarts, spent = 0, [0, 0]  # restarts so far; (nfev, njev) of the runs before them
    t, y = 0.0, r._y
    rhs, jac = r.f, r.jac
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # LSODA's own notes; failures are checked below
        while True:
            try:
                y, t = run(rhs, jac, y, t, t_out, args, args)
                failure = None if integrator.success else integrator.messages.get(
                    integrator.istate, f"istate {integrator.istate}").rstrip(".")
            except _EVALUATION_ERRORS as exc:
                failure = f"{type(exc).__name__}: {exc}"
            if failure is None:
                total = y[0] + y[1] + y[2] + y[3]
                if total - total != 0:  # nan or inf: a trial outside the domain leaked in
                    failure = "non-finite state"
            if failure is not None:
                # Restart from the last accepted step with a smaller first step.
                good = records[-1][10:10 + n] if records else y0
                if restarts == _MAX_RESTARTS:
                    raise DomainError(
                        f"LSODA stopped after the step to t={ts[-1]:.6g}: {failure} (after "
                        f"{restarts} restarts); last accepted {_describe(system, good, params)}")
                restarts += 1
                spent[0] += int(iwork[11])
                spent[1] += int(iwork[12])
                rwork[4] = records[-1][0] * 0.1**restarts if records else 0.0
                call_args[3] = 1  # istate 1: start afresh from (t, y)
                t, y = ts[-1], good.copy()
                continue
            if len(ts) > _MAX_STEPS:
                raise DomainError(f"LSODA stopped at t={t:.6g}: more than {_MAX_STEPS} steps; "
                                  f"{_describe(system, y, params)}")
            ts.append(t)
            records.append(rwork[10:size].copy())  # (hu, h), 8 unused, Nordsieck array
            orders.append(iwork[13:15].tolist())  # (nqu, nq)
            ell = y[3]
            if edge_free and min(margins(y, *args)) <= 0:
                edge_free = False
                break
            if fixed_end:
                if t >= t_out:
                    break
                continue
            near = abs(ell - target) <= _NEAR_FIXED_POINT
            if near and not inside:
                # First entry into the band: t_end = (1 + tail) * (the entry time).
                dense = _nordsieck(ts, records, orders, n)
                t_conv = _root_in_step(dense.segment(len(ts) - 2),
                                       lambda v: abs(v[3] - target) - _NEAR_FIXED_POINT,
                                       ts[-2], ts[-1])
                fixed_end, t_out = True, max(t_conv * (1 + _TAIL_FACTOR), t)
                rwork[0] = t_out
                if t >= t_out:
                    break
                continue
            inside = inside and near
            if t >= t_out:
                if t_out >= _T_MAX:
                    raise DomainError(f"no emergence before t={_T_MAX:g}")
                t_out = min(4 * t_out, _T_MAX)
                rwork[0] = t_out
    dense = _nordsieck(ts, records, orders, n)
    if not edge_free:
        k = len(ts) - 2
        segment = dense.segment(k)
        t_edge = _root_in_step(segment, lambda v: -min(margins(v, *args)), ts[-2], ts[-1])
        raise _edge_error(system, closure, params, t_edge, segment(t_edge))
    y_steps = np.concatenate((y0[:, None], dense.yh[:, :, 0].T), axis=1)
    return _Run(dense, dense.ts, y_steps, dense.segment, nfev=spent[0] + int(iwork[11]),
                njev=spent[1] + int(iwork[12]), nlu=spent[1] + int(iwork[12]))


def _nordsieck(ts: list, records: list, orders: list, n: int) -> NordsieckSolution:
    """Build the dense output from the per-step copies of LSODA's work arrays.

    Each record is ``rwork[10:20 + 13 n]``: ``(hu, h)`` at 10, 11 and the
    Nordsieck array (column-major) from 20; ``orders`` holds ``iwork[13:15] =
    (nqu, nq)``.  As in SciPy's ``LSODA._dense_output_impl``, columns
    ``0..nqu`` are used with step ``h``, and the last column is rescaled by
    ``(h / hu)**nqu`` if the order is to drop.
    """
    data = np.array(records)
    m = _LSODA_MAX_ORDER + 1
    yh = data[:, 10:].reshape(len(records), m, n).transpose(0, 2, 1).copy()
    hu, h = data[:, 0], data[:, 1]
    order, next_order = np.array(orders, dtype=int).T
    # Columns beyond the order are stale (possibly NaN from rejected trials): zero them.
    yh = np.where(np.arange(m)[None, None, :] <= order[:, None, None], yh, 0.0)
    drop = np.flatnonzero(next_order < order)
    if drop.size:
        yh[drop, :, order[drop]] *= ((h[drop] / hu[drop]) ** order[drop])[:, None]
    return NordsieckSolution(np.asarray(ts, dtype=float), h, yh)


def _root_in_step(segment, level, t_lo: float, t_hi: float) -> float:
    """First ``t`` in ``[t_lo, t_hi]`` with ``level(segment(t)) >= 0`` (a sign change there)."""
    from scipy.optimize import brentq

    g_lo, g_hi = level(segment(t_lo)), level(segment(t_hi))
    if g_lo >= 0:
        return t_lo
    if g_hi < 0:  # interpolation round-off at the step end: the step end is the crossing
        return t_hi
    return float(brentq(lambda s: level(segment(s)), t_lo, t_hi, xtol=1e-300,
                        rtol=4 * np.finfo(float).eps))


# --------------------------------------------------------------------------- #
# Driver 2: solve_ivp with terminal events (Radau, BDF; LSODA fallback).
# --------------------------------------------------------------------------- #


def _domain_event(system: CompiledSystem, args: tuple):
    def event(t, y, *_):
        return min(system.margins(y, *args))

    event.terminal = True
    event.direction = -1
    return event


def _converged_event(params: ModelParams):
    target = math.log(params.wstar)

    def event(t, y, *_):
        return abs(y[3] - target) - _NEAR_FIXED_POINT

    event.terminal = True
    event.direction = -1
    return event


def _ivp_piece(system, params, closure, solver, y0, t0, t1, converge: bool):
    from scipy.integrate import solve_ivp

    args = (params.alpha, params.wstar, float(params.L))
    rhs, jac = _guarded(system)
    events = [_domain_event(system, args)]
    if converge:
        events.append(_converged_event(params))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # LSODA's own excess-work notes
        try:
            return solve_ivp(
                rhs, (t0, t1), y0, method=solver.method, jac=jac,
                rtol=solver.rtol, atol=solver.atol, dense_output=True, args=args,
                events=events)
        except _EVALUATION_ERRORS as exc:
            raise _evaluation_error(system, closure, params, t0, y0, exc) from None


def _ivp_run(system, params, closure, solver, y0, t_horizon) -> _Run:
    from scipy.integrate import OdeSolution

    pieces, t0, y = [], 0.0, y0
    fixed_end = solver.t_end is not None
    t1 = solver.t_end if fixed_end else t_horizon
    converge = not fixed_end and abs(y0[3] - math.log(params.wstar)) > _NEAR_FIXED_POINT
    fixed_end = fixed_end or not converge  # started at the fixed point: run to t_horizon
    while True:
        sol = _ivp_piece(system, params, closure, solver, y, t0, t1, converge)
        pieces.append(sol)
        if sol.status == -1:
            raise DomainError(f"integrator failed at t={sol.t[-1]:g}: {sol.message}")
        if not np.all(np.isfinite(sol.y)):
            raise DomainError(f"non-finite state before t={sol.t[-1]:g}")
        if sol.t_events[0].size:
            raise _edge_error(system, closure, params, sol.t_events[0][0], sol.y_events[0][0])
        t0, y = sol.t[-1], sol.y[:, -1]
        if fixed_end and t0 >= t1:
            break
        if converge and sol.t_events[1].size:
            converge, fixed_end = False, True
            t1 = t0 * (1 + _TAIL_FACTOR)
            continue
        if t1 >= _T_MAX:
            raise DomainError(f"no emergence before t={_T_MAX:g}")
        t1 = min(4 * t1, _T_MAX)
    ts = np.concatenate([pieces[0].sol.ts] + [p.sol.ts[1:] for p in pieces[1:]])
    interpolants = [i for p in pieces for i in p.sol.interpolants]
    dense = OdeSolution(ts, interpolants)
    steps = np.concatenate([pieces[0].t] + [p.t[1:] for p in pieces[1:]])
    y_steps = np.concatenate([pieces[0].y] + [p.y[:, 1:] for p in pieces[1:]], axis=1)
    return _Run(dense, steps, y_steps, lambda k: interpolants[k],
                nfev=sum(int(p.nfev) for p in pieces), njev=sum(int(p.njev) for p in pieces),
                nlu=sum(int(p.nlu) for p in pieces))


# --------------------------------------------------------------------------- #
# The verb.
# --------------------------------------------------------------------------- #


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
            numbers.append(_finite(f"initial {name}", value, "a finite number"))
        if log_w_kq is not None:
            numbers.append(_finite("initial log_w_kq", log_w_kq, "a finite number"))
        else:
            w = _finite("initial w_kq", w_kq, "a finite number > 0 (w_kq = w_k w_q, w_k = w_q)")
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


def _finite(name: str, value, allowed: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ParameterError(f"{name}={value!r} is not a number; allowed: {allowed}") from None
    if isinstance(value, bool) or not math.isfinite(number):
        raise ParameterError(f"{name}={value!r} is not finite; allowed: {allowed}")
    return number


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
