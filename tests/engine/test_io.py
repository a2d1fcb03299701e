"""The one JSON-safe encoding (``_io.json_safe``): plain values, rounding, non-finite values."""

from __future__ import annotations

import json
import math
from decimal import ROUND_HALF_EVEN, Context, Decimal

import numpy as np
import pytest

from reduced_odes._io import json_safe


def _significant(value: float, digits: int) -> float:
    """The independent reference: the exact binary value, rounded half-even in decimal."""
    return float(Context(prec=digits, rounding=ROUND_HALF_EVEN).plus(Decimal(value)))


@pytest.mark.parametrize("digits", [1, 4, 5, 10])
def test_rounding_agrees_with_decimal_arithmetic(digits):
    rng = np.random.default_rng(digits)
    values = rng.lognormal(0.0, 30.0, 500) * rng.choice([-1.0, 1.0], 500)
    values[:3] = [0.0, 2.5e-300, 123456.7]
    got = json_safe(values, digits=digits)
    assert got == [_significant(float(v), digits) for v in values]


def test_numpy_values_become_plain_and_keep_their_kind():
    document = {"n": np.int64(3), "flag": np.True_, "x": np.float32(0.5), 1: (1, "a")}
    got = json_safe(document, digits=5)
    assert got == {"n": 3, "flag": True, "x": 0.5, "1": [1, "a"]}
    assert [type(v) for v in got.values()] == [int, bool, float, list]
    # Integers and flags are never rounded (the same cases the figure data always kept).
    assert json_safe(np.array([123456.7, 0.000123456]), digits=5) == [123460.0, 0.00012346]
    assert json_safe({"N": 32, "flag": True}, digits=5) == {"N": 32, "flag": True}


def test_non_finite_values_are_null_with_a_reason_or_a_spelled_infinity():
    reasons = {}
    got = json_safe({"a": [1.0, math.nan], "b": {"c": -math.inf}}, reasons, digits=3)
    assert got == {"a": [1.0, None], "b": {"c": None}}
    assert reasons == {"/a/1": "NaN", "/b/c": "-Infinity"}
    assert json.loads(json.dumps(got, allow_nan=False)) == got  # strict JSON
    spelled = json_safe([math.inf, -math.inf, math.nan], infinity="inf")
    assert spelled == ["inf", "-inf", None]
