"""The one verb: integrate a model's reduced flow from t = 0 until its state settles.

This module is the orchestration alone: it parses a setting into a problem
(:meth:`~reduced_odes._problem.Problem.of`), runs the stepper the table names for the
solver's backend and method (:data:`reduced_odes._steppers.STEPPERS`), assembles the
run (:func:`reduced_odes._driver.assemble`), retries a failed run on the other backend,
and applies the cross-check (:mod:`reduced_odes._cross_check`).

The steppers, one module each:

* ``_lsoda``: ``LSODA`` (the default) stepped directly through SciPy's ``ode`` wrapper of
  ODEPACK's LSODA, one step per call, exactly as ``solve_ivp(method="LSODA")`` steps it,
  but without ``solve_ivp``'s per-step bookkeeping; its dense output is kept as the raw
  Nordsieck arrays, evaluated vectorised and only where needed.
* ``_ivp``: ``Radau`` and ``BDF`` through :func:`scipy.integrate.solve_ivp` with
  terminal events (and LSODA if the direct driver cannot run on the installed SciPy).
* ``_native``: with ``SolverConfig(backend="numba")`` (the ``[fast]`` extra), SciPy's BDF
  ported to numba on a machine-generated twin of the compiled system, stepping at a tenth
  of the tolerances, with the same stop rule, crossings and output grid.

Evaluations outside the model's domain (trial states of a large step) return
NaN to the integrator, which then retries a smaller step; should a non-finite
state be accepted anyway, the direct driver restarts from its last accepted
step.  No NaN reaches a trajectory: a run either stays finite and inside the
domain, or stops with a :class:`DomainError` naming the time, state, violated
(or nearest) domain condition and the whole setting.

The two backends are one contract (:func:`solve`): a run that fails on one is
retried on the other, and the trajectory says so; a run that stops part-way
keeps the phases it reached (``DomainError.trajectory``); with
``SolverConfig(cross_check=True)`` the phase times come from a second run at a
hundredth of the tolerances, each with an error estimate, and the
ill-conditioned ones are marked (:func:`~reduced_odes._cross_check.cross_checked`).

Phase times are first crossings (the model's :class:`~reduced_odes.Crossing`
definitions), bracketed by the accepted steps and refined by ``brentq`` on the
dense output (:mod:`reduced_odes._crossing`).
"""

from __future__ import annotations

import dataclasses
import math

from . import _params
from ._backend import resolve
from ._contract import Model
from ._cross_check import cross_checked
from ._driver import assemble
from ._params import ParameterError, Parameters, SolverConfig
from ._problem import Problem, run_label
from ._retries import note_retry
from ._setting import Setting
from ._steppers import stepper_for
from ._trajectory import DomainError, SolverStats, Trajectory

__all__ = ["DomainError", "SolverStats", "Trajectory", "solve"]


def solve(params_or_setting: Parameters | Setting, /, variant: str | None = None,
          solver: SolverConfig | None = None, thresholds: Parameters | None = None, *,
          initial=None, model: Model | str | None = None) -> Trajectory:
    """Integrate a model's reduced gradient flow from initialisation until it settles.

    Parameters
    ----------
    params_or_setting : Parameters or Setting
        The model's parameters (an instance of ``model.Params``), or a whole
        :class:`~reduced_odes.Setting` (then the other arguments are not given).
    variant : str, optional
        One of ``model.variants`` (the induction head's closures, ...); default the first.
    solver : SolverConfig, optional
        Method and tolerances (default LSODA, rtol 1e-10, atol 1e-12).  With
        ``t_end=None`` the run continues until the model's stop rule says every
        block of the state has settled, and then ``model.tail`` times as long
        again; with a ``t_end`` it runs exactly to ``t_end``.  With ``cross_check=True``
        each phase time gets an error estimate from a second solve at a hundredth of the
        tolerances, ill-conditioned ones marked (``Trajectory.conditioning``).
    thresholds : Parameters, optional
        The model's phase definitions (``model.Thresholds``), if it has any.
    initial : mapping or sequence, optional
        Initial state instead of the model's: a sequence of the state variables,
        or a mapping giving each variable by its state name or its coordinate
        name (e.g. ``log_w_kq`` for a value that underflows).  It must lie
        inside the model's domain.
    model : Model or str, optional
        The model; default: the loaded model whose ``Params`` ``params_or_setting`` is.

    Returns
    -------
    Trajectory

    Raises
    ------
    ParameterError
        Bad input, naming the parameter, its value and the allowed range.
    DomainError
        The trajectory reached the boundary of the model's domain, or could not be
        integrated on either backend (a failure on one is retried on the other, which the
        result then records: ``fallback_reason``).  A run that stopped part-way carries
        its partial :class:`Trajectory` as ``.trajectory``: the phases reached before the
        stop, with the times of an uninterrupted run.

    Examples
    --------
    >>> from reduced_odes.models.deep_linear import DeepLinearParams
    >>> traj = solve(DeepLinearParams(s=1.0, sigma=1e-3))
    >>> import math
    >>> abs(traj.phases["T_half"] / (math.log(1 / 1e-6 - 1) / 2) - 1) < 1e-8
    True
    """
    setting = _as_setting(params_or_setting, variant, solver, thresholds, initial, model)
    result = _solve_with_fallback(setting)
    if setting.solver.cross_check:
        result = cross_checked(result, setting, _solve_on)
    if result.fallback_reason is not None:  # for a job that sees no trajectory (verify)
        note_retry(f"{run_label(setting)}: {result.fallback_reason}")
    return result


