"""The Stage-II syntactic lag (spec 6.7, 7.4): derived estimate, the spec's typed one, measurement.

The package derives the quasi-static lag from the Gram matrix of ``(A, B)``
(section 6.5), whose ``G_AA = γ⁴a² + 2v²γ⁴a/d_P`` keeps the value's term
``γ⁴a²``.  The spec's typed 6.7 formula keeps only ``2v²γ⁴a/d_P``, so it is
larger by the factor ``1 + d_P a/(2v²)`` (1.39 on entering the default plateau, 1.14
at the peak of the lag).
Measured against the derived estimate the lag ratio is 0.987-0.999 on the
default grid; against the spec's formula it is 0.83-0.90.  Both lie in the
spec's [0.7, 1]; the claim row names the derived estimate.
"""

import math

import numpy as np
import pytest

from reduced_odes.models.two_stage_features import TwoStageParams
from reduced_odes.models.two_stage_features.claims import lag_share, measure, peak
from reduced_odes.models.two_stage_features.numerics import lag_estimate

from . import reference as ref

POINTS = [(TwoStageParams(), 2.1, 1.7, 0.3, 1.5),
          (TwoStageParams(d_P=3, gamma=1.5, N=8), 1.4, 0.9, 0.2, 0.8),
          (TwoStageParams(pi_P=0.3, d_Q=16), 3.0, 0.5, 1.1, 5.0)]


@pytest.fixture(scope="module")
def stage_two():
    return {sigma: measure({"sigma": sigma, "variant": "relu"})["stage_two"]
            for sigma in (1e-4, 1e-300)}


@pytest.mark.parametrize("p, v, a, b, B", POINTS)
def test_spec_lag_formula_omits_the_value_term_of_G_AA(p, v, a, b, B):
    derived = float(lag_estimate(p, v, a, b, B))
    # Pure algebra between two closed forms: agreement to rounding.
    factor = 1 + p.d_P * a / (2 * v**2)
    assert ref.spec_lag(p, v, a, b, B) / derived == pytest.approx(factor, rel=1e-12)


def test_measured_lag_lies_in_the_spec_band_for_both_estimates(stage_two):
    p, window = TwoStageParams(sigma=1e-4), stage_two[1e-4]
    derived = lag_share(p, window)
    rise = {k: np.asarray(window["rise"][k]) for k in ("v", "eig_P", "eig_Q", "B")}
    spec_estimate = ref.spec_lag(p, rise["v"], rise["eig_P"], rise["eig_Q"], rise["B"])
    spec = window["max_lag"] / peak(spec_estimate)
    # Spec 7.4: the measured maximum lies in [0.7, 1] times the estimate's maximum.
    assert 0.7 <= spec < derived <= 1.0


def test_lag_ratio_does_not_depend_on_sigma(stage_two):
    p = TwoStageParams()
    shares = [lag_share(p, stage_two[s]) for s in (1e-4, 1e-300)]
    # Stage II is the same curve shifted in time once sigma^{2(1-kappa)} is negligible; a coarse
    # sampling of the peak (what the output grid gives at sigma = 1e-300) breaks this by ~8%.
    assert shares[1] == pytest.approx(shares[0], rel=1e-3)
    assert all(math.isfinite(s) for s in shares)
