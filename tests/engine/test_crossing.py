"""The crossing finder (``_crossing``) against crossings known exactly."""

from __future__ import annotations

import math

import numpy as np
import pytest

from reduced_odes._crossing import first_crossing, first_index, root_in_step
from reduced_odes._params import ParameterError


def test_a_piecewise_linear_series_crosses_where_its_segment_does():
    # Linear between samples, so linear interpolation is exact: y = 2 t on [0, 1], then
    # 2 + (t - 1) / 2; it reaches 2.25 at t = 1.5 and 1.0 at t = 0.5.
    t = np.array([0.0, 1.0, 3.0])
    y = np.array([0.0, 2.0, 3.0])
    assert first_crossing(t, y, 2.25) == 1.5
    assert first_crossing(t, y, 1.0) == 0.5
    assert first_crossing(t[::-1] * -1, y[::-1], 1.0, direction=-1) == -0.5  # falling copy


def test_a_sampled_smooth_crossing_is_within_the_interpolation_bound():
    # y = 1 - exp(-t) reaches 1/2 at ln 2.  On a step h, the chord departs from y by at most
    # h^2 max|y''| / 8, which moves the crossing by that over min|y'|: h^2 e^h / 8 here.
    for n in (5, 41, 81, 801):
        t = np.linspace(0.0, 2.0, n)
        h = t[1]
        error = abs(first_crossing(t, 1 - np.exp(-t), 0.5) - math.log(2))
        assert error <= h**2 * math.exp(h) / 8


def test_already_crossed_never_crossed_and_strict():
    t = [0.0, 1.0, 2.0, 3.0]
    assert first_crossing(t, [5.0, 6.0, 7.0, 8.0], 1.0) == 0.0  # there from the start
    assert math.isnan(first_crossing(t, [0.0, 0.1, 0.2, 0.3], 1.0))
    # strict: a crossing needs a sample on the near side first; the first true crossing of
    # a series that starts past the level is the one after it comes back.
    assert math.isnan(first_crossing(t, [0.5, 0.4, 0.3, 0.2], 1.0, direction=-1, strict=True))
    assert first_crossing(t, [0.5, 2.0, 0.0, 0.0], 1.0, direction=-1, strict=True) == 1.5


def test_after_skips_earlier_samples():
    t = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    y = np.array([0.0, 1.0, 0.0, 0.0, 1.0])
    assert first_crossing(t, y, 0.5) == 0.5
    assert first_crossing(t, y, 0.5, after=2.0) == 3.5
    assert first_crossing(t, y, 1.0, after=1.0) == 1.0  # reached exactly at ``after``


def test_batches_keep_their_leading_axes():
    t = np.linspace(0.0, 1.0, 11)
    levels = np.array([[0.25, 0.55], [0.95, 2.0]])
    rows = np.broadcast_to(t, (2, 2, 11)) / levels[..., None] * 0.5  # crosses 0.5 at t=level
    found = first_crossing(t, rows, 0.5)
    assert found.shape == (2, 2)
    assert found[0, 0] == pytest.approx(0.25, abs=1e-15)  # linear: exact up to round-off
    assert found[0, 1] == pytest.approx(0.55, abs=1e-15)
    assert found[1, 0] == pytest.approx(0.95, abs=1e-15)
    assert math.isnan(found[1, 1])


def test_direction_must_be_a_sign():
    with pytest.raises(ParameterError, match="direction=0; allowed"):
        first_crossing([0.0, 1.0], [0.0, 1.0], 0.5, direction=0)


def test_bisection_finds_what_a_scan_finds():
    rng = np.random.default_rng(7)
    for _ in range(200):
        values = np.sort(rng.normal(size=int(rng.integers(1, 30))))
        scanned = next((i for i, v in enumerate(values) if v >= 0), None)
        assert first_index(lambda i, v=values: v[i], len(values), monotone=True) == scanned
        assert first_index(values) == scanned


def test_root_in_step_finds_a_cube_root():
    found = root_in_step(lambda t: np.array([t**3]), lambda v: v[0] - 2.0, 1.0, 2.0)
    # brentq's rtol is 4 eps: the root to a few units in the last place.
    assert found == pytest.approx(2 ** (1 / 3), rel=1e-15)
