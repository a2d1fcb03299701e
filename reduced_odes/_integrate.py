"""The one verb: integrate a model's reduced flow from t = 0 until its state settles.

Two pure-Python drivers produce the same trajectory, one module each (the problem they
share, guards and diagnostics are in ``_driver``, the result objects in
``_trajectory``):

* ``_lsoda``: ``LSODA`` (the default) is stepped directly through SciPy's ``ode`` wrapper of
  ODEPACK's LSODA, one step per call, exactly as ``solve_ivp(method="LSODA")``
  steps it, but without ``solve_ivp``'s per-step bookkeeping: the stop rule is
  tested on each accepted step in a few float operations and the dense output
  is kept as the raw Nordsieck arrays, evaluated vectorised and only where
  needed (benchmarks/bench_solve.py).
* ``_ivp``: ``Radau`` and ``BDF`` go through :func:`scipy.integrate.solve_ivp` with
  terminal events (and so does LSODA if the fast driver is unavailable in the
  installed SciPy).

With ``SolverConfig(backend="numba")`` (the ``[fast]`` extra) the whole run is
native instead: :mod:`reduced_odes._native`, SciPy's BDF ported to numba on a
machine-generated twin of the compiled system, stepping at a tenth of the
tolerances, with the same stop rule, crossings and output grid
(``tests/engine/test_native.py`` holds the two together).

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
ill-conditioned ones are marked (:func:`cross_checked`).

Phase times are first crossings (the model's :class:`~reduced_odes.Crossing`
definitions), bracketed by the accepted steps and refined by ``brentq`` on the
dense output (:mod:`reduced_odes._crossing`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

import numpy as np

from . import _params
from ._backend import resolve
from ._compile import CompiledSystem, load_system
from ._contract import Crossing, Model, SettledRule
from ._crossing import first_index, root_in_step
from ._driver import Problem, _Run
from ._ivp import _ivp_run
from ._lsoda import _FastPathUnavailable, _lsoda_run
from ._params import ParameterError, Parameters, SolverConfig, _number
from ._retries import note_retry
from ._setting import Setting
from ._trajectory import (
    DomainError,
    SolverStats,
    Trajectory,
    _series_at,
    output_times,
    trajectory,
)

__all__ = ["DomainError", "SolverStats", "Trajectory", "cross_checked", "solve"]


def _from_mapping(system: CompiledSystem, initial: Mapping, args) -> list[float]:
    """Coordinates from ``{name: value}``: each variable by its state or coordinate name."""
    pairs = list(zip(system.state_names, system.coordinate_names, strict=True))
    allowed = sorted({n for pair in pairs for n in pair})
    unknown = sorted(set(initial) - set(allowed))
    state = []
    for state_name, coordinate_name in pairs:
        given = [n for n in {state_name, coordinate_name} if n in initial]
        if unknown or len(given) != 1:
            raise ParameterError(f"initial={dict(initial)!r}: needs one value per variable, by "
                                 f"name ({', '.join(allowed)})"
                                 f"{f'; unknown: {unknown}' if unknown else ''}")
        state.append((given[0], _number(f"initial {given[0]}", initial[given[0]],
                                        "a finite number")))
    natural = [v if n in system.state_names else math.nan for n, v in state]
    try:
        from_state = system.coordinates(natural, *args)
    except (ValueError, ArithmeticError):
        from_state = None
    y = []
    for i, (name, value) in enumerate(state):
        if name in system.state_names and system.state_names[i] != system.coordinate_names[i]:
            if from_state is None or not math.isfinite(from_state[i]):
                raise ParameterError(f"initial {name}={value!r} is outside the range of its "
                                     f"coordinate {system.coordinate_names[i]}; allowed: "
                                     f"{system.coordinate_ranges[i]}")
            y.append(from_state[i])
        else:
            y.append(value)
    return y


def _initial_state(model: Model, params, variant: str, initial, system: CompiledSystem,
                   args) -> np.ndarray:
    """The integration coordinates at t = 0: the model's, or ``initial`` if given."""
    if initial is None:
        y0 = np.array(model.initial_state(params, variant), dtype=float)
    elif isinstance(initial, Mapping):
        y0 = np.array(_from_mapping(system, initial, args))
    elif isinstance(initial, Sequence) and not isinstance(initial, str) and (
            len(initial) == system.size):
        y0 = np.array(_from_mapping(system, dict(zip(system.state_names, initial,
                                                     strict=True)), args))
    else:
        raise ParameterError(f"initial={initial!r} must be a mapping or a sequence of the state "
                             f"({', '.join(system.state_names)})")
    if system.domain_labels:
        margins = system.margins(y0, *args)
        if min(margins) <= 0:
            worst = int(np.argmin(margins))
            values = ", ".join(f"{v:.6g}" for v in system.state(y0, *args))
            raise ParameterError(
                f"initial state ({', '.join(system.state_names)}) = ({values}) is outside the "
                f"domain of {model.name} {model.variant_option} {variant!r}: condition "
                f"{system.domain_labels[worst]} fails (margin {margins[worst]:.3g}); allowed: "
                f"every condition {', '.join(system.domain_labels)}")
    if initial is not None:  # the model's own start is its to get right
        try:
            start = [float(v) for v in system.state(y0, *args)]
        except (ValueError, ArithmeticError):  # e.g. a log coordinate's exp overflows: the
            start = None                       # run fails at once, with its reason
        if start is not None:
            model.check_start(params, variant, dict(zip(system.state_names, start, strict=True)))
    return y0


