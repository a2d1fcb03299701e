"""The shipped user model ``examples/phase_retrieval.py``: its derived loss and flow against
the hand computation, and its ln(d)/(2 lambda) claim through ``verify``."""

from __future__ import annotations

from pathlib import Path

import sympy as sp

from reduced_odes import assert_same, get_model, verify

EXAMPLE = f"{Path(__file__).parents[2] / 'examples' / 'phase_retrieval.py'}:MODEL"


def test_loss_and_flow_equal_the_hand_computation():
    d = get_model(EXAMPLE).derive("default")
    m, r = d.state
    # Isserlis: E[u^4] = 3 r^2, E[u^2 v^2] = r + 2 m^2, E[v^4] = 3.
    assert sp.expand(d.loss - (3 * r**2 - 2 * r - 4 * m**2 + 3) / 2) == 0
    # w' = -grad_w L with m = w.w*, r = |w|^2: m' = -(L_m + 2 m L_r), r' = -(2 m L_m + 4 r L_r).
    assert_same(d.rhs[0], 6 * m * (1 - r))
    assert_same(d.rhs[1], 8 * m**2 + 4 * r - 12 * r**2)


def test_escape_time_grows_like_ln_d_over_twice_the_saddle_rate(tmp_path):
    report = verify(EXAMPLE, "quick", out=tmp_path, max_workers=1, progress=False)
    assert report.passed, report.table()
    (claim,) = report.claims
    assert abs(claim.predicted - 1 / 8) < 1e-12  # lambda = 4 at the saddle (m, r) = (0, 1/3)
