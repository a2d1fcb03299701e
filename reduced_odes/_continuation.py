"""Branches of fixed points followed in one parameter, by pseudo-arclength continuation.

The unknowns are the coordinates and the parameter, ``X = (y, p)``.  From a point on
the branch, the predictor steps along the tangent (the null vector of ``[F_y  F_p]``),
and the corrector is Newton on ``F(y, p) = 0`` together with the arclength condition
``t . (X - X_k) = ds`` (Keller's method, as AUTO and PyCont do it).  ``F_y`` is the
compiled (exact) Jacobian; ``F_p`` is a central difference in ``p``, which only steers the
predictor and the arclength row: every point is a root of ``F`` to round-off.

Along a branch the eigenvalues of ``F_y`` are recorded; a fold is where the tangent's
parameter component changes sign, and a change of stability is where the number of
eigenvalues with a positive real part (above the marginal floor) changes, located by
bisection along the arc to ``1e-12`` relative in ``p``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ._fixed_points import FixedPoint, Flow, _converged, classify, newton
from ._params import ParameterError

__all__ = ["Branch", "Continuation", "continue_branch"]

#: Corrector iterations per step; a step whose corrector has not converged is halved.
CORRECTOR_ITERATIONS = 12
#: Steps per branch at most: with the adaptive step this covers decades of the parameter.
MAX_STEPS = 400
#: Bisection of a change of stability stops at this relative width in ``p``.  At a branch
#: point (another branch crossing, as where a fixed point of every ``p`` loses stability)
#: the bordered system is singular and each trial point is off the branch by round-off
#: amplified: there the location is good to ~1e-7 relative (measured: 2.4e-8 on the
#: committee machine's eta_max from a Newton-polished start).
LOCATE_RTOL = 1e-12


@dataclass
class Branch:
    """One branch: its points (fixed points, each at its parameter value) and bifurcations.

    Examples
    --------
    >>> branch = continue_branch(Continuation("deep_linear", {"s": 1.0}, "s"), [0.0, 0.0],
    ...                          1.0, 1.5)
    >>> branch.param, branch.values[0], branch.points[-1].kind
    ('s', 1.0, 'stable')
    """

    param: str
    values: list[float]
    points: list[FixedPoint]
    bifurcations: list[dict]

    def to_dict(self) -> dict:
        """JSON form: each point's parameter value, state, eigenvalues' real parts and kind."""
        return {"param": self.param, "bifurcations": self.bifurcations, "points": [
            {self.param: v, **{k: p.to_dict()[k] for k in ("state", "eigenvalues", "kind",
                                                          "observables")}}
            for v, p in zip(self.values, self.points, strict=True)]}


class Continuation:
    """The flow of ``model`` as a function of one parameter ``param``.

    Examples
    --------
    >>> c = Continuation("deep_linear", {"s": 1.0}, "s")
    >>> c.rates(np.array([0.0, 0.0]), 1.0).tolist()  # a = b = 1 on a b = s
    [0.0, 0.0]
    """

    def __init__(self, model, params, param: str, variant: str | None = None,
                 to: float | None = None):
        base = Flow.of(model, params, variant)
        self.model, self.param, self.variant = base.model, param, base.variant
        names = [f.name for f in base.model.Params.declared()]
        if param not in names or param in base.model.structural:
            allowed = ", ".join(n for n in names if n not in base.model.structural)
            raise ParameterError(f"param={param!r} is not a continuous parameter of model "
                                 f"{base.model.name!r}; allowed: {allowed}")
        self.params = base.params
        # The system of the start, unless the target's differs (e.g. a term that vanishes
        # at the start only, as eta = 0's): then the target's, which holds along the way.
        self.system = base.system
        if to is not None:
            target = Flow.of(base.model, dataclasses.replace(self.params, **{param: to}),
                             self.variant)
            self.system = target.system

    def flow(self, value: float) -> Flow:
        """The flow at ``param = value``, on the continuation's system (ParameterError
        outside the parameter's range)."""
        params = dataclasses.replace(self.params, **{self.param: value})
        args = tuple(float(v) for v in self.model.parameter_values(params, self.variant))
        return Flow(self.system, args, self.model, params, self.variant)

    def args(self, value: float) -> tuple[float, ...]:
        params = dataclasses.replace(self.params, **{self.param: value})
        return tuple(float(v) for v in self.model.parameter_values(params, self.variant))

    def rates(self, y: np.ndarray, value: float) -> np.ndarray:
        return np.asarray(self.system.rhs(0.0, y, *self.args(value)), dtype=float)

    def jacobian(self, y: np.ndarray, value: float) -> np.ndarray:
        """``[F_y  F_p]``: the exact Jacobian and a central difference in the parameter."""
        h = 1e-6 * (1.0 + abs(value))
        f_p = (self.rates(y, value + h) - self.rates(y, value - h)) / (2 * h)
        f_y = np.asarray(self.system.jac(0.0, y, *self.args(value)), dtype=float)
        return np.column_stack([f_y, f_p])

    def inside(self, x: np.ndarray) -> bool:
        """Whether ``X = (y, p)`` has ``p`` in its range and ``y`` in the domain."""
        try:
            return self.flow(float(x[-1])).inside(x[:-1])
        except ParameterError:
            return False

    def point(self, x: np.ndarray) -> FixedPoint:
        return classify(self.flow(float(x[-1])), x[:-1])


