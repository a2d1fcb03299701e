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

__all__ = ["first_index", "first_sample_crossing", "root_in_step"]

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


def first_sample_crossing(t, y, level: float, *, direction: int = 1) -> float:
    """First time sampled ``y`` reaches ``level``, linearly interpolated between samples.

    ``direction=+1``: first ``y >= level``; ``-1``: first ``y <= level``.
    Returns ``t[0]`` if already crossed, ``nan`` if never.

    Examples
    --------
    >>> first_sample_crossing([0.0, 1.0, 2.0], [0.0, 1.0, 3.0], 2.0)
    1.5
    """
    t, y = np.asarray(t, dtype=float), np.asarray(y, dtype=float)
    i = first_index(direction * (y - level))
    if i is None:
        return math.nan
    if i == 0:
        return float(t[0])
    frac = (level - y[i - 1]) / (y[i] - y[i - 1])
    return float(t[i - 1] + frac * (t[i] - t[i - 1]))
