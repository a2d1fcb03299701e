"""The native run of one problem: legs of native stepping, then the native assembly.

The pure path's semantics are kept exactly: run to the horizon (extended x4
up to ``_T_MAX``) until the stop rule first turns ``<= 0`` at ``t_s``, then on
to ``(1 + tail) t_s``; a fixed ``t_end`` instead if given; a state that starts
settled runs to the first horizon; a domain margin ``<= 0`` on an accepted
step is a :class:`DomainError` at the crossing time.

A system whose derivation declares independent blocks
(:class:`~reduced_odes.Block`) is integrated one leg per block, each with its
own steps in its own time variable; the stop rule and the domain are then
checked on the state at the union of the blocks' step times, and each leg is
stepped on to a common horizon until the rule holds.  The pure path integrates
the whole system (LSODA needs more steps per block in log time than for the
whole system at the default settings; see the README's Performance section).
"""

from __future__ import annotations

import dataclasses
import math
import types

import numpy as np

from .._crossing import quantity_index, root_in_step
from .._driver import _T_MAX, stopped
from .._problem import Problem
from .._stop_rules import SettledRule
from .._trajectory import DomainError
from ._engines import counted_run
from ._legs import BdfSolution, _Leg, _legs, _Merged, _Record, _stacked
from ._twin import engine_once, load_twin

#: Steps per native call when the model's stop rule is applied in Python: the
#: run may overshoot its end by up to this many (discarded) steps.
_CHUNK = 256
#: The native BDF runs at this fraction of the requested tolerances: at the same ones its
#: phase times are 2 to 4 times less accurate than LSODA's (up to 4e-9 against 1.7e-9 at the
#: models' defaults, rtol 1e-10, both against rtol 1e-12); at a tenth they are within 6e-10,
#: for 1.4 times the steps (``benchmarks/bench_cross_check.py``).
TIGHTER = 0.1
#: The least ``rtol`` the native BDF steps at, SciPy's BDF's (100 machine epsilons): a tenth
#: of the least requested one, 1e-13, would ask for more than double precision holds.
_RTOL_FLOOR = 100 * np.finfo(float).eps


def _twin_for(problem: Problem):
    """The twin (with the model's stop rule compiled in, if it is a :class:`SettledRule`) and
    the rule's constants."""
    if problem.system.path is None:  # solve retries the run on the pure path, saying so
        raise DomainError(f"{problem.label}: a structured system (numerical callables, no "
                          f"generated module) has no native twin; it runs on the pure path")
    setting = problem.setting
    rule = setting.model.settled(setting.params, setting.variant)
    rule = rule if isinstance(rule, SettledRule) else None
    twin = load_twin(problem.system, rule)
    counted_run(twin)
    constants = np.array([float(v) for v in rule.constants.values()] if rule else [0.0])
    return twin, constants


class _Rule:
    """The stop rule on the merged state at step times: compiled, or the model's Python one."""

    def __init__(self, twin, problem: Problem, constants: np.ndarray):
        self.twin, self.problem, self.constants = twin, problem, constants
        self.native = bool(twin.HAS_SETTLED_RULE)

    def first(self, merged: _Merged, start: int) -> int:
        """The first ``m >= start`` where the rule holds at ``merged.steps[m]``; -1 if none."""
        if self.native:
            return merged.first_events(start, self.constants, False, True)[0]
        # Only the steps from ``start``: under a chunked run the earlier ones were checked.
        steps, settled = merged.steps, self.problem.settled
        return next((m for m in range(start, steps.size)
                     if settled(float(steps[m]), merged.y_steps[m]) <= 0), -1)

    def time(self, merged: _Merged, a: float, b: float) -> float:
        """Where the rule turns ``<= 0`` in ``[a, b]``."""
        if self.native:
            return float(self.twin.settle_time(a, b, merged.args, self.constants,
                                               *merged.record))
        dense, settled = merged.dense(), self.problem.settled
        return root_in_step(lambda s: (s, dense(s)), lambda ty: -settled(*ty), a, b)

    def end(self, merged: _Merged, m: int) -> float:
        """The run's end once the rule first holds at merged step ``m``: ``(1 + tail) t_s``."""
        steps = merged.steps
        t_s = self.time(merged, float(steps[m - 1]), float(steps[m]))
        return max(t_s * (1 + self.problem.tail), float(steps[m]))


