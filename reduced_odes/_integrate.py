"""The one verb: integrate a model's reduced flow from t = 0 until its state settles.

Two drivers produce the same trajectory, one module each (the problem they
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
machine-generated twin of the compiled system, with the same stop rule,
crossings and output grid (``tests/engine/test_native.py`` holds the two together).

Evaluations outside the model's domain (trial states of a large step) return
NaN to the integrator, which then retries a smaller step; should a non-finite
state be accepted anyway, the direct driver restarts from its last accepted
step.  No NaN reaches a trajectory: a run either stays finite and inside the
domain, or stops with a :class:`DomainError` naming the time, state and
violated (or nearest) domain condition.

Phase times are first crossings (the model's :class:`~reduced_odes.Crossing`
definitions), bracketed by the accepted steps and refined by ``brentq`` on the
dense output (:mod:`reduced_odes._crossing`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

import numpy as np

from ._backend import resolve
from ._compile import CompiledSystem, load_system
from ._contract import Crossing, Model, SettledRule
from ._crossing import first_index, root_in_step
from ._driver import Problem, _Run
from ._ivp import _ivp_run
from ._lsoda import _FastPathUnavailable, _lsoda_run
from ._params import ParameterError, Parameters, SolverConfig, _number
from ._registry import get_model, model_for
from ._trajectory import (
    DomainError,
    SolverStats,
    Trajectory,
    _series_at,
    output_times,
    trajectory,
)

__all__ = ["DomainError", "SolverStats", "Trajectory", "solve"]


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
    return y0


def _checked(model: Model, params, solver, thresholds) -> None:
    if not isinstance(params, model.Params):
        raise ParameterError(f"params={params!r} must be a {model.Params.__name__}")
    if not isinstance(solver, SolverConfig):
        raise ParameterError(f"solver={solver!r} must be a SolverConfig")
    if thresholds is not None and (model.Thresholds is None
                                   or not isinstance(thresholds, model.Thresholds)):
        expected = model.Thresholds.__name__ if model.Thresholds else "None"
        raise ParameterError(f"thresholds={thresholds!r} must be a {expected}")


def solve(params: Parameters, variant: str | None = None, solver: SolverConfig | None = None,
          thresholds: Parameters | None = None, *, initial=None,
          model: Model | str | None = None) -> Trajectory:
    """Integrate a model's reduced gradient flow from initialisation until it settles.

    Parameters
    ----------
    params : Parameters
        The model's parameters (an instance of ``model.Params``).
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
        The trajectory reached the boundary of the model's domain.

    Examples
    --------
    >>> from reduced_odes.models.deep_linear import DeepLinearParams
    >>> traj = solve(DeepLinearParams(s=1.0, sigma=1e-3))
    >>> abs(traj.phases["T_half"] / (math.log(1 / 1e-6 - 1) / 2) - 1) < 1e-8
    True
    """
    model = model_for(params) if model is None else get_model(model)
    solver = solver or SolverConfig()
    _checked(model, params, solver, thresholds)
    backend = resolve(solver.backend)
    if backend != solver.backend:  # ``replace`` validates every field again
        solver = dataclasses.replace(solver, backend=backend)
    variant = model.resolve_variant(variant)
    model.check(params, variant)
    if model.supports("integrate"):
        staged = model.integrate(params, variant, solver, thresholds, initial)
        if staged is not None:
            return staged
    system = load_system(model, variant, structure=model.structure(params))
    args = tuple(float(a) for a in model.parameter_values(params, variant))
    y0 = _initial_state(model, params, variant, initial, system, args)
    label = run_label(model, params, variant, solver)
    problem = Problem(system, args, y0, _LazyRule(model, params, variant, system, args),
                      _horizon(model, params, variant, label), float(model.tail), solver.t_end,
                      solver.method, solver.rtol, solver.atol, label)
    try:
        return _integrated(model, params, variant, solver, thresholds, problem)
    except DomainError as exc:  # a driver's message without the setting gets it appended
        if label not in str(exc):
            exc.args = (f"{exc}; {label}",)  # the same error: whatever it carries stays
        raise
    except ArithmeticError as exc:  # last guard: an overflow while reporting a failed run
        raise DomainError(f"{label} failed ({type(exc).__name__}: {exc})") from None


def run_label(model: Model, params: Parameters, variant: str, solver: SolverConfig) -> str:
    """The setting of a run as its failure messages name it: model, variant, every
    parameter and the solver.

    Examples
    --------
    >>> from reduced_odes.models.deep_linear import MODEL, DeepLinearParams
    >>> run_label(MODEL, DeepLinearParams(s=2), "default", SolverConfig())
    "model 'deep_linear' (variant 'default'; s=2.0, sigma=0.001; LSODA rtol=1e-10, atol=1e-12)"
    """
    values = ", ".join(f"{f.name}={getattr(params, f.name)!r}" for f in params.declared())
    stepper = "native BDF" if solver.backend == "numba" else solver.method  # numba: BDF only
    return (f"model {model.name!r} ({model.variant_option} {variant!r}; {values}; "
            f"{stepper} rtol={solver.rtol!r}, atol={solver.atol!r})")


def _horizon(model: Model, params: Parameters, variant: str, label: str) -> float:
    """The model's first horizon, checked to be a finite time > 0 (the drivers step forward
    from 0 to it; a negative one would integrate backwards)."""
    horizon = float(model.horizon(params, variant))
    if not 0 < horizon < math.inf:
        raise DomainError(f"{label}: the model's first horizon is {horizon!r}; it must be a "
                          f"finite time > 0")
    return horizon


def _integrated(model, params, variant, solver, thresholds, problem: Problem) -> Trajectory:
    """The trajectory of ``problem`` on the solver's backend."""
    if solver.backend == "numba":
        from ._native import solve_native  # the [fast] extra loads only for a run asking it

        return solve_native(model, params, variant, solver, thresholds, problem)
    run = None
    if solver.method == "LSODA":
        try:
            run = _lsoda_run(problem)
        except _FastPathUnavailable:
            run = None
    if run is None:
        run = _ivp_run(problem)
    return _assemble(model, params, variant, solver, thresholds, problem, run)


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


