"""Results of an integration: the trajectory, its solver statistics, and the domain error.

Every stepper's run is assembled (:func:`reduced_odes._driver.assemble`) on the output
grid of :func:`output_times` into a :class:`Trajectory` by :func:`trajectory`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._compile import CompiledSystem
from ._params import Parameters, SolverConfig
from ._provenance import versions
from ._setting import Setting
from ._stop_rules import Crossing

__all__ = ["DomainError", "SolverStats", "Trajectory", "output_times", "trajectory"]


class DomainError(RuntimeError):
    """A trajectory reached the boundary of its model's domain, or could not be integrated.

    A run that stopped part-way keeps what it found before: ``trajectory`` is then the
    run up to ``t_stop`` (its phases before the stop are those of an uninterrupted run;
    the others say why they have no time), else None.

    Examples
    --------
    What :func:`~reduced_odes.solve` raises once the run has started (bad input is a
    :class:`~reduced_odes.ParameterError` before it):

    >>> from reduced_odes import solve
    >>> from reduced_odes.models.deep_linear import DeepLinearParams
    >>> try:
    ...     phases = solve(DeepLinearParams()).phases
    ... except DomainError as error:  # the run left the domain, or the integrator gave up
    ...     phases = {}
    >>> sorted(phases)
    ['T_half']
    """

    #: The partial run of a stepper (a ``_driver.Run``), where it stopped; set by the steppers.
    run: Any = None
    t_stop: float | None = None
    #: The partial :class:`Trajectory`, set by :func:`reduced_odes.solve`.
    trajectory: Any = None


@dataclass(frozen=True)
class SolverStats:
    """Cost of one integration, as reported by the integrator, and its tolerances.

    ``atol`` is the requested absolute tolerance; ``atol_floor`` names the log coordinates
    whose ``atol`` it raised to the machine epsilon, below which an absolute error in a log
    coordinate means nothing (:data:`reduced_odes._problem.LOG_ATOL_FLOOR`), with the atol
    they were stepped at.  Empty (and left out of :meth:`as_dict`) if none was raised.

    Examples
    --------
    >>> from reduced_odes import SolverConfig, solve
    >>> from reduced_odes.models.deep_linear import DeepLinearParams
    >>> stats = solve(DeepLinearParams()).stats
    >>> stats.method, stats.rtol, stats.steps > 0, sorted(stats.as_dict())[:3]
    ('LSODA', 1e-10, True, ['atol', 'method', 'nfev'])
    >>> solve(DeepLinearParams(), solver=SolverConfig(atol=1e-20)).stats.as_dict()["atol_floor"]
    {'log_a': 2.220446049250313e-16, 'log_b': 2.220446049250313e-16}
    """

    method: str
    rtol: float
    atol: float
    nfev: int
    njev: int
    nlu: int
    steps: int
    atol_floor: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "atol_floor" or v}


@dataclass(frozen=True)
class Trajectory:
    """A solved trajectory on a log-spaced grid, with its dense output.

    Attributes
    ----------
    model, variant : str
        The model's name and variant.
    params : Parameters
        The model's parameters.
    t : ndarray, shape (n,)
        Output times: 0, then log-spaced up to the end of the run.
    series : dict of str -> ndarray, shape (n,)
        Every integration coordinate, state variable and observable by name
        (e.g. ``w_kq``, ``log_w_kq``, ``L_G4``).
    phases : dict
        Phase times, located by root-finding on the dense output (NaN: not reached).
    unreached : dict
        For each phase not reached, the reason (``solve --json``: ``phase_outcomes``).
    stats : SolverStats
    dense : callable
        ``dense(t)``: the integration coordinates at ``t`` (shape ``(k,)`` for a
        scalar, ``(k, m)`` for ``m`` times), like SciPy's ``OdeSolution``.

    Examples
    --------
    >>> from reduced_odes import solve
    >>> from reduced_odes.models.deep_linear import DeepLinearParams
    >>> traj = solve(DeepLinearParams(s=2, sigma=1e-4))
    >>> float(traj.t[0]), len(traj.t), sorted(traj.series)
    (0.0, 401, ['a', 'b', 'log_a', 'log_b', 'loss', 'u'])
    >>> T = traj.phases["T_half"]  # u = a b crosses s/2
    >>> round(float(traj.observables_at([T])["u"][0]), 6), round(traj.final["u"], 6)
    (1.0, 2.0)
    """

    model: str
    variant: str
    variant_option: str
    params: Parameters
    solver: SolverConfig
    thresholds: Parameters | None
    t: np.ndarray
    series: dict[str, np.ndarray]
    phases: dict[str, float]
    stats: SolverStats
    dense: Callable = field(repr=False)
    system: Any = field(repr=False)
    #: Phase name -> why it has no time (only the phases not reached).
    unreached: dict[str, str] = field(default_factory=dict)
    #: The model's parameter values, as the compiled system takes them.
    system_args: tuple[float, ...] = ()
    #: Why the run stopped before its end (a partial run, see :class:`DomainError`), or None.
    stopped: str | None = None
    #: The first backend's error, when this result comes from the other backend.
    fallback_reason: str | None = None
    #: Phase name -> ``{"ill_conditioned", "error_estimate", "reason"}`` from a cross-check
    #: (``SolverConfig(cross_check=True)``); empty without one.
    conditioning: dict[str, dict] = field(default_factory=dict)

    @property
    def state(self) -> np.ndarray:
        """The state variables as columns, shape ``(n, k)``, in the model's order."""
        return np.column_stack([self.series[name] for name in self.system.state_names])

    def at(self, times) -> np.ndarray:
        """Integration coordinates at arbitrary times, from the dense output."""
        return self.dense(times)

    def observables_at(self, times) -> dict[str, np.ndarray]:
        """Every observable at arbitrary times, from the dense output."""
        args = self.system_args
        states = np.atleast_2d(self.dense(np.atleast_1d(times)).T)
        names = self.system.observable_names
        values = np.array([self.system.observables(y, *args)[:len(names)] for y in states])
        return {name: values[:, i] for i, name in enumerate(names)}

    @property
    def final(self) -> dict:
        """Every series at the end of the run: state, ``t``, coordinates, observables."""
        names = list(self.system.state_names) + ["t"]
        names += [n for n in self.system.coordinate_names if n not in names]
        names += list(self.system.observable_names)
        return {name: (float(self.t[-1]) if name == "t" else float(self.series[name][-1]))
                for name in names}

    def to_dict(self) -> dict:
        """The stable JSON schema of ``reduced-odes solve --json``."""
        document = {
            "model": self.model,
            "params": self.params.as_dict(),
            self.variant_option: self.variant,
            "phases": {k: _json_float(v) for k, v in self.phases.items()},
            "phase_outcomes": {k: self._outcome(k) for k in self.phases},
            "final": {k: _json_float(v) for k, v in self.final.items()},
            "solver": {**self.stats.as_dict(), "backend": self.solver.backend,
                       "t_end": float(self.t[-1]), "stopped": self.stopped,
                       "retried": self.fallback_reason is not None,
                       "fallback_reason": self.fallback_reason,
                       "cross_check": self.solver.cross_check},
            "versions": versions(),
        }
        if self.thresholds is not None:
            document["thresholds"] = self.thresholds.as_dict()
        return document

    def _outcome(self, phase: str) -> dict:
        """``solve --json``'s ``phase_outcomes[phase]``: reached (or why not), and with a
        cross-check whether it is ill-conditioned, its estimated relative error and why."""
        outcome = {"reached": phase not in self.unreached, "reason": self.unreached.get(phase)}
        check = self.conditioning.get(phase)
        if check is not None:
            outcome["ill_conditioned"] = check["ill_conditioned"]
            outcome["error_estimate"] = _json_float(check["error_estimate"])
            if check["reason"] is not None:
                outcome["reason"] = "; ".join(r for r in (outcome["reason"], check["reason"])
                                              if r)
        return outcome

    @property
    def ill_conditioned(self) -> dict[str, str]:
        """Phase name -> why its time is ill-conditioned (from a cross-check; else empty)."""
        return {k: c["reason"] for k, c in self.conditioning.items() if c["ill_conditioned"]}