def _step_whole(twin, problem: Problem, rule: _Rule, leg: _Leg) -> float:
    """Step the whole system until the end of the run; the end time.

    The compiled rule and the domain are watched natively at every step; a Python rule
    is applied after each chunk of ``_CHUNK`` steps."""
    fixed = problem.t_end is not None
    if not fixed and not rule.native and problem.settled(0.0, problem.y0) <= 0:
        fixed = True  # started settled: to the first horizon (a native rule says so itself)
    leg.set_bound(leg.bound, watch=rule.native and not fixed)
    checked = 1
    while True:
        python_rule = not fixed and not rule.native
        count = leg.record.count
        limit = count + _CHUNK if python_rule else max(leg.record.ts.size, count + 1)
        status = leg.advance(limit)
        count = leg.record.count
        if status == twin.EDGE:
            _Merged([leg]).raise_edge(count - 1)
        if python_rule:
            merged = _Merged([leg])
            m = rule.first(merged, checked)
            checked = count
            if m >= 0:
                end = rule.end(merged, m)
                fixed = True
                leg.set_bound(end, watch=False)
                if leg.times()[-1] >= end:
                    return end
                continue
        if status == twin.STARTED_SETTLED:
            fixed = True
            leg.set_bound(leg.bound, watch=False)
            continue
        if status == twin.SETTLED:
            fixed = True
            leg.set_bound(rule.end(_Merged([leg]), count - 1), watch=False)
            continue
        if status != twin.REACHED:  # the record is full, or a chunk of the Python rule ended
            continue
        if fixed:
            return leg.bound
        _extend([leg], problem)
        leg.set_bound(leg.bound, watch=rule.native)


def _extend(legs: list[_Leg], problem: Problem) -> None:
    """Move the legs' common horizon x4 (up to ``_T_MAX``), or fail there."""
    bound = legs[0].bound
    if bound >= _T_MAX:
        raise stopped(DomainError(f"{problem.label} did not settle before t={_T_MAX:g}; "
                                  f"{legs[0].describe()}"), None, bound)
    for leg in legs:
        leg.set_bound(min(4 * bound, _T_MAX), watch=False)


def _integrate_blocks(twin, problem: Problem, rule: _Rule,
                      legs: list[_Leg]) -> tuple[float, _Merged]:
    """Step every block to a common horizon, check the rule and the domain on the merged
    state, and extend until the rule holds; the end time and the merged run.

    The domain is checked at every merged step up to the end (not beyond, where the
    blocks may have stepped on to the horizon)."""
    fixed, bound = problem.t_end is not None, legs[0].bound
    checked = 0  # merged steps whose state has been checked
    while True:
        _run_all(legs, bound)
        merged = _Merged(legs)
        end, clean = (bound, checked) if fixed else _settle_end(rule, merged, checked, bound)
        steps = merged.steps
        upto = steps.size if end is None else min(int(np.searchsorted(steps, end)) + 1,
                                                   steps.size)
        if problem.system.domain_labels and clean < upto:
            edge = merged.first_events(clean, rule.constants, True, False)[0]
            if 0 <= edge < upto:
                merged.raise_edge(edge)
        checked = upto
        if end is None:
            _extend(legs, problem)
            bound = legs[0].bound
        elif end <= bound:
            return end, merged
        else:
            fixed, bound = True, end


