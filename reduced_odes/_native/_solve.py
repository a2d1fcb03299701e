"""The native run of one problem: legs of native stepping, then the native assembly.

The pure path's semantics are kept exactly: run to the horizon (extended x4
up to ``_T_MAX``) until the stop rule first turns ``<= 0`` at ``t_s``, then on
to ``(1 + tail) t_s``; a fixed ``t_end`` instead if given; a state that starts
settled runs to the first horizon; a domain margin ``<= 0`` on an accepted
step is a :class:`DomainError` at the crossing time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._contract import SettledRule
from .._crossing import root_in_step
from .._driver import _T_MAX, Problem
from .._integrate import _series_at, output_times, trajectory
from .._lsoda import _MAX_STEPS
from .._params import ParameterError
from .._trajectory import DomainError, SolverStats, Trajectory
from ._twin import load_twin

#: Steps per native call when the model's stop rule is applied in Python: the
#: run may overshoot its end by up to this many (discarded) steps.
_CHUNK = 256
#: Initial capacity of the step record (doubled when full).
_CAPACITY = 4096
#: Highest BDF order plus the two extra difference rows SciPy's ``D`` carries.
_D_ROWS = 8


@dataclass
class _Record:
    """The accepted steps: step ``k`` ends at ``ts[k]``; its interpolant is ``ds[k]``."""

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


class BdfSolution:
    """Dense output of a native run, called like :class:`scipy.integrate.OdeSolution`."""

    def __init__(self, twin, record: _Record):
        count = record.count
        self._twin, self.count = twin, count
        self.ts, self.hs = record.ts[:count].copy(), record.hs[:count].copy()
        self.orders, self.ds = record.orders[:count].copy(), record.ds[:count].copy()

    def __call__(self, t):
        t = np.asarray(t, dtype=float)
        flat = np.atleast_1d(t)
        out = np.empty((flat.size, self.ds.shape[2]))
        self._twin.dense_into(flat, self.ts, self.hs, self.orders, self.ds, self.count, out)
        return out[0] if t.ndim == 0 else out.T


def _twin_for(model, params, variant, problem: Problem):
    """The twin (with the model's stop rule compiled in, if it is a :class:`SettledRule`) and
    the rule's constants."""
    rule = model.settled(params, variant)
    rule = rule if isinstance(rule, SettledRule) else None
    twin = load_twin(problem.system, rule)
    constants = np.array([float(v) for v in rule.constants.values()] if rule else [0.0])
    return twin, constants


class _Leg:
    """Workspaces of the integrator, resumable across native calls."""

    def __init__(self, twin, problem: Problem, constants: np.ndarray, bound: float):
        n = problem.y0.size
        self.twin, self.problem, self.constants = twin, problem, constants
        self.args = np.array(problem.args, dtype=float)
        self.fws, self.iws = np.zeros(5), np.zeros(7, np.int64)
        self.d, self.jm = np.zeros((_D_ROWS, n)), np.zeros((n, n))
        self.lu, self.piv = np.zeros((n, n)), np.zeros(n, np.int64)
        self.scratch = np.zeros(twin.scratch_size(n))
        self.record = _Record.empty(problem.y0, _CAPACITY)
        self.d[0] = problem.y0  # the first native call starts here, at t = 0
        self.fws[twin.F_BOUND] = bound

    def advance(self, limit: int) -> int:
        """Native steps up to the workspaces' bound or ``limit`` recorded steps; the status."""
        r, p = self.record, self.problem
        if limit > r.ts.size:
            self.record = r = r.grown()
        status = self.twin.advance(p.rtol, p.atol, self.args, self.constants, self.fws,
                                   self.iws, self.d, self.jm, self.lu, self.piv, r.ts, r.hs,
                                   r.orders, r.ds, limit, self.scratch)
        r.count = int(self.iws[self.twin.I_STEPS]) + 1
        if r.count > _MAX_STEPS:
            raise DomainError(f"native BDF stopped at t={r.ts[r.count - 1]:.6g}: more than "
                              f"{_MAX_STEPS} steps; {p.describe(r.ds[r.count - 1, 0])}")
        return int(status)

    @property
    def bound(self) -> float:
        return float(self.fws[self.twin.F_BOUND])

    def set_bound(self, bound: float, watch: bool) -> None:
        self.fws[self.twin.F_BOUND] = bound
        self.fws[self.twin.F_SETTLE] = 0.0 if watch else -1.0


def _python_settle(leg: _Leg, first: int) -> tuple[float, int] | None:
    """``(t_s, k)``: where the model's Python rule first holds among steps ``first..``."""
    r, settled = leg.record, leg.problem.settled
    k = next((k for k in range(first, r.count) if settled(float(r.ts[k]), r.ds[k, 0]) <= 0),
             None)
    if k is None:
        return None
    dense = BdfSolution(leg.twin, r)
    return root_in_step(lambda s: (s, dense(s)), lambda ty: -settled(*ty), float(r.ts[k - 1]),
                        float(r.ts[k])), k


def _raise_edge(leg: _Leg) -> None:
    r, p = leg.record, leg.problem
    dense = BdfSolution(leg.twin, r)
    t_edge = root_in_step(dense, lambda v: -min(p.margins(v)), float(r.ts[r.count - 2]),
                          float(r.ts[r.count - 1]))
    raise p.edge_error(t_edge, dense(t_edge))


def _integrate(twin, problem: Problem, constants: np.ndarray) -> tuple[_Leg, float]:
    """Step until the end of the run; the integrator and the end time."""
    fixed = problem.t_end is not None
    native_rule = bool(twin.HAS_SETTLED_RULE)
    if not fixed and not native_rule and problem.settled(0.0, problem.y0) <= 0:
        fixed = True  # started settled: to the first horizon (a native rule says so itself)
    leg = _Leg(twin, problem, constants, problem.t_end if problem.t_end else problem.horizon)
    leg.set_bound(leg.bound, watch=native_rule and not fixed)
    checked, t_end = 1, None
    while True:
        python_rule = not fixed and not native_rule
        count = leg.record.count
        limit = count + _CHUNK if python_rule else max(leg.record.ts.size, count + 1)
        status = leg.advance(limit)
        r = leg.record
        if status == twin.TOO_SMALL:
            raise DomainError(f"native BDF stopped after the step to t={r.ts[r.count - 1]:.6g}: "
                              f"the step size became too small; last accepted "
                              f"{problem.describe(r.ds[r.count - 1, 0])}")
        if status == twin.EDGE:
            _raise_edge(leg)
        if python_rule:
            found = _python_settle(leg, checked)
            checked = r.count
            if found is not None:
                t_s, k = found
                fixed, t_end = True, max(t_s * (1 + problem.tail), float(r.ts[k]))
                leg.set_bound(t_end, watch=False)
                if r.ts[r.count - 1] >= t_end:
                    return leg, t_end
                continue
        if status == twin.STARTED_SETTLED:
            fixed = True
            leg.set_bound(leg.bound, watch=False)
            continue
        if status == twin.SETTLED:
            k = r.count - 1
            t_s = float(leg.fws[twin.F_SETTLED_AT])
            fixed, t_end = True, max(t_s * (1 + problem.tail), float(r.ts[k]))
            leg.set_bound(t_end, watch=False)
            continue
        if status != twin.REACHED:  # the record is full, or a chunk of the Python rule ended
            continue
        if fixed:
            return leg, leg.bound
        if leg.bound >= _T_MAX:
            raise DomainError(f"{problem.label} did not settle before t={_T_MAX:g}; "
                              f"{problem.describe(r.ds[r.count - 1, 0])}")
        leg.set_bound(min(4 * leg.bound, _T_MAX), watch=native_rule)


def _crossing_arrays(system, crossings) -> tuple[np.ndarray, ...]:
    kinds, indices = [], []
    for c in crossings:
        for kind, names in enumerate((system.coordinate_names, system.state_names,
                                      system.observable_names)):
            if c.quantity in names:
                kinds.append(kind)
                indices.append(names.index(c.quantity))
                break
        else:
            allowed = system.coordinate_names + system.state_names + system.observable_names
            raise ParameterError(f"phase quantity {c.quantity!r} is not a series of "
                                 f"{system.model}; allowed: {', '.join(allowed)}")
    return (np.array(kinds, np.int64), np.array(indices, np.int64),
            np.array([float(c.level) for c in crossings]),
            np.array([float(c.direction) for c in crossings]))


def _named_series(system, y: np.ndarray, states: np.ndarray,
                  values: np.ndarray) -> dict[str, np.ndarray]:
    """Every named series from the columns the native outputs filled."""
    series = {name: y[:, i].copy() for i, name in enumerate(system.coordinate_names)}
    series.update({name: states[:, i].copy() for i, name in enumerate(system.state_names)})
    series.update({name: values[:, i].copy() for i, name in enumerate(system.observable_names)})
    return series


def solve_native(model, params, variant, solver, thresholds, problem: Problem) -> Trajectory:
    """See :func:`reduced_odes._native.solve_native`."""
    twin, constants = _twin_for(model, params, variant, problem)
    leg, t_end = _integrate(twin, problem, constants)
    r, system, args = leg.record, problem.system, leg.args
    t = output_times(t_end, solver.n_output)
    y = np.empty((t.size, problem.y0.size))
    states = np.empty((t.size, max(len(system.state_names), 1)))
    values = np.empty((t.size, twin.N_SERIES))
    initial = {k: float(v[0]) for k, v in _series_at(system, problem.y0[:, None],
                                                       problem.args).items()}
    crossings = model.phases(params, variant, initial, thresholds)
    times = np.empty(len(crossings))
    twin.outputs(t, args, r.ts, r.hs, r.orders, r.ds, r.count, y, states, values,
                 *_crossing_arrays(system, crossings), times)
    series = _named_series(system, y, states, values)
    # Steps past t_end (a chunk's overshoot under the Python stop rule) are not the run's.
    phases = {c.name: float(v) if v <= t_end else math.nan
              for c, v in zip(crossings, times, strict=True)}
    iws = leg.iws
    stats = SolverStats("BDF (native)", solver.rtol, solver.atol, nfev=int(iws[twin.I_NFEV]),
                        njev=int(iws[twin.I_NJEV]), nlu=int(iws[twin.I_NLU]),
                        steps=int(np.searchsorted(r.ts[:r.count], t_end)))
    return trajectory(model, (params, variant, solver, thresholds), problem, t, series,
                      (crossings, phases), stats, BdfSolution(twin, r))