def solve(params: Parameters | Setting, variant: str | None = None,
          solver: SolverConfig | None = None, thresholds: Parameters | None = None, *,
          initial=None, model: Model | str | None = None) -> Trajectory:
    """Integrate a model's reduced gradient flow from initialisation until it settles.

    Parameters
    ----------
    params : Parameters or Setting
        The model's parameters (an instance of ``model.Params``), or a whole
        :class:`~reduced_odes.Setting` (then the other arguments are not given).
    variant : str, optional
        One of ``model.variants`` (the induction head's closures, ...); default the first.
    solver : SolverConfig, optional
        Method and tolerances (default LSODA, rtol 1e-10, atol 1e-12).  With
        ``t_end=None`` the run continues until the model's stop rule says every
        block of the state has settled, and then ``model.tail`` times as long
        again; with a ``t_end`` it runs exactly to ``t_end``.
    thresholds : Parameters, optional
        The model's phase definitions (``model.Thresholds``), if it has any.
    initial : mapping or sequence, optional
        Initial state instead of the model's: a sequence of the state variables,
        or a mapping giving each variable by its state name or its coordinate
        name (e.g. ``log_w_kq`` for a value that underflows).  It must lie
        inside the model's domain.
    model : Model or str, optional
        The model; default: the loaded model whose ``Params`` ``params`` is.

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

    Notes
    -----
    With ``SolverConfig(cross_check=True)`` each phase time gets an error estimate from a
    second solve at a hundredth of the tolerances, and ill-conditioned ones are marked
    (:func:`cross_checked`; ``Trajectory.conditioning``).

    Examples
    --------
    >>> from reduced_odes.models.deep_linear import DeepLinearParams
    >>> traj = solve(DeepLinearParams(s=1.0, sigma=1e-3))
    >>> abs(traj.phases["T_half"] / (math.log(1 / 1e-6 - 1) / 2) - 1) < 1e-8
    True
    """
    if isinstance(params, Setting):
        given = {"variant": variant, "solver": solver, "thresholds": thresholds,
                 "initial": initial, "model": model}
        if extra := sorted(k for k, v in given.items() if v is not None):
            raise ParameterError(f"solve(setting, ...) takes no {', '.join(extra)}: they are "
                                 f"the setting's (Setting.replace changes them)")
        setting = params
    else:
        setting = Setting.of(params, variant, solver, thresholds, initial=initial, model=model)
    backend = resolve(setting.solver.backend)
    if backend != setting.solver.backend:  # ``replace`` validates every field again
        setting = setting.with_solver(dataclasses.replace(setting.solver, backend=backend))
    try:
        result = _solve_on(setting)
    except DomainError as first:
        other = _other_backend(setting.solver.backend)
        if other is None:
            raise
        result = _retried(setting.with_solver(dataclasses.replace(setting.solver,
                                                                  backend=other)),
                          setting.solver.backend, first)
    if setting.solver.cross_check:
        result = cross_checked(result, setting)
    if result.fallback_reason is not None:  # for a job that sees no trajectory (verify)
        note_retry(f"{run_label(setting)}: {result.fallback_reason}")
    return result


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
    model, params, variant, solver = (setting.model, setting.params, setting.variant,
                                      setting.solver)
    if model.supports("integrate"):
        # Its stages are solves of their own: cross-checked, a stage's tighter time would
        # set the next stage's start; only the protocol as a whole is cross-checked (above).
        plain = dataclasses.replace(solver, cross_check=False) if solver.cross_check else solver
        staged = model.integrate(params, variant, plain, setting.thresholds, setting.initial)
        if staged is not None:
            return staged
    system = load_system(model, variant, structure=model.structure(params))
    args = tuple(float(a) for a in model.parameter_values(params, variant))
    y0 = _initial_state(model, params, variant, setting.initial, system, args)
    if isinstance(rule := model.settled(params, variant), SettledRule):  # before any step
        rule.check(system.coordinate_names, system.state_names, system.observable_names,
                   f"model {model.name!r}")
    label = run_label(setting)
    problem = Problem(system, args, y0, _LazyRule(model, params, variant, system, args),
                      _horizon(model, params, variant, label), float(model.tail), solver.t_end,
                      solver.method, solver.rtol, solver.atol, label)
    try:
        return _integrated(setting, problem)
    except ArithmeticError as exc:  # last guard: no traceback, even from an engine defect
        raise DomainError(f"{label} failed ({type(exc).__name__}: {exc})") from None