def _json_float(value: float) -> float | None:
    return None if not math.isfinite(value) else float(value)


def _series_at(system: CompiledSystem, y: np.ndarray, args) -> dict[str, np.ndarray]:
    """Every named series at the coordinate columns of ``y`` (shape ``(k, m)``)."""
    columns = y.T.tolist()
    series = {name: y[i].copy() for i, name in enumerate(system.coordinate_names)}
    state = np.array([system.state(c, *args) for c in columns]).reshape(len(columns), -1)
    series.update({name: state[:, i] for i, name in enumerate(system.state_names)})
    names = system.observable_names
    if names:
        values = np.array([system.observables(c, *args)[:len(names)] for c in columns])
        series.update({name: values[:, i] for i, name in enumerate(names)})
    return series


def output_times(t_end: float, n_output: int) -> np.ndarray:
    """The output grid: ``0`` and ``n_output`` log-spaced times up to ``t_end``.

    Examples
    --------
    >>> output_times(10.0, 3).tolist()
    [0.0, 0.001, 0.1, 10.0]
    """
    start = min(1e-3, t_end / 10)
    # np.geomspace(start, t_end, n_output)'s arithmetic, to the bit, without its checks for
    # signs, zeros and complex input (two thirds of its time, on every trajectory).
    grid = np.empty(n_output + 1)
    grid[0] = 0.0
    np.power(10.0, np.linspace(np.log10(start), np.log10(t_end), n_output), out=grid[1:])
    grid[1], grid[-1] = start, t_end
    return grid