def _run_all(legs: list[_Leg], bound: float) -> None:
    """Step every leg to ``bound``.  Should one fail, the others still are, as far as they go
    (each block is independent): the run up to where that one stopped is then whole, to keep
    the phases it reached."""
    failure = None
    for leg in legs:
        try:
            leg.run_to(bound)
        except DomainError as exc:
            failure = failure or exc
    if failure is not None:
        raise failure


def _settle_end(rule: _Rule, merged: _Merged, start: int,
                horizon: float) -> tuple[float | None, int]:
    """``(end, clean)``: the run's end if the rule holds at a merged step from ``start``
    (``horizon`` if it holds at the start), else None; the domain holds at the steps
    before ``clean``.  A compiled rule is scanned together with the domain."""
    if rule.native:
        m, what = merged.first_events(start, rule.constants, True, True)
        if what == 0:
            merged.raise_edge(m)
        clean = merged.steps.size if m < 0 else m
    else:
        m, clean = rule.first(merged, start), start
    if m < 0:
        return None, clean
    return (horizon if m == 0 else rule.end(merged, m)), clean if m else 0


def _crossing_arrays(system, crossings) -> tuple[np.ndarray, ...]:
    """The crossings as the twin's arrays: where each quantity is, its level, direction and
    whether it is monotone."""
    kinds, indices = [], []
    for c in crossings:
        kind, index = quantity_index(system, c.quantity)
        kinds.append(kind)
        indices.append(index)
    # Explicit dtypes: an empty list is float64 otherwise, another signature to compile.
    return (np.array(kinds, np.int64), np.array(indices, np.int64),
            np.array([c.level for c in crossings], float),
            np.array([c.direction for c in crossings], float),
            np.array([c.monotone for c in crossings], bool))


def compile_scans(twin) -> None:
    """Call each entry point of ``twin`` but the stepping once, on a tiny record with the
    argument types of a run (as :class:`_Merged`, :class:`BdfSolution` and
    :class:`NativeRun` pass them), so that numba compiles and caches them."""
    n = twin.N_COORDINATES
    r = _Record.empty(np.zeros(n), 2)
    r.ts[1], r.hs[1], r.orders[1], r.ds[1], r.count = 1.0, 1.0, 1, 0.0, 2
    # Stacked as a run stacks a leg's record: the same code, so the same types.
    record = _stacked([types.SimpleNamespace(record=r, index=np.arange(n), t0=0.0)])
    steps, y_steps = np.empty(2), np.empty((2, n))
    m = twin.merge(*record, steps, y_steps)
    args, constants = np.zeros(twin.N_ARGS), np.zeros(max(twin.N_CONSTANTS, 1))
    twin.first_events(steps[:m], y_steps[:m], 0, args, constants, True, True)
    twin.settle_time(0.0, 1.0, args, constants, *record)
    twin.dense_into(np.array([0.5]), *record, np.empty((1, n)))
    t = np.array([0.0, 1.0])
    # The outputs' arrays as wide as a run's: one state variable per coordinate.
    twin.outputs(t, args, steps[:m], y_steps[:m], *record, np.empty((2, n)),
                 np.empty((2, n)), np.empty((2, twin.N_SERIES)), *_crossing_arrays(None, []),
                 np.empty(0))


def _named_series(system, y: np.ndarray, states: np.ndarray,
                  values: np.ndarray) -> dict[str, np.ndarray]:
    """Every named series from the columns the native outputs filled."""
    series = {name: y[:, i].copy() for i, name in enumerate(system.coordinate_names)}
    series.update({name: states[:, i].copy() for i, name in enumerate(system.state_names)})
    series.update({name: values[:, i].copy() for i, name in enumerate(system.observable_names)})
    return series


