"""Driver 1: LSODA stepped directly, one accepted step per call.

Stepped through SciPy's ``ode`` wrapper of ODEPACK's LSODA exactly as
``solve_ivp(method="LSODA")`` steps it, but without ``solve_ivp``'s per-step
bookkeeping: the events are tested on each accepted step in a few float
operations and the dense output is kept as the raw Nordsieck arrays.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np

from ._crossing import root_in_step
from ._driver import _MAX_STEPS, _T_MAX, StepRun, stopped
from ._ivp import IvpStepper
from ._problem import EVALUATION_ERRORS, Problem
from ._trajectory import DomainError

#: Restarts of the direct LSODA driver from its last accepted step, after a step
#: that failed or came out non-finite (trial states outside the domain).
_MAX_RESTARTS = 8


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
            # einsum, not BLAS: the same bits under every BLAS kernel (phase times are
            # refined here, and the verdict tables must not depend on the machine).
            return np.einsum("ij,j->i", coeffs, ((t - t_k) / h_k) ** powers)

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


_LSODA_MAX_ORDER = 12  # Adams; the stiff BDF branch uses <= 5


class LsodaStepper:
    """LSODA stepped directly (:func:`_lsoda_run`); through ``solve_ivp`` if the installed
    SciPy's ``ode`` wrapper lacks the internals the direct driver reads."""

    #: Failure messages name the method itself.
    label = None

    @staticmethod
    def run(problem: Problem) -> StepRun:
        """Integrate ``problem`` until it settles (or to its ``t_end``)."""
        try:
            return _lsoda_run(problem)
        except _FastPathUnavailable:
            return IvpStepper.run(problem)


def _lsoda_run(problem: Problem) -> StepRun:
    """Step LSODA one accepted step at a time until the state settles (see :func:`solve`)."""
    driver = _Direct(problem)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # LSODA's own notes; failures are checked below
        while not driver.step():
            pass
    return driver.finished()