def trajectory(setting: Setting, problem, t: np.ndarray, series: dict[str, np.ndarray],
               crossed: tuple, stats: SolverStats, dense,
               stopped: str | None = None) -> Trajectory:
    """A finished run of ``setting`` as a :class:`Trajectory` (either backend's):
    ``crossed`` is the crossings with their times; the phases not reached get their
    reason, and losses their round-off clipped.
    ``problem`` is the run's :class:`~reduced_odes._driver.Problem` (system, parameter values);
    ``stopped``: why a partial run stopped at ``t[-1]`` (the reason of its later phases)."""
    model, variant = setting.model, setting.variant
    crossings, phases = crossed
    unreached = {c.name: _why_not_reached(c, series, float(t[-1]), stopped) for c in crossings
                 if not math.isfinite(phases[c.name])}
    for name in model.nonnegative:
        # A loss is a sum of O(1) terms of both signs; near its minimum they cancel to
        # round-off (|error| ~ 1e-16), which can show as a tiny negative value.
        series[name] = np.maximum(series[name], 0.0)
    return Trajectory(model.name, variant, model.variant_option, setting.params, setting.solver,
                      setting.thresholds, t, series, phases, stats, dense, problem.system,
                      unreached, problem.args, stopped)


def _why_not_reached(crossing: Crossing, series: dict, t_end: float,
                     stopped: str | None = None) -> str:
    """Why a phase has no time: where its quantity ended, against its level (and why the run
    stopped there, if it stopped early)."""
    relation = ">=" if crossing.direction > 0 else "<="
    final = float(series[crossing.quantity][-1])
    end = "by the end of the run" if stopped is None else "before the run stopped"
    why = f"not reached {end} at t={t_end:.6g}: {crossing.quantity} ended at {final:.6g}, " \
          f"the phase needs {crossing.quantity} {relation} {crossing.level:.6g}"
    return why if stopped is None else f"{why}; the run stopped: {stopped}"
