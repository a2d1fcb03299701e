"""Verdict rows from :func:`~reduced_odes.plateau_predictions`: each plateau's predicted
escape times and the predicted convergence rate, against the measured ones.

A model gets them as claims without writing the predictions: its ``measure`` hook keeps
``plateau_predictions(trajectory)`` in its record, and its ``claims`` hook passes each
record's predictions here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from ._claims import Claim

__all__ = ["prediction_claims"]


def _row(name: str, predicted, measured, tolerance: float, detail: str) -> Claim:
    predicted = math.nan if predicted is None else float(predicted)
    measured = math.nan if measured is None else float(measured)
    error = abs(predicted / measured - 1) if measured else math.nan
    return Claim(name, predicted, measured, error, tolerance,
                 bool(math.isfinite(error) and error <= tolerance), detail)


def prediction_claims(predictions: Mapping, *, escape_rtol: float = 0.02,
                      rate_rtol: float = 1e-3, from_plateau: bool = True,
                      label: str = "") -> list[Claim]:
    """One row per predicted phase of each plateau, and one for the convergence rate.

    Parameters
    ----------
    predictions : mapping
        :func:`~reduced_odes.plateau_predictions`' document.
    escape_rtol, rate_rtol : float
        The relative tolerances of the escape times and of the rate.
    from_plateau : bool
        Hold the escape predicted from the plateau (the unstable component read at the
        nearest approach; default) rather than from the start.
    label : str
        Appended to each row's name (e.g. the setting).

    Examples
    --------
    >>> rows = prediction_claims({"plateaus": [{"phases": {"T_escape": {
    ...     "predicted": 90.0, "measured": 100.0, "predicted_from_plateau": 99.0}}}],
    ...     "convergence": {"predicted_rate": 2.0, "measured_rate": 2.0}})
    >>> for row in rows:
    ...     print(row.name, round(row.error, 6), row.passed)
    T_escape from the saddle 0.01 True
    convergence rate from the slowest eigenvalue 0.0 True
    """
    suffix = f" ({label})" if label else ""
    key = "predicted_from_plateau" if from_plateau else "predicted"
    rows = [_row(f"{phase} from the saddle{suffix}", times.get(key), times.get("measured"),
                 escape_rtol, "linear escape from the saddle, one exact run of its "
                              "unstable manifold")
            for plateau in predictions.get("plateaus", [])
            for phase, times in plateau["phases"].items()]
    rate = predictions.get("convergence")
    if rate:
        rows.append(_row(f"convergence rate from the slowest eigenvalue{suffix}",
                         rate["predicted_rate"], rate["measured_rate"], rate_rtol,
                         "the final fixed point's slowest eigenvalue"))
    return rows