def _as_setting(params_or_setting: Parameters | Setting, variant: str | None,
                solver: SolverConfig | None, thresholds: Parameters | None, initial,
                model: Model | str | None) -> Setting:
    """The setting :func:`solve` runs, its backend resolved (``auto`` to the one installed)."""
    if isinstance(params_or_setting, Setting):
        given = {"variant": variant, "solver": solver, "thresholds": thresholds,
                 "initial": initial, "model": model}
        if extra := sorted(k for k, v in given.items() if v is not None):
            raise ParameterError(f"solve(setting, ...) takes no {', '.join(extra)}: they are "
                                 f"the setting's (Setting.replace changes them)")
        setting = params_or_setting
    else:
        setting = Setting.of(params_or_setting, variant, solver, thresholds, initial=initial,
                             model=model)
    backend = resolve(setting.solver.backend)
    if backend != setting.solver.backend:  # ``replace`` validates every field again
        setting = setting.with_solver(dataclasses.replace(setting.solver, backend=backend))
    return setting


def _solve_with_fallback(setting: Setting) -> Trajectory:
    """One run of ``setting``; if it fails, the run again on the other backend (if any)."""
    try:
        return _solve_on(setting)
    except DomainError as first:
        other = _other_backend(setting.solver.backend)
        if other is None:
            raise
        return _retried(setting.with_solver(dataclasses.replace(setting.solver,
                                                                backend=other)),
                        setting.solver.backend, first)


def _other_backend(backend: str) -> str | None:
    """The backend a failed run is retried on: the other one, if it is installed."""
    if backend == "numba":
        return "python"
    return "numba" if _params.native_available() else None  # read there: tests patch it


def _retried(setting: Setting, failed: str, first: DomainError) -> Trajectory:
    """The run on the other backend (``setting.solver``'s) after ``first`` failed on
    ``failed``; if it fails too, the error of the two, carrying the partial run that went
    further."""
    solver = setting.solver
    try:
        result = _solve_on(setting)
    except DomainError as second:
        kept = max((first, second), key=lambda e: -math.inf if e.trajectory is None
                   else float(e.trajectory.t[-1]))
        error = DomainError(f"{first} (backend {failed}); retried on backend {solver.backend}: "
                            f"{second}")
        if kept.trajectory is not None:
            error.trajectory = dataclasses.replace(
                kept.trajectory, stopped=str(error),
                fallback_reason=f"backend {failed}: {first}" if kept is second else None)
        raise error from None
    return dataclasses.replace(result, fallback_reason=f"backend {failed}: {first}")


def _solve_on(setting: Setting) -> Trajectory:
    """One run on ``setting.solver.backend``; a :class:`DomainError` carries the partial run."""
    model, solver = setting.model, setting.solver
    if model.supports("integrate"):
        # Its stages are solves of their own: cross-checked, a stage's tighter time would
        # set the next stage's start; only the protocol as a whole is cross-checked (above).
        plain = dataclasses.replace(solver, cross_check=False) if solver.cross_check else solver
        staged = model.integrate(setting.params, setting.variant, plain, setting.thresholds,
                                 setting.initial)
        if staged is not None:
            return staged
    problem = Problem.of(setting)
    try:
        return _stepped(problem)
    except ArithmeticError as exc:  # last guard: no traceback, even from an engine defect
        raise DomainError(f"{problem.label} failed ({type(exc).__name__}: {exc})") from None


def _stepped(problem: Problem) -> Trajectory:
    """The trajectory of ``problem`` by the stepper of its backend and method; a stepper that
    stops part-way leaves its partial trajectory on the error."""
    solver = problem.setting.solver
    try:
        run = stepper_for(solver.backend, solver.method).run(problem)
    except DomainError as exc:
        if exc.run is not None and exc.t_stop > 0:
            try:
                exc.trajectory = assemble(problem, exc.run, (exc.t_stop, str(exc)))
            except (ValueError, ArithmeticError):  # what it found cannot be read back: the
                pass  # failure is reported as it is, without a partial trajectory
        raise
    return assemble(problem, run)
