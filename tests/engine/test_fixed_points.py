"""Fixed points of the deep linear network: the exact line ``a b = s`` and its eigenvalues.

In ``(ln a, ln b)`` the flow is ``d ln a/dt = (b/a)(s - ab)``; on ``ab = s`` its Jacobian
is ``[[-b^2, -b^2], [-a^2, -a^2]]``, with eigenvalues ``0`` (along the line, the balance
law) and ``-(a^2 + b^2)``: written here by hand.
"""

from __future__ import annotations

import math

import pytest

from reduced_odes import ParameterError
from reduced_odes._fixed_points import Flow, classify, find_fixed_points, newton


@pytest.mark.parametrize(("s", "seed"), [(1.0, (0.3, 2.0)), (4.0, (2.0, 2.0)),
                                         (0.01, (0.5, 0.01))])
def test_deep_linear_fixed_points_are_exact(s, seed):
    points = find_fixed_points("deep_linear", {"s": s}, seeds=[dict(zip("ab", seed, strict=True))],
                               trajectory=False)
    assert len(points) == 1
    point = points[0]
    a, b = point.state["a"], point.state["b"]
    # 1e-13: Newton stops at round-off of rates ~ s.
    assert abs(a * b - s) < 1e-13 * s
    exact = sorted([0.0, -(a * a + b * b)], reverse=True)
    # 1e-12 relative: eigenvalues of a 2x2 Jacobian of entries ~ s, at round-off.
    assert point.eigenvalues.real.tolist() == pytest.approx(exact, rel=1e-12, abs=1e-12 * s)
    assert point.kind == "stable" and point.unstable_dimension == 0


def test_trajectory_seeds_find_the_end():
    points = find_fixed_points("deep_linear", {"s": 2.0, "sigma": 1e-3})
    # The run starts at a = b, and the balance law keeps a = b: the end is a = b = sqrt(2).
    assert [p.kind for p in points] == ["stable"]
    # 1e-9: the run's end is within the stop rule's 1e-9 of the line, and Newton goes to it.
    assert points[0].state["a"] == pytest.approx(math.sqrt(2), rel=1e-9)


def test_newton_fails_cleanly_outside_and_far():
    flow = Flow.of("deep_linear", {"s": 1.0})
    assert newton(flow, [math.nan, 0.0]) is None
    assert classify(flow, [0.0, 0.0]).residual == 0.0


def test_bad_seed_names_the_variables():
    with pytest.raises(ParameterError, match="seed="):
        find_fixed_points("deep_linear", {"s": 1.0}, seeds=[[1.0, 2.0, 3.0]], trajectory=False)
    with pytest.raises(ParameterError, match="initial"):
        find_fixed_points("deep_linear", {"s": 1.0}, seeds=[{"a": 1.0}], trajectory=False)


def test_newton_stops_cleanly_where_the_rates_overflow():
    """A seed where the rates overflow (exp(ln a) with ln a = 1e6) is refused, not raised."""
    flow = Flow.of("deep_linear", {"s": 1.0})
    assert newton(flow, [1e6, 0.0]) is None
