"""Verdict rows from :func:`~reduced_odes.plateau_predictions`: each plateau's predicted
escape times and the predicted convergence rate, against the measured ones.

A model gets them as claims without writing any hook: it declares, as data, a
:class:`PredictionClaims` (its settings per grid and the tolerances) as its
``claimed_predictions``, which then supplies ``verify_settings``, ``measure`` (a solve and
its ``plateau_predictions``) and ``claims`` (:func:`prediction_claims` of each record).  A
model with hooks of its own can call :func:`prediction_claims` from its ``claims`` hook.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ._claims import Claim
from ._params import ParameterError

__all__ = ["PredictionClaims", "prediction_claims"]


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


@dataclass(frozen=True)
class PredictionClaims:
    """A model's claims as data: at each setting of a grid, the escape time predicted from
    each saddle the run passes and the predicted convergence rate hold against the measured
    ones, within ``escape_rtol`` and ``rate_rtol`` (:func:`prediction_claims`).

    Declared as a model's ``claimed_predictions``, it supplies the model's
    ``verify_settings``, ``measure`` and ``claims``: ``reduced-odes verify`` runs it.

    Parameters
    ----------
    settings : mapping of str to a sequence of mappings
        Each grid's settings: parameter values (and the variant under the model's
        ``variant_option``), as ``sweep`` takes them.  The grids must be the model's.
    escape_rtol, rate_rtol, from_plateau
        As :func:`prediction_claims` takes them.

    Examples
    --------
    >>> from reduced_odes.models import get_model
    >>> declared = PredictionClaims({"quick": [{"s": 2.0, "sigma": 1e-4}]}, rate_rtol=1e-2)
    >>> record = declared.measure(get_model("deep_linear"), {"s": 2.0, "sigma": 1e-4})
    >>> [(c.name, c.passed) for c in declared.claims([{"setting": {}, "result": record}])]
    [('convergence rate from the slowest eigenvalue', True)]
    """

    settings: Mapping[str, Sequence[Mapping[str, Any]]]
    escape_rtol: float = 0.02
    rate_rtol: float = 1e-3
    from_plateau: bool = True

    def __post_init__(self):
        for name in ("escape_rtol", "rate_rtol"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and 0 < value < 1):
                raise ParameterError(f"{name}={value!r}; allowed: a number in (0, 1)")

    def verify_settings(self, model, grid: str, variants: Sequence[str]
                        ) -> tuple[list[dict], list[dict]]:
        """The settings of ``grid``, one per variant (of a model that has more than one)
        unless a setting names its own."""
        if grid not in self.settings:
            raise ParameterError(f"grid={grid!r}; allowed: {', '.join(self.settings)} (the "
                                 f"grids model {model.name!r} declares predictions for)")
        option = model.variant_option
        if len(model.variants) == 1:
            return [dict(s) for s in self.settings[grid]], []
        return [dict(s) if option in s else {**s, option: v} for s in self.settings[grid]
                for v in (variants if option not in s else [None])], []

    def measure(self, model, setting: Mapping[str, Any]) -> dict:
        """The setting's run: its predictions beside the measured times and rate."""
        from ._integrate import solve
        from ._plateaus import plateau_predictions
        from ._setting import Setting

        return {"predictions": plateau_predictions(solve(Setting.from_mapping(setting,
                                                                               model)))}

    def claims(self, records: Sequence[Mapping[str, Any]]) -> list[Claim]:
        """Every record's rows, each labelled with its setting."""
        return [row for record in records for row in prediction_claims(
            record["result"]["predictions"], escape_rtol=self.escape_rtol,
            rate_rtol=self.rate_rtol, from_plateau=self.from_plateau,
            label=", ".join(f"{k}={v}" for k, v in record["setting"].items()
                            if k != "model"))]
