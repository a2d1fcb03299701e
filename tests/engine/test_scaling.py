"""Scaling laws of a single-index model the engine has never seen, written here anew (not
the one in examples/): the loss is derived from the Hermite polynomials' Gaussian
expectation, and the overlap integrated as ``ln m``.

The escape from ``m0 = d^(-1/2)`` to ``m = 1/2`` under ``dm/dt = k m^(k-1) (1 - m^2)``
takes ``~ d^((k-2)/2)`` for ``k >= 3`` and ``~ ln(d)/4`` for ``k = 2``."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest

from reduced_odes import ParameterError
from reduced_odes._scaling import fit_law, measure_scaling
from reduced_odes.author import Crossing, Model, Parameters, interval, parameter


@dataclass(frozen=True)
class SphereParams(Parameters):
    d: float = parameter(100.0, interval(2.0, 1e14), "dimension")


class HermiteTeacher(Model):
    name = "hermite_teacher_test"
    description = "spherical student, He_k teacher"
    Params = SphereParams
    variants = ("2", "3", "4")
    variant_option = "k"
    phase_order = ("T_half",)

    def derive(self, variant):
        import sympy as sp

        from reduced_odes.author import gaussian_expectation, gradient_flow, log_coordinate

        k = int(variant)
        m = sp.Symbol("m", positive=True)
        x1, x2 = sp.symbols("x1 x2", real=True)
        student, teacher = x1, m * x1 + sp.sqrt(1 - m**2) * x2  # correlation m
        overlap = gaussian_expectation(sp.expand(sp.hermite_prob(k, student)
                                                 * sp.hermite_prob(k, teacher)), [x1, x2])
        loss = sp.expand(1 - overlap.value / sp.factorial(k))
        return gradient_flow((m,), loss, parameters=(), mobility=sp.Matrix([[1 - m**2]]),
                             coordinates=(log_coordinate(m),), observables={"overlap": m})

    def parameter_values(self, params, variant):
        return ()

    def initial_state(self, params, variant):
        return (-0.5 * math.log(params.d),)

    def phases(self, params, variant, initial, thresholds):
        return [Crossing("T_half", "overlap", 0.5)]

    def settled(self, params, variant):
        return lambda y: abs(y[0]) - 1e-7  # ln m -> 0

    def horizon(self, params, variant):
        return 20.0 * (1 + params.d ** ((int(variant) - 2) / 2))


@pytest.mark.parametrize("k", [3, 4])
def test_power_law_exponent_of_the_escape(k):
    fit = measure_scaling(HermiteTeacher(), {}, "d", 1e2, 1e10, "T_half", variant=str(k))
    assert fit.law == "power" and fit.fit_ok
    # 0.01: the bar (measured: 1.2e-4; the O(d^-1/2) corrections bias the fit).
    assert abs(fit.exponent - (k - 2) / 2) < 0.01
    # 1e-3: the last local slope, at d ~ 1e10, is the exponent up to O(d^-1/2) ~ 1e-5.
    assert abs(fit.local_slopes[-1] - (k - 2) / 2) < 1e-3


def test_logarithm_for_k_2():
    fit = measure_scaling(HermiteTeacher(), {}, "d", 1e2, 1e10, "T_half", variant="2")
    assert fit.law == "log" and fit.exponent == 0.0
    # 1e-3: T = ln(d)/4 + const + O(1/d); the coefficient of ln d is 1/4.
    assert fit.coefficients["A"] == pytest.approx(0.25, abs=1e-3)


def test_a_bad_fit_says_so():
    x = np.logspace(2, 8, 13)
    fit = fit_law(x, np.exp(np.sqrt(x) / 1000))
    assert not fit.fit_ok and "no law fits" in fit.reason


def test_bad_input():
    with pytest.raises(ParameterError, match="from="):
        measure_scaling("deep_linear", {}, "sigma", 1e-3, 1e-5, "T_half")
    with pytest.raises(ParameterError, match="phase="):
        measure_scaling("deep_linear", {}, "sigma", 1e-5, 1e-3, "T_x")
    with pytest.raises(ParameterError, match="param="):
        measure_scaling("deep_linear", {}, "q", 1e-5, 1e-3, "T_half")
