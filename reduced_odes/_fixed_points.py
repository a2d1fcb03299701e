"""Fixed points of any model's derived flow: found by Newton, classified by the exact Jacobian.

The flow is the compiled system's ``rhs`` in the model's integration coordinates, and
its Jacobian the compiled (derived) ``jac``, on whichever backend compiled them.  Newton
is damped (a backtracking line search on the residual), bounded in its iterations and
kept inside the model's domain (every margin ``> 0``).  Seeds come from the user, from
the model's symmetric states (an optional method ``symmetric_states(params, variant)``
returning mappings of state or coordinate names to values), and from the slow stretches
of a trajectory: the local minima of the flow's speed, and its end.

At a fixed point the Jacobians in the state and in the integration coordinates are
similar matrices, so the eigenvalues are the state's whatever the coordinates.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ._compile import CompiledSystem, load_system
from ._integrate import solve
from ._params import ParameterError, Parameters
from ._problem import _from_mapping
from ._registry import get_model
from ._trajectory import DomainError

__all__ = ["FixedPoint", "Flow", "classify", "find_fixed_points", "newton", "slow_points"]

#: Eigenvalues whose real part is within this fraction of the spectrum's largest modulus
#: of 0 are marginal (neither stable nor unstable): round-off at a singular Jacobian puts
#: a zero eigenvalue at ~sqrt(machine epsilon) * |J| ~ 1e-8 |J|, well below it.
MARGINAL = 1e-6
#: A Newton point is a fixed point when its residual is within this multiple of the
#: round-off of evaluating the rates, ``|J| (1 + |y|)`` times machine epsilon.
RESIDUAL_ROUNDOFF = 1e4
#: Newton's iterations are bounded: quadratic convergence needs ~6 from a good seed, and
#: the damped phase from a seed on a slow stretch a few dozen.
MAX_ITERATIONS = 100
#: Two fixed points are the same when every coordinate agrees to this (relative to 1 + |y|).
SAME_POINT = 1e-7


@dataclass(frozen=True)
class Flow:
    """A model's compiled flow at one setting: the system and the parameter values it takes.

    Examples
    --------
    >>> flow = Flow.of("deep_linear", {"s": 2.0})
    >>> flow.system.coordinate_names, flow.args
    (('log_a', 'log_b'), (2.0,))
    """

    system: CompiledSystem
    args: tuple[float, ...]
    model: object = field(repr=False)
    params: Parameters = field(repr=False)
    variant: str = "default"

    @classmethod
    def of(cls, model, params: Parameters | Mapping | None = None,
           variant: str | None = None) -> Flow:
        """The flow of ``model`` (a Model or a name) at ``params`` (Parameters or a mapping)."""
        model = get_model(model)
        if not isinstance(params, Parameters):
            params = model.make_params(params)
        variant = model.resolve_variant(variant)
        model.check(params, variant)
        system = load_system(model, variant, structure=model.structure(params))
        args = tuple(float(v) for v in model.parameter_values(params, variant))
        return cls(system, args, model, params, variant)

    def rates(self, y) -> np.ndarray:
        """``dy/dt`` at the coordinates ``y``."""
        return np.asarray(self.system.rhs(0.0, y, *self.args), dtype=float)

    def jacobian(self, y) -> np.ndarray:
        """The exact Jacobian ``d(dy/dt)/dy`` at ``y``."""
        return np.asarray(self.system.jac(0.0, y, *self.args), dtype=float)

    def inside(self, y) -> bool:
        """Whether ``y`` is finite and inside the model's domain."""
        if not np.all(np.isfinite(y)):
            return False
        if not self.system.domain_labels:
            return True
        try:
            return min(self.system.margins(y, *self.args)) > 0
        except (ValueError, ArithmeticError):
            return False

    def coordinates_of(self, state: Mapping[str, float]) -> np.ndarray:
        """Coordinates of a state given by name (state or coordinate names, one per variable)."""
        return np.asarray(_from_mapping(self.system, state, self.args), dtype=float)


