"""The one crossing finder: the first time a quantity reaches a level.

A crossing is bracketed on a grid of samples (a solver's accepted steps, or
an SGD run's records) as the first sample with ``g = direction * (value -
level) >= 0``, then refined on the continuous interpolant between the two
samples: by ``brentq`` on a dense output, or linearly between samples.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from ._params import ParameterError

__all__ = ["first_crossing", "first_index", "root_in_step"]

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
