"""What the two ground truths of the induction head share (:mod:`.sgd_compare`, exact-softmax
SGD, and :mod:`.ground_truth`, the population flow): the reduced-ODE runs they are
compared with, JSON-safe results, ratios and the cells of their Markdown tables."""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np

__all__ = ["cell", "json_safe", "ratio", "reduced_run"]


def json_safe(value: Any) -> Any:
    """Recursively convert numpy types and non-finite floats to JSON-safe values."""
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    if isinstance(value, np.ndarray):
        return [json_safe(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


@lru_cache(maxsize=256)
def reduced_run(L: int, alpha: float, wstar: float, sigma: float, closure: str):
    """The reduced-ODE trajectory, or the error message if the solver fails."""
    from reduced_odes import solve  # the ODE side; imported lazily

    from .params import ModelParams

    try:
        return solve(ModelParams(L=L, alpha=alpha, wstar=wstar, sigma=sigma), closure)
    except Exception as exc:  # reported in the results, never hidden
        return f"{type(exc).__name__}: {exc}"


def ratio(a: float, b: float) -> float:
    """``a / b``, or NaN unless both are finite and ``b`` is not 0."""
    return a / b if (math.isfinite(a) and math.isfinite(b) and b != 0) else math.nan


def cell(v: Any, digits: int = 4) -> str:
    """A table cell: ``—`` for None, ``∞`` for ``"inf"``, yes/no, or ``digits`` digits.

    Examples
    --------
    >>> cell(None), cell("inf"), cell(True), cell(3), cell(2 / 3, 3)
    ('—', '∞', 'yes', '3', '0.667')
    """
    if v is None:
        return "—"
    if isinstance(v, str):
        return "∞" if v == "inf" else v
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return str(v)
    return f"{v:.{digits}g}"