@dataclass(frozen=True)
class FixedPoint:
    """A fixed point of the flow, with the eigenvalues of the exact Jacobian there.

    Attributes
    ----------
    coordinates : ndarray
        The point in the integration coordinates.
    state, observables : dict of str -> float
    eigenvalues : ndarray of complex
        Largest real part first.
    residual : float
        ``max |dy/dt|`` at the point.

    Examples
    --------
    >>> point = classify(Flow.of("deep_linear", {"s": 1.0}), [0.0, 0.0])
    >>> point.kind, point.unstable_dimension, point.state
    ('stable', 0, {'a': 1.0, 'b': 1.0})
    """

    coordinates: np.ndarray
    state: dict[str, float]
    observables: dict[str, float]
    eigenvalues: np.ndarray
    residual: float

    @property
    def floor(self) -> float:
        """The real part below which (in modulus) an eigenvalue is marginal."""
        return MARGINAL * float(np.max(np.abs(self.eigenvalues), initial=0.0))

    @property
    def unstable_dimension(self) -> int:
        """The number of eigenvalues with a real part above the marginal floor."""
        return int(np.sum(self.eigenvalues.real > self.floor))

    @property
    def kind(self) -> str:
        """``stable`` (no growing direction), ``unstable`` (no decaying one) or ``saddle``."""
        if self.unstable_dimension == 0:
            return "stable"
        if np.all(self.eigenvalues.real > -self.floor):
            return "unstable"
        return "saddle"

    def to_dict(self) -> dict:
        """The JSON form of ``reduced-odes fixed-points --json``.

        Examples
        --------
        >>> point = find_fixed_points("deep_linear", {"s": 4.0},
        ...                           seeds=[{"a": 2.0, "b": 2.0}], trajectory=False)[0]
        >>> point.to_dict()["kind"], point.to_dict()["eigenvalues"]
        ('stable', [0.0, -8.0])
        """
        return {"state": self.state, "eigenvalues": [_clean(v) for v in self.eigenvalues.real],
                "eigenvalues_imag": [_clean(v) for v in self.eigenvalues.imag],
                "kind": self.kind, "unstable_dimension": self.unstable_dimension,
                "observables": self.observables, "residual": self.residual}


def _clean(value: float) -> float:
    """A float for JSON, with a signed zero made plain (``-0.0`` prints as ``0.0``)."""
    return float(value) + 0.0


def newton(flow: Flow, y0: Sequence[float], *, max_iterations: int = MAX_ITERATIONS
           ) -> np.ndarray | None:
    """A fixed point near ``y0`` by damped Newton, or None if none is found.

    Each step solves ``J s = -F`` in the least-squares sense (a singular Jacobian, as
    on a line of fixed points, gives the shortest step), then halves it until the
    residual ``|F|`` decreases and the point stays in the domain.

    Examples
    --------
    >>> flow = Flow.of("deep_linear", {"s": 4.0})
    >>> y = newton(flow, [0.0, 0.1])  # ln a + ln b = ln 4 on the line of fixed points
    >>> round(float(y[0] + y[1]), 12) == round(float(np.log(4.0)), 12)
    True
    """
    y = np.asarray(y0, dtype=float).copy()
    try:
        residual = flow.rates(y) if flow.inside(y) else None
    except (ValueError, ArithmeticError):
        residual = None
    if residual is None or not np.all(np.isfinite(residual)):
        return None
    # Polished until the residual stops falling, not only below the tolerance: at a
    # singular fixed point (a marginal direction) the residual is quadratic in the
    # distance, so a residual at the tolerance can still be 1e-6 away.
    for _ in range(max_iterations):
        try:
            step = np.linalg.lstsq(flow.jacobian(y), -residual, rcond=None)[0]
        except (ValueError, ArithmeticError):  # LinAlgError is a ValueError
            break
        if float(np.max(np.abs(step))) <= np.finfo(float).eps * (1 + np.max(np.abs(y))):
            break
        moved = _damped(flow, y, step, float(np.linalg.norm(residual)))
        if moved is None:
            break
        y, residual = moved
    return y if _converged(residual, flow.jacobian(y), y) else None


def _converged(residual: np.ndarray, jacobian: np.ndarray, y: np.ndarray) -> bool:
    roundoff = np.finfo(float).eps * (1.0 + np.max(np.abs(jacobian), initial=0.0)) * (
        1.0 + np.max(np.abs(y), initial=0.0))
    return bool(np.all(np.isfinite(residual))) and float(
        np.max(np.abs(residual), initial=0.0)) <= RESIDUAL_ROUNDOFF * roundoff


def _damped(flow: Flow, y: np.ndarray, step: np.ndarray, norm: float):
    """``(y + t step, F there)`` for the largest ``t = 2^-k`` that lowers ``|F|``, or None."""
    t = 1.0
    while t > 1e-12:
        trial = y + t * step
        if flow.inside(trial):
            try:
                rates = flow.rates(trial)
            except (ValueError, ArithmeticError):  # overflow far out: a shorter step
                rates = np.full(len(y), np.nan)
            if np.all(np.isfinite(rates)) and np.linalg.norm(rates) < (1 - 1e-4 * t) * norm:
                return trial, rates
        t /= 2
    return None