def _tangent(c: Continuation, x: np.ndarray, previous: np.ndarray | None,
             direction: float) -> np.ndarray:
    """The unit tangent at ``x``: along ``previous`` if given, else toward ``direction`` in p."""
    full = c.jacobian(x[:-1], float(x[-1]))
    if previous is None:
        t = np.linalg.svd(full)[2][-1]
        return t * (np.sign(t[-1] * direction) or 1.0)
    # Least squares: on a continuum of fixed points (a conservation law) the bordered
    # matrix is singular, and the shortest solution keeps to the previous direction.
    t = np.linalg.lstsq(np.vstack([full, previous]), np.r_[np.zeros(len(x) - 1), 1.0],
                        rcond=None)[0]
    return t / np.linalg.norm(t)


def _corrected(c: Continuation, x0: np.ndarray, t: np.ndarray, ds: float):
    """Newton on ``F = 0`` and ``t . (X - x0) = ds`` from the predictor; None if it fails.

    Done when ``F`` is at round-off and the arclength row at 1e-12: a test on the step
    alone would fail at a branch point, where the bordered Jacobian is singular and the
    least-squares step amplifies round-off."""
    x = x0 + ds * t
    for _ in range(CORRECTOR_ITERATIONS):
        try:
            rates = c.rates(x[:-1], float(x[-1]))
            full = c.jacobian(x[:-1], float(x[-1]))
        except (ParameterError, ValueError, ArithmeticError):
            return None
        arc = float(t @ (x - x0) - ds)
        if not np.all(np.isfinite(rates)):
            return None
        step = np.linalg.lstsq(np.vstack([full, t]), -np.r_[rates, arc], rcond=None)[0]
        if _converged(rates, full[:, :-1], x) and abs(arc) <= 1e-12 * (1 + abs(ds)):
            # One more step, from the tolerance down to round-off, unless it does worse
            # (at a branch point the step amplifies round-off).
            polished = x + step
            if c.inside(polished) and np.linalg.norm(c.rates(
                    polished[:-1], float(polished[-1]))) <= np.linalg.norm(rates):
                return polished
            return x if c.inside(x) else None
        x = x + step
    return None