class NativeBdf:
    """The native backend's stepper: SciPy's BDF ported to numba, on the system's twin, at a
    tenth of the tolerances (:data:`TIGHTER`), whatever method the solver names."""

    label = "native BDF"

    @staticmethod
    def run(problem: Problem) -> NativeRun:
        """Integrate ``problem`` natively until it settles (or to its ``t_end``)."""
        if problem.system.native:
            return _structured_run(problem)
        inner = dataclasses.replace(problem, rtol=max(problem.rtol * TIGHTER, _RTOL_FLOOR),
                                    atol=problem.atol * TIGHTER)
        twin, constants = _twin_for(inner)
        with engine_once(twin):
            return NativeBdf._run(twin, inner, constants)

    @staticmethod
    def _run(twin, inner: Problem, constants: np.ndarray) -> NativeRun:
        legs, rule = _legs(twin, inner, constants), _Rule(twin, inner, constants)
        try:
            if not inner.system.blocks:  # one block, even in log time, is a leg of blocks
                t_end = _step_whole(twin, inner, rule, legs[0])
                merged = _Merged(legs)
            else:
                t_end, merged = _integrate_blocks(twin, inner, rule, legs)
        except DomainError as exc:
            # The run up to where it stopped: where every leg has stepped (or the edge).
            t_stop = min(float(leg.times()[-1]) for leg in legs) if exc.t_stop is None \
                else exc.t_stop
            raise stopped(exc, NativeRun(twin, legs, _Merged(legs), t_stop), t_stop) from None
        return NativeRun(twin, legs, merged, t_end)


def _structured_run(problem: Problem):
    """A structured system with a native form (the unit sums' numba loops,
    :mod:`reduced_odes._native._unit_sums`): those callables, stepped by the pure path's
    stepper of the solver's method, at the requested tolerances.  The native BDF would
    compile anew for each size (its twin fixes the system's size); the loops do not."""
    from .._compile import as_compiled
    from .._steppers import stepper_for
    from ._unit_sums import native_structured

    system = problem.system
    native = as_compiled(system.model, system.variant, native_structured(system.native))
    return stepper_for("python", problem.method).run(dataclasses.replace(problem,
                                                                         system=native))


class NativeRun:
    """A native run: the legs, their merged record, and its end; its outputs computed by the
    twin (:class:`~reduced_odes._driver.Run`)."""

    label = "BDF (native)"

    def __init__(self, twin, legs: list[_Leg], merged: _Merged, end: float):
        self.twin, self.legs, self.merged, self.end = twin, legs, merged, end

    @property
    def dense(self) -> BdfSolution:
        return self.merged.dense()

    @property
    def atol_floor(self) -> dict[str, float]:
        """The log coordinates whose atol the floor raised at the tolerances the legs
        stepped at (a tenth of the requested ones, :data:`TIGHTER`)."""
        return self.legs[0].problem.floored()

    def outputs(self, problem: Problem, t: np.ndarray, t_end: float,
                crossings) -> tuple[dict[str, np.ndarray], dict[str, float]]:
        """The series at ``t`` and the phases up to ``t_end``, in one native call."""
        twin, merged, system = self.twin, self.merged, problem.system
        y = np.empty((t.size, problem.y0.size))
        states = np.empty((t.size, max(len(system.state_names), 1)))
        values = np.empty((t.size, twin.N_SERIES))
        times = np.empty(len(crossings))
        twin.outputs(t, self.legs[0].args, merged.steps, merged.y_steps, *merged.record, y,
                     states, values, *_crossing_arrays(system, crossings), times)
        # Steps past t_end (a chunk's overshoot under the Python stop rule, or a block's past
        # the common end) are not the run's.
        phases = {c.name: float(v) if v <= t_end else math.nan
                  for c, v in zip(crossings, times, strict=True)}
        return _named_series(system, y, states, values), phases

    def counts(self, t_end: float) -> tuple[int, int, int, int]:
        nfev, njev, nlu = (int(v) for v in sum(leg.stats for leg in self.legs))
        return nfev, njev, nlu, sum(int(np.searchsorted(leg.times(), t_end))
                                    for leg in self.legs)