def classify(flow: Flow, y: Sequence[float]) -> FixedPoint:
    """The fixed point at ``y``: its state, observables and Jacobian eigenvalues.

    Examples
    --------
    >>> import math
    >>> flow = Flow.of("deep_linear", {"s": 1.0})
    >>> classify(flow, [0.0, 0.0]).eigenvalues.real.tolist()  # a = b = 1: 0 and -(a^2 + b^2)
    [0.0, -2.0]
    """
    y = np.asarray(y, dtype=float)
    system, args = flow.system, flow.args
    eigenvalues = np.linalg.eigvals(flow.jacobian(y))
    eigenvalues = eigenvalues[np.lexsort((-eigenvalues.imag, -eigenvalues.real))]
    values = system.observables(y, *args)[:len(system.observable_names)]
    return FixedPoint(
        coordinates=y,
        state=dict(zip(system.state_names, map(float, system.state(y, *args)), strict=True)),
        observables=dict(zip(system.observable_names, map(float, values), strict=True)),
        eigenvalues=eigenvalues + 0.0,
        residual=float(np.max(np.abs(flow.rates(y)), initial=0.0)))


def slow_points(trajectory, count: int = 8) -> list[np.ndarray]:
    """Seeds from a trajectory: its end, and the local minima of the flow's speed
    ``|dy/dt|`` (slowest first, at most ``count``).

    Examples
    --------
    >>> from reduced_odes import solve
    >>> from reduced_odes.models.deep_linear import DeepLinearParams
    >>> seeds = slow_points(solve(DeepLinearParams(s=1.0)))
    >>> len(seeds) >= 1
    True
    """
    system, args = trajectory.system, trajectory.system_args
    states = np.column_stack([trajectory.series[n] for n in system.coordinate_names])
    speed = np.array([np.linalg.norm(system.rhs(0.0, y, *args)) for y in states])
    inner = np.arange(1, len(speed) - 1)
    minima = inner[(speed[inner] < speed[inner - 1]) & (speed[inner] <= speed[inner + 1])]
    ordered = [int(i) for i in minima[np.argsort(speed[minima])][:count]]
    return [states[-1]] + [states[i] for i in ordered if i != len(states) - 1]


def _distinct(points: Iterable[FixedPoint]) -> list[FixedPoint]:
    kept: list[FixedPoint] = []
    for point in points:
        y = point.coordinates
        if not any(np.max(np.abs(y - other.coordinates)) <= SAME_POINT * (
                1 + np.max(np.abs(y))) for other in kept):
            kept.append(point)
    return kept


def _seeds(flow: Flow, seeds, trajectory: bool) -> list[np.ndarray]:
    """Every seed in coordinates: the user's, the model's symmetric states, a trajectory's."""
    found = [flow.coordinates_of(s) if isinstance(s, Mapping) else np.asarray(s, dtype=float)
             for s in seeds]
    model = flow.model
    if model.supports("symmetric_states"):
        found += [flow.coordinates_of(s) for s in model.symmetric_states(flow.params,
                                                                           flow.variant)]
    if trajectory:
        try:
            run = solve(flow.params, flow.variant, model=model)
        except DomainError as exc:  # a run that stopped part-way still passes slow stretches
            run = exc.trajectory
        if run is not None:
            found += slow_points(run)
    for y in found:
        if y.shape != (flow.system.size,):
            raise ParameterError(f"seed={y.tolist()!r} has {y.size} values; allowed: one per "
                                 f"variable ({', '.join(flow.system.state_names)})")
    return found


def find_fixed_points(model, params: Parameters | Mapping | None = None,
                      variant: str | None = None, *, seeds: Sequence = (),
                      trajectory: bool = True) -> list[FixedPoint]:
    """The distinct fixed points Newton reaches from every seed, classified.

    Parameters
    ----------
    model : Model or str
    params : Parameters or mapping, optional
        The model's parameters (default: its defaults).
    variant : str, optional
    seeds : sequence
        Starts of the user's: mappings by state or coordinate name, or coordinate vectors.
    trajectory : bool
        Also seed from the model's own trajectory (its end and its slow stretches).

    Returns
    -------
    list of FixedPoint
        Most unstable first, then by the first state variable.

    Examples
    --------
    >>> points = find_fixed_points("deep_linear", {"s": 1.0, "sigma": 1e-3})
    >>> [(p.kind, round(p.observables["u"], 9)) for p in points]
    [('stable', 1.0)]
    """
    flow = Flow.of(model, params, variant)
    points = [classify(flow, y) for y in (newton(flow, s) for s in _seeds(flow, seeds,
                                                                          trajectory))
              if y is not None]
    distinct = _distinct(points)
    return sorted(distinct, key=lambda p: (-p.unstable_dimension,
                                           tuple(p.coordinates.tolist())))