def continue_branch(c: Continuation, y0, start: float, to: float, *,
                    ds: float | None = None, max_steps: int = MAX_STEPS) -> Branch:
    """The branch through the fixed point near ``y0`` at ``param = start``, followed toward
    ``to`` (it may fold back; it ends at ``to``, after ``max_steps``, or where it leaves the
    domain or the parameter's range).

    Examples
    --------
    >>> c = Continuation("deep_linear", {"s": 1.0}, "s")
    >>> branch = continue_branch(c, [0.0, 0.0], 1.0, 2.0)
    >>> round(branch.values[-1], 12), branch.bifurcations
    (2.0, [])
    """
    first = newton(c.flow(start), y0)
    if first is None:
        raise ParameterError(f"seed={list(map(float, y0))!r} at {c.param}={start!r}: Newton "
                             f"finds no fixed point from it; allowed: a start near one")
    direction = np.sign(to - start) or 1.0
    ds = ds or 0.02 * max(abs(to - start), 1e-3)
    x, t = np.r_[first, start], None
    t = _tangent(c, x, None, direction)
    values, points, bifurcations = [start], [c.point(x)], []
    for _ in range(max_steps):
        moved = _step(c, x, t, ds)
        if moved is None:
            break
        new, ds = moved
        new_t = _tangent(c, new, t, direction)
        # Past either end of [start, to] (after a fold, back past the start): land on it.
        end = next((e for e, side in ((to, 1), (start, -1))
                    if (float(new[-1]) - e) * direction * side > 0), None)
        if end is not None:
            new = _landed(c, x, new, end)
            if new is None:
                break
            new_t = _tangent(c, new, t, direction)
        point = c.point(new)
        for found, at in _detected(c, x, t, new, new_t, points[-1], point):
            bifurcations.append(found)
            if at is not None:  # the located point joins the branch
                values.append(float(at[-1]))
                points.append(c.point(at))
        x, t = new, new_t
        values.append(float(x[-1]))
        points.append(point)
        if end is not None:
            break
    return Branch(c.param, values, points, bifurcations)


def _step(c: Continuation, x: np.ndarray, t: np.ndarray, ds: float):
    """``(next point, next step size)``, halving the step until the corrector converges."""
    while ds > 1e-10:
        new = _corrected(c, x, t, ds)
        if new is not None:
            return new, min(1.3 * ds, 0.2 * (1 + abs(float(x[-1]))))
        ds /= 2
    return None


def _landed(c: Continuation, x: np.ndarray, beyond: np.ndarray, to: float):
    """The point at ``param = to`` between ``x`` and ``beyond`` (Newton at fixed ``p``)."""
    w = (to - x[-1]) / (beyond[-1] - x[-1])
    y = newton(c.flow(to), x[:-1] + w * (beyond - x)[:-1])
    return None if y is None else np.r_[y, to]


def _detected(c: Continuation, x, t, new, new_t, before: FixedPoint, after: FixedPoint
              ) -> list[tuple[dict, np.ndarray | None]]:
    """The fold and the change of stability between two consecutive points, if any, each
    with the located point on the branch (None for a fold: the nearer of the two)."""
    found: list[tuple[dict, np.ndarray | None]] = []
    if np.sign(t[-1]) != np.sign(new_t[-1]) and t[-1] != 0:
        found.append(({"param": float(new[-1] if abs(new_t[-1]) < abs(t[-1]) else x[-1]),
                       "kind": "fold"}, None))
    if before.unstable_dimension != after.unstable_dimension:
        at = _bisected(c, x, t, new, min(before.unstable_dimension, after.unstable_dimension))
        kind = ("loss_of_stability" if before.unstable_dimension == 0 else
                "gain_of_stability" if after.unstable_dimension == 0 else "saddle_change")
        found.append(({"param": float(at[-1]), "kind": kind,
                       "unstable_before": before.unstable_dimension,
                       "unstable_after": after.unstable_dimension}, at))
    return found


def _bisected(c: Continuation, x, t, new, index: int) -> np.ndarray:
    """The parameter where the real part of the ``index``-th eigenvalue (largest real part
    first: the one that crosses) changes sign between ``x`` and ``new``: bisection on the
    arclength, each trial corrected onto the branch."""
    def crossing_part(z: np.ndarray) -> float:
        return float(np.sort(c.point(z).eigenvalues.real)[::-1][index])

    low, high = 0.0, float(t @ (new - x))
    sign = np.sign(crossing_part(x))
    for _ in range(200):
        if abs(high - low) <= LOCATE_RTOL * (1 + abs(float(new[-1]))):
            break
        middle = (low + high) / 2
        trial = _corrected(c, x, t, middle)
        if trial is None:
            break
        if np.sign(crossing_part(trial)) == sign:
            low = middle
        else:
            high = middle
    crossing = _corrected(c, x, t, (low + high) / 2)
    return crossing if crossing is not None else new
