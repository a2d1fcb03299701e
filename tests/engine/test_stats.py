"""The one confidence interval of repeated runs (seeds, independent samples)."""

from __future__ import annotations

import math

import pytest

from reduced_odes.author import t_interval


def test_t_interval_against_the_tabulated_t_quantile():
    r = t_interval([1.0, 2.0, 3.0, math.nan])
    assert r["n"] == 3 and r["n_missing"] == 1 and r["mean"] == 2.0
    # t_{0.975, 2} = 4.3027 (tables); sd = 1; half-width = 4.3027 / sqrt(3).
    assert r["hi"] - r["mean"] == pytest.approx(4.302653 / math.sqrt(3), rel=1e-5)
    assert r["mean"] - r["lo"] == pytest.approx(r["hi"] - r["mean"], rel=1e-15)
    with pytest.raises(ValueError, match="confidence"):
        t_interval([1.0, 2.0], confidence=1.5)


def test_t_interval_of_fewer_than_two_values_bounds_nothing():
    one = t_interval([5.0, None, math.inf])
    assert (one["mean"], one["n"], one["n_missing"]) == (5.0, 1, 2)
    assert all(math.isnan(one[k]) for k in ("sd", "lo", "hi"))
    none = t_interval([])
    assert none["n"] == 0 and math.isnan(none["mean"])
