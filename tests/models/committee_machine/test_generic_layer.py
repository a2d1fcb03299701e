"""The committee machine's fixed point and largest learning rate, found by the engine's
generic layer (Newton on the whole flow, pseudo-arclength continuation), against the values
the model reports (polished on its symmetric subspace, bisected on the exact Jacobian) and
the closed forms."""

from __future__ import annotations

import pytest

from reduced_odes.models.committee_machine import CommitteeParams
from reduced_odes.models.committee_machine.numerics import (
    closed_form_plateau,
    eta_max_by_continuation,
    largest_learning_rate,
    plateau_by_newton,
    unspecialised_fixed_point,
)


@pytest.mark.parametrize("eta", [0.0, 0.1])
def test_the_plateau_by_newton_is_the_reported_one(eta):
    params = CommitteeParams(K=2, M=2, eta=eta)
    reported, generic = unspecialised_fixed_point(params, "erf"), plateau_by_newton(params,
                                                                                   "erf")
    # 1e-12: two Newton polishes of the same point to round-off (measured: equal, or 1.5e-14
    # apart for K = 3 at eta = 0.1).
    assert generic.eps_g == pytest.approx(reported.eps_g, rel=1e-12)
    # 1e-9: the leading eigenvalue at points 1e-14 apart, of a Jacobian of norm ~1.
    assert generic.unstable[0] == pytest.approx(reported.unstable[0], rel=1e-9)
    if eta == 0.0:
        # 1e-10: the bar against Saad & Solla's closed form.
        assert abs(generic.eps_g - closed_form_plateau(2)) < 1e-10


def test_eta_max_by_continuation_is_the_reported_one():
    generic, reported = eta_max_by_continuation(2), largest_learning_rate(2)
    # 1e-7: continuation locates a loss of stability at a branch point (another branch of
    # fixed points crosses there) to ~1e-7 (docs/analysis.md); measured 1.6e-8.
    assert generic == pytest.approx(reported, rel=1e-7)
    # 1e-5: the bar against the quoted 2.30683 (five decimals given).
    assert abs(generic - 2.30683) < 1e-5 and abs(reported - 2.30683) < 1e-5