def run_label(setting: Setting) -> str:
    """The setting of a run as its failure messages name it: model, variant, every
    parameter and the solver.

    Examples
    --------
    >>> from reduced_odes.models.deep_linear import MODEL, DeepLinearParams
    >>> run_label(Setting(MODEL, DeepLinearParams(s=2), "default"))
    "model 'deep_linear' (variant 'default'; s=2.0, sigma=0.001; LSODA rtol=1e-10, atol=1e-12)"
    """
    model, params, solver = setting.model, setting.params, setting.solver
    values = ", ".join(f"{f.name}={getattr(params, f.name)!r}" for f in params.declared())
    stepper = "native BDF" if solver.backend == "numba" else solver.method  # numba: BDF only
    return (f"model {model.name!r} ({model.variant_option} {setting.variant!r}; {values}; "
            f"{stepper} rtol={solver.rtol!r}, atol={solver.atol!r})")


def _horizon(model: Model, params: Parameters, variant: str, label: str) -> float:
    """The model's first horizon, checked to be a finite time > 0 (the drivers step forward
    from 0 to it; a negative one would integrate backwards)."""
    horizon = float(model.horizon(params, variant))
    if not 0 < horizon < math.inf:
        raise DomainError(f"{label}: the model's first horizon is {horizon!r}; it must be a "
                          f"finite time > 0")
    return horizon


def _integrated(setting: Setting, problem: Problem) -> Trajectory:
    """The trajectory of ``problem`` (``setting``'s) on the setting's backend."""
    if setting.solver.backend == "numba":
        from ._native import solve_native  # the [fast] extra loads only for a run asking it

        return solve_native(setting, problem)
    try:
        run = None
        if setting.solver.method == "LSODA":
            try:
                run = _lsoda_run(problem)
            except _FastPathUnavailable:
                run = None
        if run is None:
            run = _ivp_run(problem)
    except DomainError as exc:
        if exc.run is not None and exc.t_stop > 0:
            try:
                exc.trajectory = _assemble(setting, problem, exc.run, (exc.t_stop, str(exc)))
            except (ValueError, ArithmeticError):  # what it found cannot be read back: the
                pass  # failure is reported as it is, without a partial trajectory
        raise
    return _assemble(setting, problem, run)


#: Relative difference of phase times the two backends are held to where both succeed,
#: cross-checked; no error estimate up to it marks a phase ill-conditioned.
PHASE_AGREEMENT = 1e-9
#: The cross-check solves again at this fraction of the tolerances (tolerance proportionality:
#: its error is about a hundredth of the first run's, so the difference estimates the first
#: run's error, and bounds the second's with a wide margin).
CHECK_FACTOR = 0.01
#: An error estimate beyond this multiple of ``rtol`` marks a phase ill-conditioned.  At their
#: defaults the phases of every model move by at most 25 ``rtol`` between ``rtol`` and a
#: hundredth of it (the committee machine's 23, the others below 20), and the tighter run is
#: then within ~1e-10 of runs at 1e-13 on both backends.  two_mixture's logistic T_thetaII
#: moves by 46-49 ``rtol``: its slow approach leaves LSODA at rtol 1e-12 still 1.2e-9 off
#: (against both backends at 1e-13), so it is marked.  Beyond this the phase amplifies the
#: integrator's local errors (a quantity grazing its level, an unstable direction, a slow
#: approach, a start far below ``atol``) rather than showing its accuracy.
ILL_CONDITIONED = 30
#: A check at less than this factor below the requested ``rtol`` (asked for ``rtol`` under
#: 1e-12: the check cannot go below ``SolverConfig``'s least ``rtol``, 1e-13) estimates no
#: error: the phases are then reported unchecked, saying so.
_CHECK_FACTOR_LEAST = 0.1


