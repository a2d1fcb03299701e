"""Statistics of repeated runs (seeds, independent samples): the one confidence interval."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

__all__ = ["t_interval"]


def t_interval(values: Iterable[float | None], confidence: float = 0.95) -> dict[str, Any]:
    """Mean and two-sided Student-t confidence interval of the finite values.

    Parameters
    ----------
    values : iterable of float or None
        One value per seed; non-finite values and None (phase not reached) are
        counted in ``n_missing`` and left out.
    confidence : float
        Coverage of the interval, in (0, 1).

    Returns
    -------
    dict
        ``mean, sd, n, n_missing, lo, hi``; with fewer than two finite values
        nothing bounds the mean: ``sd``, ``lo`` and ``hi`` are then ``nan``
        (and ``mean`` too when there is none).

    Examples
    --------
    >>> r = t_interval([1.0, 2.0, 3.0])
    >>> r["mean"], round(r["hi"] - r["mean"], 4)
    (2.0, 2.4841)
    >>> t_interval([4.0, float("nan"), None])["n_missing"]
    2
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence={confidence!r} is invalid: it must lie in (0, 1)")
    v = np.asarray([math.nan if x is None else x for x in values], dtype=float)
    ok = v[np.isfinite(v)]
    n = int(ok.size)
    out = {"mean": math.nan, "sd": math.nan, "n": n, "n_missing": int(v.size - n),
           "lo": math.nan, "hi": math.nan}
    if n == 0:
        return out
    out["mean"] = float(ok.mean())
    if n >= 2:
        from scipy import stats  # only here: importing the package stays cheap

        sd = float(ok.std(ddof=1))
        half = float(stats.t.ppf(0.5 + confidence / 2, n - 1)) * sd / math.sqrt(n)
        out.update(sd=sd, lo=out["mean"] - half, hi=out["mean"] + half)
    return out
