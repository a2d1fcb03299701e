"""The symmetric flow with K and M as numbers (``symmetric_online_sgd``) against the full
flow's fixed point and Jacobian at small widths, and against Saad & Solla's closed-form
plateau at any width."""

from __future__ import annotations

import math

import numpy as np
import pytest

from reduced_odes import solve
from reduced_odes.models.committee_machine import CommitteeParams
from reduced_odes.models.committee_machine.numerics import (
    closed_form_plateau,
    symmetric_plateau,
    unspecialised_fixed_point,
)


@pytest.mark.parametrize("variant, K, M, eta", [
    ("erf", 2, 2, 0.0), ("erf", 3, 3, 0.0), ("erf", 3, 2, 0.0), ("relu", 2, 2, 0.0),
    # numerical kernels (tanh's two-dimensional ones, ReLU's orthant terms at eta > 0, ~8 s
    # by their NumPy rule)
    ("tanh", 2, 2, 0.0), pytest.param("relu", 2, 2, 0.1, marks=pytest.mark.slow),
    pytest.param("erf", 2, 2, 0.1, marks=pytest.mark.slow)])
def test_symmetric_flow_equals_the_full_flow(variant, K, M, eta):
    full = unspecialised_fixed_point(CommitteeParams(K=K, M=M, eta=eta), variant)
    reduced = symmetric_plateau(K, M, eta, 0.0, variant)
    # Two Newton solves (xtol 1e-15) of the same equations: round-off.
    assert abs(reduced.eps_g / full.eps_g - 1) < 1e-10, (reduced.eps_g, full.eps_g)
    # The specialising mode's rate is the full Jacobian's largest growth rate (the plateau's
    # escape direction), to round-off of the eigensolver.
    assert abs(reduced.escape_rate / full.unstable[0] - 1) < 1e-9, (reduced, full.unstable)


@pytest.mark.parametrize("K", [2, 7, 40, 1000])
def test_plateau_equals_the_closed_form_at_any_width(K):
    plateau = symmetric_plateau(K, K)
    # Newton to xtol 1e-15 on O(1/K) overlaps; the closed form loses ~1e-13 to cancellation
    # (pi/6 - K asin(1/2K) ~ 1/K^2) at K = 1000.
    assert abs(plateau.eps_g / closed_form_plateau(K) - 1) < 1e-9
    assert plateau.escape_rate > 0 and np.all(plateau.eigenvalues.real < 1e-9)
    assert math.isfinite(plateau.escape_time(1e-3))


def test_escape_rate_predicts_how_t_escape_moves_with_the_asymmetry():
    """T_escape = ln(1/asymmetry)/rate + a slowly varying rest: two runs of the full flow, a
    hundredfold apart in asymmetry, differ by about ln(100)/rate."""
    times = [solve(CommitteeParams(asymmetry=a), "erf").phases["T_escape"]
             for a in (1e-4, 1e-6)]
    plateau = symmetric_plateau(2, 2)
    predicted = plateau.escape_time(1e-6) - plateau.escape_time(1e-4)
    # Leading order only: the plateau's marginal directions at eta -> 0 (zero eigenvalues)
    # make the growth slower than a pure exponential, measured 5.07 % here; a wrong rate (a
    # factor, or another mode's: the next is <= 0) would be off by far more than 6 %.
    assert abs((times[1] - times[0]) / predicted - 1) < 0.06, (times, predicted)


def test_a_numerical_activation_has_its_plateau_at_any_width():
    """tanh at K = M = 1000 (its kernels numerical, no closed form): a fixed point of the
    symmetric flow, with the escape direction growing; the numbers are held at K = M = 2 to
    the full flow above, and at K = M = 7 (unit sums) by the slow test below."""
    plateau = symmetric_plateau(1000, 1000, variant="tanh")
    assert math.isfinite(plateau.eps_g) and plateau.escape_rate > 0
    # Within the subspace it attracts, up to a marginal direction: 1e-9 of the largest
    # modulus (measured: +2.4e-8 against -1999).
    assert np.max(plateau.eigenvalues.real) < 1e-9 * np.max(np.abs(plateau.eigenvalues))


@pytest.mark.slow
def test_tanh_symmetric_plateau_equals_the_unit_sums_beyond_the_unrolled_sizes():
    full = unspecialised_fixed_point(CommitteeParams(K=7, M=7), "tanh")
    reduced = symmetric_plateau(7, 7, variant="tanh")
    # Two Newton solves of the same equations, kernels to 1e-10: 1e-9.
    assert abs(reduced.eps_g / full.eps_g - 1) < 1e-9
    assert abs(reduced.escape_rate / full.unstable[0] - 1) < 1e-8


def test_numerical_learning_rate_terms_are_refused_in_one_line():
    from reduced_odes import ParameterError

    with pytest.raises(ParameterError, match=r"eta=0\.1 with activation 'tanh'") as info:
        symmetric_plateau(2, 2, 0.1, 0.0, "tanh")
    assert "allowed" in str(info.value) and "\n" not in str(info.value)


@pytest.mark.slow
def test_relu_symmetric_flow_has_the_fold_of_the_full_flow():
    """ReLU's eta_max (the full flow's plateau fold, by continuation) from the symmetric
    flow, a separate derivation: its plateau exists 1e-5 below (relative) and the fold is
    where its Jacobian is singular (its smallest eigenvalue ~ sqrt of the distance)."""
    from reduced_odes.models.committee_machine.numerics import plateau_fold

    eta_max = plateau_fold(2, "relu")
    near = symmetric_plateau(2, 2, (1 - 1e-5) * eta_max, 0.0, "relu")
    far = symmetric_plateau(2, 2, 0.5 * eta_max, 0.0, "relu")
    slowest = np.min(np.abs(near.eigenvalues.real))
    # At 1e-5 below a saddle-node the slowest rate is O(sqrt(1e-5)) ~ 3e-3 of the others.
    assert slowest < 1e-2 * np.min(np.abs(far.eigenvalues.real)), (near, far)
