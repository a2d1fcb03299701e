"""What the two ground truths of the induction head share (:mod:`.sgd_compare`, exact-softmax
SGD, and :mod:`.ground_truth`, the population flow): the reduced-ODE runs they are
compared with, JSON-safe results, ratios and the cells of their Markdown tables."""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

__all__ = ["cell", "json_safe", "ratio", "reduced_run"]


def json_safe(value: Any) -> Any:
    """``value`` as strict JSON, an infinite float spelled ``"inf"`` (``"-inf"``): an
    unbounded ``p`` is a result, a missing one (None) is not.

    Examples
    --------
    >>> json_safe({"p": float("inf"), "T": float("nan")})
    {'p': 'inf', 'T': None}
    """
    from reduced_odes.author import json_safe as encoded

    return encoded(value, infinity="inf")


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
