"""One integration as the steppers see it: a :class:`Problem`, parsed from a
:class:`~reduced_odes.Setting` once (:meth:`Problem.of`): the compiled system, the
parameter values, the start (the model's, or one given by name and checked against the
domain), the first horizon, the stop rule and the label failure messages name it by;
with the domain guards and diagnostics every stepper shares.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ._backend import resolve
from ._compile import CompiledSystem, load_system
from ._contract import Model
from ._params import ParameterError, Parameters, _number
from ._setting import Setting
from ._steppers import stepper_for
from ._stop_rules import SettledRule
from ._trajectory import DomainError

__all__ = ["EVALUATION_ERRORS", "LOG_ATOL_FLOOR", "Problem", "run_label"]

#: The least absolute tolerance of a log coordinate ``y = ln x`` (a state variable ``x = c e^y``):
#: an absolute error in ``y`` is a relative error in ``x``, and no float ``x`` holds one below
#: the machine epsilon (floats near ``x`` are ``eps x`` apart), so the flow, evaluated through
#: ``x``, cannot tell apart two values of ``y`` closer than that.  A tighter ``atol`` only
#: shrinks the steps near ``y = 0`` (where ``atol + rtol |y|`` is ``atol``) until a step
#: budget stops the run: deep_linear settles at ``ln a = ln b = 0`` for ``s = 1``.
LOG_ATOL_FLOOR = float(np.finfo(float).eps)
#: Exceptions that evaluating the compiled flow outside its domain can raise
#: (``math.sqrt`` of a negative number, a complex power converted to float, ...).
EVALUATION_ERRORS = (ValueError, TypeError, OverflowError, ZeroDivisionError)


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


def _log_coordinates(system: CompiledSystem, y0: np.ndarray, args) -> np.ndarray:
    """Which coordinates are logarithms of their state variables (``x = c e^y``, any constant
    ``c > 0``, the model's parameters included), whatever the derivation named them: where
    moving ``y`` by +-1/2 scales ``x`` by ``e^(+-1/2)``, to round-off (a few ulps; 1e-12 is
    far above it and far below any other change's coincidence at both probes).  None where
    the state cannot be evaluated there (no floor: only the steps it saves are lost).

    Examples
    --------
    >>> from reduced_odes._compile import load_system
    >>> _log_coordinates(load_system("deep_linear"), np.array([-3.0, 0.0]), (2.0,))
    array([ True,  True])
    """
    half = math.exp(0.5)
    try:
        x, up, down = (np.asarray(system.state(y0 + shift, *args), dtype=float)
                       for shift in (0.0, 0.5, -0.5))
    except (ValueError, ArithmeticError):
        return np.zeros(y0.size, dtype=bool)
    with np.errstate(all="ignore"):  # x = 0, inf or nan: not a log coordinate
        return (np.abs(up / (x * half) - 1) < 1e-12) & (np.abs(down * half / x - 1) < 1e-12)


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
    stepper = stepper_for(resolve(solver.backend), solver.method).label or solver.method
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
    setting: Setting  # what the problem was parsed from (the model, for its phases)

    @classmethod
    def of(cls, setting: Setting) -> Problem:
        """The problem of ``setting``: its system compiled (or loaded), its start checked.

        Examples
        --------
        >>> from reduced_odes.models.deep_linear import MODEL, DeepLinearParams
        >>> problem = Problem.of(Setting(MODEL, DeepLinearParams(s=2), "default"))
        >>> problem.system.state_names, problem.method, problem.t_end
        (('a', 'b'), 'LSODA', None)
        """
        model, params, variant, solver = (setting.model, setting.params, setting.variant,
                                          setting.solver)
        system = load_system(model, variant, structure=model.structure(params))
        args = tuple(float(a) for a in model.parameter_values(params, variant))
        y0 = _initial_state(model, params, variant, setting.initial, system, args)
        if isinstance(rule := model.settled(params, variant), SettledRule):  # before any step
            rule.check(system.coordinate_names, system.state_names, system.observable_names,
                       f"model {model.name!r}")
        label = run_label(setting)
        return cls(system, args, y0, _LazyRule(model, params, variant, system, args),
                   _horizon(model, params, variant, label), float(model.tail), solver.t_end,
                   solver.method, solver.rtol, solver.atol, label, setting)

    @functools.cached_property
    def log_coordinates(self) -> np.ndarray:
        """Which coordinates are logarithms of their state variables (see
        :data:`LOG_ATOL_FLOOR`); found on first use."""
        return _log_coordinates(self.system, self.y0, self.args)

    def tolerance(self, factor: float = 1.0) -> float | np.ndarray:
        """The absolute tolerance to step at, ``factor`` times the requested ``atol``: that
        float, or an array of one per coordinate where it falls below a log coordinate's
        floor (:data:`LOG_ATOL_FLOOR`), which is then that coordinate's.

        Examples
        --------
        >>> from reduced_odes import SolverConfig
        >>> from reduced_odes.models.deep_linear import MODEL, DeepLinearParams
        >>> problem = Problem.of(Setting(MODEL, DeepLinearParams(), "default",
        ...                              SolverConfig(atol=1e-30)))
        >>> problem.tolerance(), problem.atol
        (array([2.22044605e-16, 2.22044605e-16]), 1e-30)
        >>> Problem.of(Setting(MODEL, DeepLinearParams(), "default")).tolerance(0.1)
        1e-13
        """
        atol = self.atol * factor
        if atol >= LOG_ATOL_FLOOR or not self.log_coordinates.any():
            return atol  # the float as given: the runs above the floor are unchanged
        return np.where(self.log_coordinates, LOG_ATOL_FLOOR, atol)

    def floored(self) -> dict[str, float]:
        """The coordinates whose requested ``atol`` the floor raised, with the atol they step
        at (empty if none): the solver statistics' ``atol_floor``."""
        stepped = self.tolerance()
        if isinstance(stepped, float):
            return {}
        names = self.system.coordinate_names
        return {names[i]: float(stepped[i]) for i in np.flatnonzero(self.log_coordinates)}

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
            except EVALUATION_ERRORS:
                return nan_rates

        def guarded_jac(t, y, *args):
            # Outside the domain the last good Jacobian stands in: the implicit methods
            # reuse stale Jacobians anyway, and BDF's LU factorisation rejects a NaN one,
            # where the NaN rates alone make it shrink the step.
            try:
                value = jac(t, y, *args)
            except EVALUATION_ERRORS:
                return last_good[0]
            if math.isfinite(sum(map(sum, value))):
                last_good[0] = value
                return value
            return last_good[0]

        return guarded_rhs, guarded_jac


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
    try:
        takes_time = len(inspect.signature(rule).parameters) >= 2
    except (TypeError, ValueError):  # a builtin without a signature: a rule of y
        takes_time = False
    return rule if takes_time else (lambda t, y: rule(y))
