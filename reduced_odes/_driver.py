"""What both integration drivers share: the problem, the run record, domain guards,
diagnostics and the stop rule's constants."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ._compile import CompiledSystem
from ._trajectory import DomainError

#: Largest horizon tried before giving up (far beyond any model's plateau).
_T_MAX = 1e18
#: Step budget of every stepper.  A run to phase IV takes 1e3 to 5e3 steps (L up to 1e7,
#: sigma down to 1e-300); only a state pressed against the domain boundary, where the flow
#: is singularly stiff, or an ``atol`` below what the flow can be evaluated to near its
#: settled state (the steps then shrink without failing), needs more.
_MAX_STEPS = 100_000
#: Exceptions that evaluating the compiled flow outside its domain can raise
#: (``math.sqrt`` of a negative number, a complex power converted to float, ...).
_EVALUATION_ERRORS = (ValueError, TypeError, OverflowError, ZeroDivisionError)


@dataclass(frozen=True)
class Problem:
    """One integration: the compiled system, its parameter values, start and stop rule."""

    system: CompiledSystem
    args: tuple[float, ...]
    y0: np.ndarray
    settled: Callable[[float, np.ndarray], float]  # (t, y) <= 0 once every block is final
    horizon: float
    tail: float  # after settling at t_s, run on to (1 + tail) t_s
    t_end: float | None  # a fixed end instead of the stop rule
    method: str
    rtol: float
    atol: float
    label: str  # "model 'x', variant 'y'", for messages

    def margins(self, y) -> list[float]:
        return self.system.margins(y, *self.args)

    def violated(self, y) -> str:
        margins = self.margins(y)
        worst = int(np.argmin(margins))
        return f"condition {self.system.domain_labels[worst]} fails (margin {margins[worst]:.3g})"

    def state_text(self, y) -> str:
        """``(name, ...) = (value, ...)`` of the state variables at coordinates ``y``; of the
        coordinates themselves where a state variable cannot be computed from them (a log
        coordinate whose exponential overflows, reported after a failed run)."""
        try:
            names, values = self.system.state_names, self.system.state(y, *self.args)
        except (ValueError, ArithmeticError):
            names, values = self.system.coordinate_names, y
        return f"({', '.join(names)}) = ({', '.join(f'{v:.6g}' for v in values)})"

    def describe(self, y) -> str:
        """The state and its nearest domain condition, for diagnostics."""
        if not np.all(np.isfinite(y)):
            return f"state {[float(v) for v in y]}; {self.label}"
        text = f"state {self.state_text(y)}"
        if self.system.domain_labels:
            try:
                text += f"; nearest domain {self.violated(y).replace(' fails', '')}"
            except (ValueError, ArithmeticError):  # the margins overflow there too
                pass
        return f"{text}; {self.label}"

    def edge_error(self, t: float, y) -> DomainError:
        return DomainError(f"trajectory reached the boundary of the domain of {self.label} at "
                           f"t={t:.6g}: {self.violated(y)}; state {self.state_text(y)}")

    def evaluation_error(self, t: float, y, exc: Exception) -> DomainError:
        return DomainError(f"{self.label} could not be evaluated ({type(exc).__name__}: {exc}) "
                           f"after the step to t={t:.6g}; last accepted {self.describe(y)}")

    def guarded(self) -> tuple[Callable, Callable]:
        """``rhs, jac`` that return NaN instead of raising outside the domain.

        The integrators evaluate the flow at trial states (predictor values, Newton
        iterates) that a large step may carry outside the domain; a NaN makes them
        reject that step and retry a smaller one, where an exception would abort the
        whole run.  Accepted states are checked to be finite and inside the domain,
        so no NaN reaches a trajectory.
        """
        rhs, jac, n = self.system.rhs, self.system.jac, self.system.size
        nan_rates = [math.nan] * n
        last_good = [[[math.nan] * n for _ in range(n)]]

        def guarded_rhs(t, y, *args):
            try:
                return rhs(t, y, *args)
            except _EVALUATION_ERRORS:
                return nan_rates

        def guarded_jac(t, y, *args):
            # Outside the domain the last good Jacobian stands in: the implicit methods
            # reuse stale Jacobians anyway, and BDF's LU factorisation rejects a NaN one,
            # where the NaN rates alone make it shrink the step.
            try:
                value = jac(t, y, *args)
            except _EVALUATION_ERRORS:
                return last_good[0]
            if math.isfinite(sum(map(sum, value))):
                last_good[0] = value
                return value
            return last_good[0]

        return guarded_rhs, guarded_jac


@dataclass
class _Run:
    """What a driver hands to ``_assemble``."""

    dense: Callable  # dense(t) -> state, OdeSolution-like
    steps: np.ndarray  # accepted step times, from t0
    y_steps: np.ndarray  # (n, steps) states there
    segment: Callable[[int], Callable[[float], np.ndarray]]  # interpolant of step (k-1, k]
    nfev: int
    njev: int
    nlu: int


def stopped(error: DomainError, run: _Run | None, t_stop: float) -> DomainError:
    """``error``, carrying the run up to where it stopped: the phases it crossed before
    ``t_stop`` are those of an uninterrupted run (``solve`` keeps them)."""
    error.run, error.t_stop = run, t_stop
    return error
