"""Phase times located by root-finding on a trajectory's dense output."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy.optimize import brentq

__all__ = ["first_crossing"]

#: brentq tolerances: far below the integrator's rtol (>= 1e-13 in practice),
#: so root-finding never limits the accuracy of a phase time.
_XTOL, _RTOL = 1e-300, 4 * np.finfo(float).eps


def first_crossing(level: Callable[[float], float], grid: np.ndarray,
                   values: np.ndarray | None = None) -> float:
    """First ``t`` at which ``level(t)`` reaches 0 from below.

    ``grid`` is a fine increasing time grid (the solver's own steps), on which
    the first sign change is bracketed; ``brentq`` then refines the root on
    the continuous ``level``.  Returns ``nan`` if ``level`` never reaches 0.

    Examples
    --------
    >>> import numpy as np
    >>> first_crossing(lambda t: t - 2.5, np.arange(5.0))
    2.5
    """
    values = np.array([level(t) for t in grid]) if values is None else np.asarray(values)
    reached = np.flatnonzero(values >= 0)
    if reached.size == 0:
        return math.nan
    i = int(reached[0])
    if i == 0:
        return float(grid[0])
    return float(brentq(level, grid[i - 1], grid[i], xtol=_XTOL, rtol=_RTOL))
