"""The one crossing finder: the first time a quantity reaches a level.

A crossing is bracketed on a grid of samples (a solver's accepted steps, or
an SGD run's records) as the first sample with ``g = direction * (value -
level) >= 0``, then refined on the continuous interpolant between the two
samples: by ``brentq`` on a dense output, or linearly between samples.

A phase (:class:`~reduced_odes.Crossing`) of a stepper's run is found by
:func:`crossing_time`, on the run's accepted steps and their interpolants.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from ._compile import CompiledSystem
from ._params import ParameterError
from ._stop_rules import Crossing

__all__ = ["crossing_time", "first_crossing", "first_index", "quantity_index", "root_in_step"]

#: brentq tolerances: far below any integrator's rtol (>= 1e-13 in practice),
#: so root-finding never limits the accuracy of a phase time.
_XTOL, _RTOL = 1e-300, 4 * np.finfo(float).eps


def first_index(g: Callable[[int], float] | Sequence[float], n: int | None = None, *,
                monotone: bool = False) -> int | None:
    """Index of the first sample with ``g >= 0``, or None.

    ``g`` is an array of values, or a function of the sample index (evaluated
    lazily); ``monotone`` (non-decreasing ``g``) finds it by bisection.

    Examples
    --------
    >>> first_index([-2.0, -1.0, 0.5, 2.0]), first_index(lambda i: i - 2.5, 6, monotone=True)
    (2, 3)
    """
    if not callable(g):
        hits = np.flatnonzero(np.asarray(g, dtype=float) >= 0)
        return int(hits[0]) if hits.size else None
    if monotone:
        lo, hi = 0, n - 1
        if g(hi) < 0:
            return None
        if g(lo) >= 0:
            return 0
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if g(mid) < 0 else (lo, mid)
        return hi
    return next((i for i in range(n) if g(i) >= 0), None)


def root_in_step(segment: Callable[[float], np.ndarray], g: Callable[[np.ndarray], float],
                 t_lo: float, t_hi: float) -> float:
    """First ``t`` in ``[t_lo, t_hi]`` with ``g(segment(t)) >= 0`` (a sign change there).

    Examples
    --------
    >>> root_in_step(lambda t: np.array([t]), lambda v: v[0] - 2.5, 2.0, 3.0)
    2.5
    """
    from scipy.optimize import brentq

    g_lo, g_hi = g(segment(t_lo)), g(segment(t_hi))
    if g_lo >= 0:
        return t_lo
    if g_hi < 0:  # interpolation round-off at the step end: the step end is the crossing
        return t_hi
    return float(brentq(lambda s: g(segment(s)), t_lo, t_hi, xtol=_XTOL, rtol=_RTOL))


def first_crossing(t, y, level: float, *, direction: int = 1, after: float | None = None,
                   strict: bool = False):
    """First time sampled ``y`` reaches ``level``, linearly interpolated between samples.

    ``direction=+1``: the first sample with ``y >= level`` (from below); ``-1``: with
    ``y <= level`` (from above).  Only samples at ``t >= after`` count, if given.  A
    series that is already there at its first counted sample has crossed then, unless
    ``strict``: then a crossing needs a sample on the near side before it (an SGD run that
    starts past the level has not crossed it).  ``nan`` if never.

    ``y`` may carry leading axes (one row per run); the answer then has their shape.

    Examples
    --------
    >>> first_crossing([0.0, 1.0, 2.0], [0.0, 1.0, 3.0], 2.0)
    1.5
    >>> first_crossing([0.0, 1.0], [[1.0, 0.0], [1.0, 0.9]], 0.5, direction=-1).tolist()
    [0.5, nan]
    >>> first_crossing([0.0, 1.0, 2.0], [0.2, 0.1, 0.6], 0.5, direction=-1, strict=True)
    nan
    """
    if direction not in (-1, 1):
        raise ParameterError(f"direction={direction!r}; allowed: -1 (downwards), 1 (upwards)")
    t, y = np.asarray(t, dtype=float), np.asarray(y, dtype=float)
    if y.ndim > 1:
        rows = [first_crossing(t, row, level, direction=direction, after=after, strict=strict)
                for row in y.reshape(-1, y.shape[-1])]
        return np.array(rows).reshape(y.shape[:-1])
    side = direction * (y - level)  # < 0 before the crossing, >= 0 at or after it
    counted = np.ones(side.shape, dtype=bool) if after is None else t >= after
    if strict:
        near = np.flatnonzero(side < 0)
        counted &= np.arange(side.size) > (near[0] if near.size else side.size)
    i = first_index(np.where(counted, side, -np.inf))
    if i is None:
        return math.nan
    if i == 0 or side[i - 1] >= 0:
        return float(t[i])
    frac = (level - y[i - 1]) / (y[i] - y[i - 1])
    return float(t[i - 1] + frac * (t[i] - t[i - 1]))


def quantity_index(system: CompiledSystem, quantity: str) -> tuple[int, int]:
    """Where the series ``quantity`` of ``system`` is: ``(kind, index)``, kind 0 for an
    integration coordinate, 1 for a state variable, 2 for an observable.

    Examples
    --------
    >>> from reduced_odes.models.deep_linear import MODEL
    >>> from reduced_odes import load_system
    >>> system = load_system(MODEL, "default")
    >>> [quantity_index(system, name) for name in ("log_a", "b", "u")]
    [(0, 0), (1, 1), (2, 0)]
    """
    for kind, names in enumerate((system.coordinate_names, system.state_names,
                                  system.observable_names)):
        if quantity in names:
            return kind, names.index(quantity)
    allowed = system.coordinate_names + system.state_names + system.observable_names
    raise ParameterError(f"phase quantity {quantity!r} is not a series of {system.model}; "
                         f"allowed: {', '.join(allowed)}")


def _evaluator(system: CompiledSystem, args, quantity: str) -> Callable[[np.ndarray], float]:
    """``value(y)`` of the series ``quantity`` at coordinates ``y``."""
    kind, i = quantity_index(system, quantity)
    if kind == 0:
        return lambda v: v[i]
    source = system.state if kind == 1 else system.observables
    return lambda v: source(v, *args)[i]


def crossing_time(system: CompiledSystem, args, run, crossing: Crossing,
                  searched: int | None = None) -> float:
    """First time ``crossing.quantity`` reaches ``crossing.level`` within the first
    ``searched`` accepted steps of ``run`` (default: all; NaN if it never does).

    ``run`` has the steps' times ``steps``, the states there ``y_steps`` (one column each)
    and ``segment(k)``, the interpolant of the step ``(k, k + 1]``
    (:class:`~reduced_odes._driver.StepRun`).
    """
    value = _evaluator(system, args, crossing.quantity)
    sign, level = crossing.direction, crossing.level

    def g(v) -> float:
        return sign * (value(v) - level)

    steps, y_steps = run.steps[:searched], run.y_steps[:, :searched]
    if crossing.quantity in system.coordinate_names:  # a whole row at once
        i = first_index(sign * (y_steps[system.coordinate_names.index(crossing.quantity)] - level))
    else:
        i = first_index(lambda k: g(y_steps[:, k]), len(steps), monotone=crossing.monotone)
    if i is None:
        return math.nan
    if i == 0:
        return float(steps[0])
    return root_in_step(run.segment(i - 1), g, float(steps[i - 1]), float(steps[i]))