def cross_checked(result: Trajectory, setting: Setting) -> Trajectory:
    """``result`` with its phase times taken from a second solve at a hundredth of the
    tolerances, on the backend that produced it, each with an error estimate (its distance
    from ``result``'s time: the first run's error, and a wide bound on the second's), and
    marked ill-conditioned where the estimate exceeds ``max(PHASE_AGREEMENT,
    ILL_CONDITIONED * rtol)``.

    The series and the dense output stay ``result``'s (they differ from the second run's by
    about its error, far below what a figure shows); the phase times are the second run's, so
    that two backends report the same well-conditioned time to ``PHASE_AGREEMENT``.

    Examples
    --------
    >>> from reduced_odes.models.deep_linear import DeepLinearParams
    >>> traj = solve(DeepLinearParams(s=2.0, sigma=1e-4), solver=SolverConfig(cross_check=True))
    >>> outcome = traj.to_dict()["phase_outcomes"]["T_half"]
    >>> outcome["ill_conditioned"], outcome["error_estimate"] < 1e-8
    (False, True)
    >>> exact = math.log(2.0 / 1e-8 - 1) / 4  # the logistic law's half-way time
    >>> abs(traj.phases["T_half"] / exact - 1) < 1e-10
    True
    """
    solver = result.solver  # the backend that produced it, after any retry
    rtol, atol = (max(getattr(solver, name) * CHECK_FACTOR, _least(name))
                  for name in ("rtol", "atol"))
    if rtol > solver.rtol * _CHECK_FACTOR_LEAST:
        return _every_phase(result, None, f"not cross-checked: at rtol {solver.rtol:g} no "
                                          f"tighter run is possible (rtol >= {_least('rtol'):g})")
    check = dataclasses.replace(solver, rtol=rtol, atol=atol, cross_check=False, n_output=2)
    limit = max(PHASE_AGREEMENT, ILL_CONDITIONED * solver.rtol)
    try:  # on the same backend: the check estimates this run's error, not the other's
        reference = _solve_on(setting.with_solver(check))
    except DomainError as exc:
        return _every_phase(result, True, f"the check at rtol {rtol:g} failed: {exc}")
    checked = {k: reference.phases.get(k, math.nan) for k in result.phases}
    conditioning = {k: _conditioning(t, checked[k], rtol, limit)
                    for k, t in result.phases.items()}
    # Where both runs reached a phase, the more accurate time is reported; where only one
    # did, the phase is marked, and the first run's outcome stands.
    phases = {k: checked[k] if math.isfinite(t) and math.isfinite(checked[k]) else t
              for k, t in result.phases.items()}
    return dataclasses.replace(result, phases=phases, conditioning=conditioning)


def _every_phase(result: Trajectory, ill_conditioned: bool | None, reason: str) -> Trajectory:
    """``result`` with every phase given the same cross-check outcome, without an estimate:
    marked (``True``) or not checked (``None``), for ``reason``."""
    return dataclasses.replace(result, conditioning={
        k: {"ill_conditioned": ill_conditioned, "error_estimate": math.nan, "reason": reason}
        for k in result.phases})


def _least(name: str) -> float:
    """The least value :class:`SolverConfig` allows for the tolerance ``name``."""
    return SolverConfig.__dataclass_fields__[name].metadata["allowed"].lo


def _conditioning(time: float, reference: float, rtol: float, limit: float) -> dict:
    """A phase's cross-check: its estimated relative error against the check's time
    ``reference`` (at ``rtol``), ill-conditioned beyond ``limit``."""
    reached, checked = math.isfinite(time), math.isfinite(reference)
    if not reached and not checked:
        return {"ill_conditioned": False, "error_estimate": math.nan, "reason": None}
    if reached != checked:
        return {"ill_conditioned": True, "error_estimate": math.inf,
                "reason": f"ill-conditioned: not reached at rtol {rtol:g}" if reached else
                          f"ill-conditioned: reached at rtol {rtol:g} (t={reference:.10g})"}
    estimate = abs(time - reference) / abs(reference) if reference else abs(time)
    if estimate <= limit:
        return {"ill_conditioned": False, "error_estimate": estimate, "reason": None}
    return {"ill_conditioned": True, "error_estimate": estimate,
            "reason": f"ill-conditioned: at rtol {rtol:g} the time is {reference:.10g}, "
                      f"{estimate:.2g} away (relative), more than {limit:.2g}"}


