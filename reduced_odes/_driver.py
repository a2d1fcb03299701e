"""What every stepper shares: the step budget and horizon, the :class:`Run` protocol a
stepper returns, the run of recorded steps (:class:`StepRun`), and the one assembly of a
run into a :class:`~reduced_odes.Trajectory` (:func:`assemble`).

A stepper (a row of :data:`reduced_odes._steppers.STEPPERS`) takes a
:class:`~reduced_odes._problem.Problem` and returns a :class:`Run`; a stepper that stops
part-way raises a :class:`~reduced_odes.DomainError` carrying the run so far
(:func:`stopped`), which :func:`reduced_odes.solve` assembles the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ._crossing import crossing_time
from ._problem import Problem
from ._stop_rules import Crossing
from ._trajectory import DomainError, SolverStats, Trajectory, _series_at, output_times, trajectory

__all__ = ["Run", "StepRun", "assemble", "stopped"]

#: Largest horizon tried before giving up (far beyond any model's plateau).
_T_MAX = 1e18
#: Step budget of every stepper.  A run to phase IV takes 1e3 to 5e3 steps (L up to 1e7,
#: sigma down to 1e-300); only a state pressed against the domain boundary, where the flow
#: is singularly stiff, or an ``atol`` below what the flow can be evaluated to near its
#: settled state (the steps then shrink without failing), needs more.
_MAX_STEPS = 100_000


class Run(Protocol):
    """What a stepper hands back: its run, read by :func:`assemble`.

    ``end`` is where the run ends (the last accepted step, or the stop rule's end), ``label``
    the method as the solver statistics name it, ``dense(t)`` the state at times ``t``
    (like :class:`scipy.integrate.OdeSolution`).  A run that stepped at other tolerances
    than the problem's (the native BDF, at a tenth) also gives ``atol_floor``, the
    coordinates whose atol the floor raised there (:meth:`Problem.floored`).
    """

    end: float
    label: str
    dense: Callable

    def outputs(self, problem: Problem, t: np.ndarray, t_end: float,
                crossings: Sequence[Crossing]) -> tuple[dict[str, np.ndarray],
                                                        dict[str, float]]:
        """Every named series at the output times ``t`` and each crossing's first time up
        to ``t_end`` (NaN if not reached by then)."""

    def counts(self, t_end: float) -> tuple[int, int, int, int]:
        """``(nfev, njev, nlu, steps)`` of the run up to ``t_end``."""


@dataclass
class StepRun:
    """A :class:`Run` from its accepted steps: the steps' times ``steps`` (from 0), the states
    there ``y_steps`` (one column each), the interpolant of each step (``segment(k)``, on
    ``(steps[k], steps[k + 1]]``) and of the whole run (``dense``), and the costs.

    What SciPy's steppers (and a new one that records its steps) return.
    """

    dense: Callable
    steps: np.ndarray
    y_steps: np.ndarray
    segment: Callable[[int], Callable[[float], np.ndarray]]
    nfev: int
    njev: int
    nlu: int
    label: str = ""

    @property
    def end(self) -> float:
        return float(self.steps[-1])

    def outputs(self, problem: Problem, t: np.ndarray, t_end: float,
                crossings: Sequence[Crossing]) -> tuple[dict[str, np.ndarray],
                                                        dict[str, float]]:
        system, args = problem.system, problem.args
        y = self.dense(t)
        y[:, 0] = problem.y0
        if t_end == self.steps[-1]:
            y[:, -1] = self.y_steps[:, -1]  # the last step exactly, not its interpolant
        # A run that stopped is searched up to its stop: a step past it may lie outside the
        # domain, where the observables are undefined.
        searched = int(np.searchsorted(self.steps, t_end, side="right"))
        phases = {c.name: crossing_time(system, args, self, c, searched) for c in crossings}
        return _series_at(system, y, args), phases

    def counts(self, t_end: float) -> tuple[int, int, int, int]:
        return self.nfev, self.njev, self.nlu, len(self.steps) - 1


def stopped(error: DomainError, run: Run | None, t_stop: float) -> DomainError:
    """``error``, carrying the run up to where it stopped: the phases it crossed before
    ``t_stop`` are those of an uninterrupted run (``solve`` keeps them)."""
    error.run, error.t_stop = run, t_stop
    return error


def assemble(problem: Problem, run: Run, stop: tuple[float, str] | None = None) -> Trajectory:
    """The trajectory of ``run``, whichever stepper made it; ``stop``: ``(t_stop, why)`` of a
    run that stopped early, which ends there (a phase crossed after ``t_stop``, in the last
    step, is not the run's)."""
    setting, system = problem.setting, problem.system
    solver = setting.solver
    t_end = run.end if stop is None else stop[0]
    t = output_times(t_end, solver.n_output)
    initial = {k: float(v[0]) for k, v in _series_at(system, problem.y0[:, None],
                                                       problem.args).items()}
    crossings = setting.model.phases(setting.params, setting.variant, initial,
                                     setting.thresholds)
    series, phases = run.outputs(problem, t, t_end, crossings)
    nfev, njev, nlu, steps = run.counts(t_end)
    stats = SolverStats(run.label or solver.method, solver.rtol, solver.atol, nfev=nfev,
                        njev=njev, nlu=nlu, steps=steps,
                        atol_floor=getattr(run, "atol_floor", None) or problem.floored())
    return trajectory(setting, problem, t, series, (crossings, phases), stats, run.dense,
                      None if stop is None else stop[1])