class _Direct:
    """The direct driver's state: SciPy's ``ode('lsoda')`` work arrays, the steps recorded
    so far, the run's end (``t_out``, fixed or still the horizon) and the restarts."""

    def __init__(self, problem: Problem):
        from scipy.integrate import ode

        self.problem, y0, n = problem, problem.y0, problem.y0.size
        r = ode(*problem.guarded())
        r.set_integrator("lsoda", rtol=problem.rtol, atol=problem.tolerance(), nsteps=10**6)
        r.set_initial_value(y0.copy(), 0.0)  # LSODA overwrites its state array in place
        try:
            integrator = r._integrator
            self.rwork, self.iwork = integrator.rwork, integrator.iwork
            self.call_args, self.run = integrator.call_args, integrator.run
            self.size = 20 + (_LSODA_MAX_ORDER + 1) * n
            if self.rwork.size < self.size or self.iwork.size < 15 or len(self.call_args) < 5:
                raise _FastPathUnavailable
        except AttributeError:
            raise _FastPathUnavailable from None
        self.integrator, self.rhs, self.jac = integrator, r.f, r.jac
        self.call_args[2] = 5  # itask 5: one step, never past tcrit = rwork[0]
        self.fixed_end = problem.t_end is not None
        self.t_out = problem.t_end if self.fixed_end else problem.horizon
        self.rwork[0] = self.t_out
        self.edge_free = bool(problem.system.domain_labels)
        self.inside = problem.settled(0.0, y0) <= 0
        if self.inside and not self.fixed_end:  # started settled: run to the first horizon
            self.fixed_end = True
        self.ts, self.records, self.orders = [0.0], [], []
        self.restarts, self.spent = 0, [0, 0]  # restarts so far; (nfev, njev) before them
        self.t, self.y = 0.0, r._y

    def partial(self) -> StepRun | None:
        return _recorded(self.problem.y0, self.ts, self.records, self.orders,
                         (self.spent[0] + int(self.iwork[11]),
                          self.spent[1] + int(self.iwork[12])))

    def step(self) -> bool:
        """One accepted step (or a restart); whether the run is over."""
        args = self.problem.args
        try:
            self.y, self.t = self.run(self.rhs, self.jac, self.y, self.t, self.t_out, args, args)
            integrator = self.integrator
            failure = None if integrator.success else integrator.messages.get(
                integrator.istate, f"istate {integrator.istate}").rstrip(".")
        except EVALUATION_ERRORS as exc:
            failure = f"{type(exc).__name__}: {exc}"
        if failure is None:
            total = sum(self.y.tolist())
            if total - total != 0:  # nan or inf: a trial outside the domain leaked in
                failure = "non-finite state"
        if failure is not None:
            self.restart(failure)
            return False
        return self.accepted()

    def restart(self, failure: str) -> None:
        """Restart from the last accepted step with a smaller first step, or give up."""
        n, ts = self.problem.y0.size, self.ts
        good = self.records[-1][10:10 + n] if self.records else self.problem.y0
        if self.restarts == _MAX_RESTARTS:
            raise stopped(DomainError(
                f"LSODA stopped after the step to t={ts[-1]:.6g}: {failure} (after "
                f"{self.restarts} restarts); last accepted {self.problem.describe(good)}"),
                self.partial(), ts[-1])
        self.restarts += 1
        self.spent[0] += int(self.iwork[11])
        self.spent[1] += int(self.iwork[12])
        self.rwork[4] = self.records[-1][0] * 0.1**self.restarts if self.records else 0.0
        self.call_args[3] = 1  # istate 1: start afresh from (t, y)
        self.t, self.y = ts[-1], good.copy()

    def accepted(self) -> bool:
        """Record the step just taken and apply the domain, the stop rule and the horizon;
        whether the run is over."""
        problem, t, y, ts = self.problem, self.t, self.y, self.ts
        if len(ts) > _MAX_STEPS:
            raise stopped(DomainError(f"LSODA stopped at t={t:.6g}: more than {_MAX_STEPS} "
                                      f"steps; {problem.describe(y)}"), self.partial(), ts[-1])
        ts.append(t)
        self.records.append(self.rwork[10:self.size].copy())  # (hu, h), 8 unused, Nordsieck
        self.orders.append(self.iwork[13:15].tolist())  # (nqu, nq)
        if self.edge_free and min(problem.system.margins(y, *problem.args)) <= 0:
            self.edge_free = False
            return True
        if self.fixed_end:
            return t >= self.t_out
        near = problem.settled(t, y) <= 0
        if near and not self.inside:
            # First entry into the final regime: t_end = (1 + tail) * (the entry time).
            segment = _nordsieck(ts, self.records, self.orders, y.size).segment(len(ts) - 2)
            t_conv = root_in_step(lambda s, seg=segment: (s, seg(s)),
                                  lambda ty: -problem.settled(*ty), ts[-2], ts[-1])
            self.fixed_end, self.t_out = True, max(t_conv * (1 + problem.tail), t)
            self.rwork[0] = self.t_out
            return t >= self.t_out
        self.inside = self.inside and near
        if t >= self.t_out:
            if self.t_out >= _T_MAX:
                raise stopped(DomainError(f"{problem.label} did not settle before "
                                          f"t={_T_MAX:g}; {problem.describe(y)}"),
                              self.partial(), ts[-1])
            self.t_out = min(4 * self.t_out, _T_MAX)
            self.rwork[0] = self.t_out
        return False

    def finished(self) -> StepRun:
        """The run, or the error of the domain's edge crossed in its last step."""
        problem, ts, run = self.problem, self.ts, self.partial()
        if problem.system.domain_labels and not self.edge_free:
            segment = run.segment(len(ts) - 2)
            t_edge = root_in_step(segment, lambda v: -min(problem.system.margins(
                v, *problem.args)), ts[-2], ts[-1])
            raise stopped(problem.edge_error(t_edge, segment(t_edge)), run, t_edge)
        return run


def _recorded(y0: np.ndarray, ts: list, records: list, orders: list,
              costs: tuple) -> StepRun | None:
    """The run of the steps recorded so far (``costs``: nfev, njev); None before the first."""
    if not records:
        return None
    dense = _nordsieck(ts, records, orders, y0.size)
    y_steps = np.concatenate((y0[:, None], dense.yh[:, :, 0].T), axis=1)
    nfev, njev = costs
    return StepRun(dense, dense.ts, y_steps, dense.segment, nfev=nfev, njev=njev, nlu=njev)


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