class _LazyRule:
    """The model's stop rule as ``f(t, y)``, built on first use: a native run with a
    :class:`SettledRule` never calls it."""

    def __init__(self, model: Model, params, variant: str, system: CompiledSystem, args):
        self._parts, self._rule = (model, params, variant, system, args), None

    def __call__(self, t: float, y) -> float:
        if self._rule is None:
            model, params, variant, system, args = self._parts
            rule = model.settled(params, variant)
            self._rule = (rule.function(system.coordinate_names, system.observable_names,
                                        system.observables, args)
                          if isinstance(rule, SettledRule) else _stop_rule(rule))
        return self._rule(t, y)


def _stop_rule(rule):
    """The model's stop rule as ``f(t, y)``: a rule of the state alone, ``f(y)``, ignores ``t``.

    Examples
    --------
    >>> _stop_rule(lambda y: y[0])(5.0, [-1.0])
    -1.0
    >>> _stop_rule(lambda t, y: t + y[0])(5.0, [-1.0])
    4.0
    """
    import inspect

    try:
        takes_time = len(inspect.signature(rule).parameters) >= 2
    except (TypeError, ValueError):  # a builtin without a signature: a rule of y
        takes_time = False
    return rule if takes_time else (lambda t, y: rule(y))


def _assemble(setting: Setting, problem: Problem, run: _Run,
              stop: tuple[float, str] | None = None) -> Trajectory:
    """The trajectory of ``run``; ``stop``: ``(t_stop, why)`` of a run that stopped early,
    which ends there (a phase crossed after ``t_stop``, in the last step, is not the run's)."""
    system, args, solver = problem.system, problem.args, setting.solver
    t_end = float(run.steps[-1]) if stop is None else stop[0]
    t = output_times(t_end, solver.n_output)
    y = run.dense(t)
    y[:, 0] = problem.y0
    if stop is None or t_end == run.steps[-1]:
        y[:, -1] = run.y_steps[:, -1]  # the last step exactly, not its interpolant
    initial = {k: float(v[0]) for k, v in _series_at(system, problem.y0[:, None], args).items()}
    crossings = setting.model.phases(setting.params, setting.variant, initial,
                                     setting.thresholds)
    # A run that stopped is searched up to its stop: a step past it may lie outside the
    # domain, where the observables are undefined.
    searched = int(np.searchsorted(run.steps, t_end, side="right"))
    phases = {c.name: _crossing_time(system, run, args, c, searched) for c in crossings}
    stats = SolverStats(solver.method, solver.rtol, solver.atol, nfev=run.nfev, njev=run.njev,
                        nlu=run.nlu, steps=len(run.steps) - 1)
    return trajectory(setting, problem, t, _series_at(system, y, args), (crossings, phases),
                      stats, run.dense, None if stop is None else stop[1])


def _evaluator(system: CompiledSystem, args, quantity: str):
    """``value(y)`` of the series ``quantity`` at coordinates ``y``."""
    for names, source in ((system.coordinate_names, None), (system.state_names, system.state),
                          (system.observable_names, system.observables)):
        if quantity in names:
            i = names.index(quantity)
            if source is None:
                return lambda v: v[i]
            return lambda v: source(v, *args)[i]
    allowed = system.coordinate_names + system.state_names + system.observable_names
    raise ParameterError(f"phase quantity {quantity!r} is not a series of {system.model}; "
                         f"allowed: {', '.join(allowed)}")


def _crossing_time(system: CompiledSystem, run: _Run, args, crossing: Crossing,
                   searched: int | None = None) -> float:
    """First time ``crossing.quantity`` reaches ``crossing.level`` within the first
    ``searched`` steps (default: all; NaN if it never does)."""
    value = _evaluator(system, args, crossing.quantity)
    sign, level = crossing.direction, crossing.level

    def g(v) -> float:
        return sign * (value(v) - level)

    steps, y_steps = run.steps[:searched], run.y_steps[:, :searched]
    if crossing.quantity in system.coordinate_names:  # a whole row at once
        i = first_index(sign * (y_steps[system.coordinate_names.index(crossing.quantity)] - level))
    else:
        i = first_index(lambda k: g(y_steps[:, k]), len(steps), monotone=crossing.monotone)
    if i is None:
        return math.nan
    if i == 0:
        return float(steps[0])
    return root_in_step(run.segment(i - 1), g, float(steps[i - 1]), float(steps[i]))
