"""The legs of a native run: each one's resumable workspaces and step record (the whole
system, or one independent block in its own time), and the legs' records merged into one
run, read by every scan and by the dense output (:class:`BdfSolution`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._crossing import root_in_step
from .._driver import _MAX_STEPS, stopped
from .._problem import Problem
from .._trajectory import DomainError

#: Initial capacity of the step record (doubled when full).
_CAPACITY = 4096
#: Highest BDF order plus the two extra difference rows SciPy's ``D`` carries.
_D_ROWS = 8


@dataclass
class _Record:
    """One leg's accepted steps in its time ``s``: step ``k`` ends at ``ts[k]``; its
    interpolant is ``ds[k]``."""

    ts: np.ndarray
    hs: np.ndarray
    orders: np.ndarray
    ds: np.ndarray
    count: int = 1

    @classmethod
    def empty(cls, y0: np.ndarray, capacity: int) -> _Record:
        # Not zeroed: each step writes its whole row; row 0 is the initial state.
        record = cls(np.empty(capacity), np.empty(capacity), np.empty(capacity, np.int64),
                     np.empty((capacity, 6, y0.size)))
        record.ts[0], record.hs[0], record.orders[0] = 0.0, 1.0, 0
        record.ds[0] = 0.0
        record.ds[0, 0] = y0
        return record

    def grown(self) -> _Record:
        size = 2 * self.ts.size

        def grow(a: np.ndarray) -> np.ndarray:
            return np.concatenate([a, np.empty((size - a.shape[0], *a.shape[1:]), a.dtype)])

        return _Record(grow(self.ts), grow(self.hs), grow(self.orders), grow(self.ds),
                       self.count)


class _Leg:
    """Workspaces of the integrator for the system or one block, resumable across calls.

    ``index``: the block's coordinates (None: the whole system); ``t0``: its log time
    (0: it is stepped in ``t`` itself)."""

    def __init__(self, twin, problem: Problem, constants: np.ndarray, bound: float,
                 index: tuple[int, ...] | None = None, block: int = -1, t0: float = 0.0):
        self.index = np.arange(problem.y0.size) if index is None else np.array(index)
        y0 = problem.y0[self.index]
        n = y0.size
        self.twin, self.problem, self.constants, self.t0 = twin, problem, constants, t0
        self.args = np.array(problem.args, dtype=float)
        # One atol per coordinate (a log coordinate's may be floored; see Problem.tolerance).
        self.atol = np.broadcast_to(problem.tolerance(), problem.y0.shape)[self.index].copy()
        self.fws, self.iws = np.zeros(5), np.zeros(8, np.int64)
        self.d, self.jm = np.zeros((_D_ROWS, n)), np.zeros((n, n))
        self.lu, self.piv = np.zeros((n, n)), np.zeros(n, np.int64)
        self.scratch = np.zeros(twin.scratch_size(n))
        self.record = _Record.empty(y0, _CAPACITY)
        self._times = None
        self.d[0] = y0  # the first native call starts here, at t = 0
        self.fws[twin.F_T0], self.iws[twin.I_BLOCK] = t0, block
        self.set_bound(bound, watch=False)

    def s_of(self, t: float) -> float:
        return t if not self.t0 else math.log1p(t / self.t0)

    def times(self) -> np.ndarray:
        """The recorded step times, in ``t`` (converted once per count of steps)."""
        count = self.record.count
        if self._times is None or self._times.size != count:
            s = self.record.ts[:count]
            self._times = s if not self.t0 else self.t0 * np.expm1(s)
        return self._times

    def advance(self, limit: int) -> int:
        """Native steps up to the workspaces' bound or ``limit`` recorded steps; the status."""
        r, p = self.record, self.problem
        if limit > r.ts.size:
            self.record = r = r.grown()
        status = self.twin.advance(p.rtol, self.atol, self.args, self.constants, self.fws,
                                   self.iws, self.d, self.jm, self.lu, self.piv, r.ts, r.hs,
                                   r.orders, r.ds, limit, self.scratch)
        r.count = int(self.iws[self.twin.I_STEPS]) + 1
        if r.count > _MAX_STEPS:
            raise DomainError(f"native BDF stopped at t={self.times()[-1]:.6g}: more than "
                              f"{_MAX_STEPS} steps; {self.describe()}")
        failures = {self.twin.TOO_SMALL: "the step size became too small",
                    self.twin.NOT_FINITE: "the rates or the step size are not finite there "
                                          "(NaN or inf: the flow cannot be evaluated)",
                    self.twin.NO_STEP: f"no step accepted in {self.twin.MAX_TRIALS} trials"}
        if status in failures:
            raise DomainError(f"native BDF stopped after the step to t={self.times()[-1]:.6g}:"
                              f" {failures[status]}; last accepted {self.describe()}")
        return int(status)

    def describe(self) -> str:
        r, p = self.record, self.problem
        if self.index.size == p.y0.size:
            return p.describe(r.ds[r.count - 1, 0])
        values = ", ".join(f"{v:.6g}" for v in r.ds[r.count - 1, 0])
        names = ", ".join(p.system.coordinate_names[i] for i in self.index)
        return f"({names}) = ({values}); {p.label}"

    def run_to(self, bound: float) -> None:
        """Step on until the bound (in ``t``)."""
        self.set_bound(bound, watch=False)
        while self.advance(max(self.record.ts.size, self.record.count + 1)) != \
                self.twin.REACHED:
            pass

    @property
    def bound(self) -> float:
        """The bound in ``t``, as set (not converted back from ``s``)."""
        return self._bound

    def set_bound(self, bound: float, watch: bool) -> None:
        self._bound = bound
        self.fws[self.twin.F_BOUND] = self.s_of(bound)
        self.fws[self.twin.F_SETTLE] = 0.0 if watch else -1.0

    @property
    def stats(self) -> np.ndarray:
        return self.iws[[self.twin.I_NFEV, self.twin.I_NJEV, self.twin.I_NLU]]