def _assemble(model, params, variant, solver, thresholds, problem: Problem,
              run: _Run) -> Trajectory:
    system, args = problem.system, problem.args
    t_end = float(run.steps[-1])
    t = output_times(t_end, solver.n_output)
    y = run.dense(t)
    y[:, 0] = problem.y0
    y[:, -1] = run.y_steps[:, -1]  # the last step exactly, not its interpolant
    initial = {k: float(v[0]) for k, v in _series_at(system, problem.y0[:, None], args).items()}
    crossings = model.phases(params, variant, initial, thresholds)
    phases = {c.name: _crossing_time(system, run, args, c) for c in crossings}
    stats = SolverStats(solver.method, solver.rtol, solver.atol, nfev=run.nfev, njev=run.njev,
                        nlu=run.nlu, steps=len(run.steps) - 1)
    return trajectory(model, (params, variant, solver, thresholds), problem, t,
                      _series_at(system, y, args), (crossings, phases), stats, run.dense)


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


def _crossing_time(system: CompiledSystem, run: _Run, args, crossing: Crossing) -> float:
    """First time ``crossing.quantity`` reaches ``crossing.level`` (NaN if it never does)."""
    value = _evaluator(system, args, crossing.quantity)
    sign, level = crossing.direction, crossing.level

    def g(v) -> float:
        return sign * (value(v) - level)

    steps, y_steps = run.steps, run.y_steps
    if crossing.quantity in system.coordinate_names:  # a whole row at once
        i = first_index(sign * (y_steps[system.coordinate_names.index(crossing.quantity)] - level))
    else:
        i = first_index(lambda k: g(y_steps[:, k]), len(steps), monotone=crossing.monotone)
    if i is None:
        return math.nan
    if i == 0:
        return float(steps[0])
    return root_in_step(run.segment(i - 1), g, float(steps[i - 1]), float(steps[i]))
