"""One phase time of many settings on the native backend, without a trajectory.

A phase diagram reads one number per setting.  The whole :func:`~reduced_odes.solve`
also runs on after the phase until the state settles, interpolates the output grid,
evaluates every series there and assembles a :class:`~reduced_odes.Trajectory`: more
than half a setting's cost for the committee machine (``benchmarks/bench_phase_diagram.py``).
:func:`phase_time` steps the same native BDF from the same start in chunks of steps and
stops at the first chunk in which the phase is crossed, before the run's end.

The value is the one :func:`~reduced_odes.solve` gives, bit for bit: the steps up to the
crossing are the same (a native run is resumable at any step, so chunks do not change
them) and the crossing is read from them by the same native scan.  Where that cannot be
decided from the steps so far (the stop rule holds before the phase, a domain edge, a
staged model, independent blocks, a stop rule in Python, any failure) the setting is
solved whole, as :func:`~reduced_odes.solve` does it (with its fallback to the pure path).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from .._problem import Problem
from .._setting import Setting
from .._trajectory import DomainError, _series_at
from ._legs import _legs, _Merged
from ._solve import _RTOL_FLOOR, TIGHTER, _crossing_arrays, _extend, _Rule, _twin_for
from ._twin import engine_once

__all__ = ["phase_time"]

#: Native steps per call between two reads of the crossing: the committee machine escapes
#: in a few hundred steps, so a read costs about one chunk's stepping at most.
_CHUNK = 128


def phase_time(setting: Setting, phase: str) -> float | None:
    """The time of ``phase`` in ``setting``'s run on the native backend (None if the run
    does not reach it), as :func:`~reduced_odes.solve` gives it.

    Examples
    --------
    >>> from reduced_odes import Setting
    >>> from reduced_odes.models.deep_linear import DeepLinearParams
    >>> setting = Setting.from_mapping({"model": "deep_linear", "s": 2.0, "sigma": 1e-4,
    ...                                 "backend": "numba"})  # doctest: +SKIP
    >>> round(phase_time(setting, "T_half"), 4)  # doctest: +SKIP
    4.7785
    """
    found = _early(setting, phase)
    if found is not None:
        return found if math.isfinite(found) else None
    from .._integrate import solve  # the whole run, only where the early read cannot decide

    time = solve(setting).phases.get(phase, math.nan)
    return float(time) if math.isfinite(time) else None


def _early(setting: Setting, phase: str) -> float | None:
    """The phase's time from the steps up to its crossing; None where that cannot decide."""
    model = setting.model
    if model.supports("integrate") or setting.solver.t_end is not None or \
            setting.solver.cross_check:
        return None
    problem = Problem.of(setting)
    if problem.system.blocks or problem.system.path is None:
        return None
    inner = dataclasses.replace(problem, rtol=max(problem.rtol * TIGHTER, _RTOL_FLOOR),
                                atol=problem.atol * TIGHTER)
    twin, constants = _twin_for(inner)
    rule = _Rule(twin, inner, constants)
    crossing = _crossing_of(inner, phase)
    if not rule.native or crossing is None:
        return None
    try:
        with engine_once(twin):
            return _stepped_to(twin, inner, rule, crossing, _legs(twin, inner, constants)[0])
    except (DomainError, ArithmeticError):
        return None


def _crossing_of(problem: Problem, phase: str):
    """The model's crossing named ``phase`` (as :func:`~reduced_odes._driver.assemble` makes
    them, from the initial series), or None."""
    setting, system = problem.setting, problem.system
    initial = {k: float(v[0]) for k, v in _series_at(system, problem.y0[:, None],
                                                       problem.args).items()}
    crossings = setting.model.phases(setting.params, setting.variant, initial,
                                     setting.thresholds)
    return next((c for c in crossings if c.name == phase), None)


def _stepped_to(twin, problem: Problem, rule: _Rule, crossing, leg) -> float | None:
    """Step ``leg`` chunk by chunk (watching the compiled stop rule, as the whole run does)
    until the crossing is found before the run's end: its time; None if undecided."""
    arrays = _crossing_arrays(problem.system, [crossing])
    found = np.empty(1)
    scanned = 0  # merged steps before this one are not past the level
    leg.set_bound(leg.bound, watch=True)
    while True:
        status = leg.advance(leg.record.count + _CHUNK)
        if status in (twin.EDGE, twin.STARTED_SETTLED):
            return None
        merged = _Merged([leg])
        # From the last step scanned (not past the level), so a crossing in the first new
        # step is rooted between the two as in one scan of the whole run.
        twin.crossings(*arrays, merged.args, merged.steps[scanned:],
                       merged.y_steps[scanned:], *merged.record, found)
        scanned = max(merged.steps.size - 1, 0)
        time = float(found[0])
        if status == twin.SETTLED:  # the run ends at (1 + tail) t_s: decided only if before
            end = rule.end(merged, leg.record.count - 1)
            return time if time <= end else None
        if math.isfinite(time):  # the rule has not held at any step yet: the end is later
            return time
        if status == twin.REACHED:  # on to the next horizon, as the whole run goes
            _extend([leg], problem)
            leg.set_bound(leg.bound, watch=True)
