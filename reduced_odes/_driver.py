"""What both integration drivers share: the run record, domain guards and diagnostics."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ._compile import CompiledSystem
from ._params import ModelParams
from ._trajectory import DomainError

#: Phase IV is taken as reached once w_kq is within this relative distance of
#: w_star; the run then continues for ``_TAIL_FACTOR`` times the elapsed time so
#: that the exponential decay of L_IH and the algebraic tail t * L_G4 -> 1/4 are
#: both resolved.
_NEAR_FIXED_POINT = 1e-6
_TAIL_FACTOR = 1.0
#: Largest horizon tried before giving up (far beyond any O(L ln(1/sigma)) plateau).
_T_MAX = 1e18
#: Exceptions that evaluating the compiled flow outside its domain can raise
#: (``math.sqrt`` of a negative number, a complex power converted to float, ...).
_EVALUATION_ERRORS = (ValueError, TypeError, OverflowError, ZeroDivisionError)


@dataclass
class _Run:
    """What a driver hands to ``_assemble``."""

    dense: Callable  # dense(t) -> state, OdeSolution-like
    steps: np.ndarray  # accepted step times, from t0
    y_steps: np.ndarray  # (4, steps) states there
    segment: Callable[[int], Callable[[float], np.ndarray]]  # interpolant of step (k-1, k]
    nfev: int
    njev: int
    nlu: int


def _guarded(system: CompiledSystem) -> tuple[Callable, Callable]:
    """``rhs, jac`` that return NaN instead of raising outside the domain.

    The integrators evaluate the flow at trial states (predictor values, Newton
    iterates) that a large step may carry outside the closure's domain; a NaN
    makes them reject that step and retry a smaller one, where an exception
    would abort the whole run.  Accepted states are checked to be finite and
    inside the domain, so no NaN reaches a trajectory.
    """
    rhs, jac = system.rhs, system.jac
    nan_rates, nan_jac = [math.nan] * 4, [[math.nan] * 4 for _ in range(4)]

    def guarded_rhs(t, y, *args):
        try:
            return rhs(t, y, *args)
        except _EVALUATION_ERRORS:
            return nan_rates

    def guarded_jac(t, y, *args):
        try:
            return jac(t, y, *args)
        except _EVALUATION_ERRORS:
            return nan_jac

    return guarded_rhs, guarded_jac


def _edge_error(system: CompiledSystem, closure: str, params: ModelParams, t: float,
                y) -> DomainError:
    return DomainError(
        f"trajectory reached the boundary of the {closure!r} domain at t={t:.6g}: "
        f"{_violated(system, y, params)}; state (w_v1, p, w_v2, w_kq) = "
        f"({y[0]:.6g}, {y[1]:.6g}, {y[2]:.6g}, {math.exp(y[3]):.6g})")


def _violated(system, y, params) -> str:
    margins = system.margins(y, params.alpha, params.wstar, float(params.L))
    worst = int(np.argmin(margins))
    return f"condition {system.domain_labels[worst]} fails (margin {margins[worst]:.3g})"


def _describe(system, y, params) -> str:
    """The state and its nearest domain condition, for diagnostics."""
    if not np.all(np.isfinite(y)):
        return f"state {[float(v) for v in y]}"
    margins = system.margins(y, params.alpha, params.wstar, float(params.L))
    worst = int(np.argmin(margins))
    return (f"state (w_v1, p, w_v2, w_kq) = ({y[0]:.6g}, {y[1]:.6g}, {y[2]:.6g}, "
            f"{math.exp(y[3]):.6g}); nearest domain condition {system.domain_labels[worst]} "
            f"(margin {margins[worst]:.3g}); L={params.L}, alpha={params.alpha}, "
            f"wstar={params.wstar}")


def _evaluation_error(system, closure, params, t, y, exc) -> DomainError:
    return DomainError(
        f"closure {closure!r} could not be evaluated ({type(exc).__name__}: {exc}) after "
        f"the step to t={t:.6g}; last accepted {_describe(system, y, params)}")


def _root_in_step(segment, level, t_lo: float, t_hi: float) -> float:
    """First ``t`` in ``[t_lo, t_hi]`` with ``level(segment(t)) >= 0`` (a sign change there)."""
    from scipy.optimize import brentq

    g_lo, g_hi = level(segment(t_lo)), level(segment(t_hi))
    if g_lo >= 0:
        return t_lo
    if g_hi < 0:  # interpolation round-off at the step end: the step end is the crossing
        return t_hi
    return float(brentq(lambda s: level(segment(s)), t_lo, t_hi, xtol=1e-300,
                        rtol=4 * np.finfo(float).eps))