def _legs(twin, problem: Problem, constants: np.ndarray) -> list[_Leg]:
    """One leg for the whole system, or one per declared block."""
    bound = problem.t_end if problem.t_end else problem.horizon
    system = problem.system
    if not system.blocks:
        return [_Leg(twin, problem, constants, bound)]
    return [_Leg(twin, problem, constants, bound, index, b, t0 or 0.0)
            for b, (index, t0) in enumerate(zip(system.blocks, system.log_times, strict=True))]


def _stacked(legs: list[_Leg]) -> tuple[np.ndarray, ...]:
    """The legs' records as the twin's stacked record ``(ts, hs, orders, ds, counts, t0s,
    index)`` (views for a single leg)."""
    if len(legs) == 1:
        r = legs[0].record
        return (r.ts[None], r.hs[None], r.orders[None], r.ds[None], np.array([r.count]),
                np.array([float(legs[0].t0)]), legs[0].index[None])
    counts = np.array([leg.record.count for leg in legs])
    width = max(leg.index.size for leg in legs)
    size = int(counts.max())
    ts, hs = np.zeros((len(legs), size)), np.ones((len(legs), size))
    orders = np.zeros((len(legs), size), np.int64)
    ds = np.zeros((len(legs), size, 6, width))
    index = np.full((len(legs), width), -1)
    for b, leg in enumerate(legs):
        r, count, n = leg.record, leg.record.count, leg.index.size
        ts[b, :count], hs[b, :count], orders[b, :count] = r.ts[:count], r.hs[:count], \
            r.orders[:count]
        ds[b, :count, :, :n] = r.ds[:count]
        index[b, :n] = leg.index
    return ts, hs, orders, ds, counts, np.array([leg.t0 for leg in legs]), index


class _Merged:
    """The legs' records so far, as one run: the stacked record, the union of the step times
    (``steps``) and the state at each (``y_steps``, one row each), read by every scan."""

    def __init__(self, legs: list[_Leg]):
        self.record = _stacked(legs)
        self.views = len(legs) == 1  # the record is the leg's own (see ``_stacked``)
        self.twin, self.args, self.problem = legs[0].twin, legs[0].args, legs[0].problem
        total = sum(leg.record.count for leg in legs)
        steps, y_steps = np.empty(total), np.empty((total, self.problem.y0.size))
        m = self.twin.merge(*self.record, steps, y_steps)
        self.steps, self.y_steps = steps[:m], y_steps[:m]

    def first_events(self, start: int, constants: np.ndarray, edges: bool,
                     rule: bool) -> tuple[int, int]:
        """The twin's ``first_events`` from merged step ``start``: ``(m, what)``."""
        m, what = self.twin.first_events(self.steps, self.y_steps, start, self.args, constants,
                                         edges, rule)
        return int(m), int(what)

    def dense(self) -> BdfSolution:
        # A single leg's record is its workspace (longer than used, and stepped on if the
        # run goes on): copied.  A stacked one is made for this merge alone.
        return BdfSolution(self.twin, self.record, self.problem.y0.size, copy=self.views)

    def raise_edge(self, m: int) -> None:
        """The :class:`DomainError` of a margin ``<= 0`` first at merged step ``m``."""
        p, dense = self.problem, self.dense()
        a, b = float(self.steps[max(m - 1, 0)]), float(self.steps[m])
        t_edge = root_in_step(dense, lambda v: -min(p.margins(v)), a, b)
        raise stopped(p.edge_error(t_edge, dense(t_edge)), None, t_edge)


class BdfSolution:
    """Dense output of a native run, called like :class:`scipy.integrate.OdeSolution`.

    ``copy``: the record is a leg's workspace, copied (only the steps used), since the
    run may step on; else it is kept as given."""

    def __init__(self, twin, record: tuple[np.ndarray, ...], size: int, copy: bool = True):
        self._twin, self._size = twin, size
        ts, hs, orders, ds, counts, t0s, index = record
        if copy:
            used = int(counts.max())
            ts, hs, orders, ds = (a[:, :used].copy() for a in (ts, hs, orders, ds))
        self._record = (ts, hs, orders, ds, counts, t0s, index)

    def __call__(self, t):
        t = np.asarray(t, dtype=float)
        flat = np.atleast_1d(t)
        out = np.empty((flat.size, self._size))
        self._twin.dense_into(flat, *self._record, out)
        return out[0] if t.ndim == 0 else out.T
