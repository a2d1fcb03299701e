"""Plateaus from saddles: each slow stretch of a trajectory matched to the saddle it passes,
its escape time predicted from the saddle's unstable eigenvalue, and the final rate of
convergence predicted from the last fixed point's slowest eigenvalue.

The prediction of an escape is linear theory plus one exact run.  Near the saddle
``y*`` the flow is ``y - y* ~ sum_i c_i e^(lambda_i t) v_i``; the start's distance from
the stable manifold is its component ``c0 = w . (y0 - y*)`` along the unstable
eigenvector ``v`` (``w`` the left eigenvector, ``w . v = 1``).  The unstable manifold
itself is run exactly from ``y* + eps v`` (the engine's ``solve``), reaching each later
phase at ``tau``; a start at ``c0`` then takes ``tau + ln(eps / |c0|) / lambda``.
What this neglects is the start's transport to the saddle: ``c0`` is the linear
projection of a start that may be far from it, so an O(1) factor in the distance (an
O(1/lambda) shift of the time) is left out, and so is the stable modes' decay.
"""

from __future__ import annotations

import math

import numpy as np

from ._fixed_points import FixedPoint, Flow, _distinct, classify, newton, slow_points
from ._integrate import solve
from ._io import json_safe
from ._registry import model_for
from ._trajectory import DomainError

__all__ = ["plateau_predictions"]

#: The unstable manifold is started this far (relative to ``1 + |y*|``) from the saddle:
#: the linear regime, and far above the integrator's tolerances.
MANIFOLD_START = 1e-7


def _flow_of(trajectory) -> Flow:
    # By its parameters' class: a user's model loaded from a file is registered by no name.
    model = model_for(trajectory.params)
    return Flow(trajectory.system, tuple(trajectory.system_args), model, trajectory.params,
                trajectory.variant)


def _saddles(flow: Flow, trajectory) -> list[FixedPoint]:
    found = (newton(flow, seed) for seed in slow_points(trajectory)[1:])
    points = [classify(flow, y) for y in found if y is not None]
    return _distinct([p for p in points if p.unstable_dimension >= 1])


def _unstable_pair(flow: Flow, point: FixedPoint) -> tuple[float, np.ndarray, np.ndarray]:
    """``(lambda, v, w)``: the leading eigenvalue, its right and left eigenvectors."""
    values, vectors = np.linalg.eig(flow.jacobian(point.coordinates))
    i = int(np.argmax(values.real))
    left = np.linalg.inv(vectors)[i]
    return float(values[i].real), vectors[:, i].real, left.real


def _escape(flow: Flow, trajectory, point: FixedPoint, near: float) -> dict:
    """The saddle's predicted times for the phases after ``near`` (its nearest approach)."""
    lam, v, w = _unstable_pair(flow, point)
    y_star = point.coordinates
    c0 = float(w @ (trajectory.at(0.0) - y_star))
    c_near = float(w @ (trajectory.at(near) - y_star))
    eps = MANIFOLD_START * (1 + float(np.max(np.abs(y_star))))
    start = y_star + math.copysign(eps, c0 if c0 else 1.0) * v / float(np.max(np.abs(v)))
    eps_along = float(w @ (start - y_star))
    initial = dict(zip(flow.system.coordinate_names, map(float, start), strict=True))
    try:
        manifold = solve(trajectory.params, trajectory.variant, thresholds=trajectory.thresholds,
                         initial=initial, model=flow.model).phases
    except DomainError as exc:
        manifold = exc.trajectory.phases if exc.trajectory is not None else {}
    phases = {}
    for name, measured in trajectory.phases.items():
        tau = manifold.get(name, math.nan)
        if not (measured > near and math.isfinite(tau)) or c0 == 0:
            continue
        predicted = tau + math.log(abs(eps_along) / abs(c0)) / lam
        from_plateau = near + tau + math.log(abs(eps_along) / abs(c_near)) / lam
        phases[name] = {"predicted": predicted, "measured": measured,
                        "relative_error": predicted / measured - 1,
                        "predicted_from_plateau": from_plateau,
                        "relative_error_from_plateau": from_plateau / measured - 1}
    return {"saddle": point.state, "observables": point.observables, "eigenvalue": lam,
            "unstable_dimension": point.unstable_dimension, "nearest_time": near,
            "distance": abs(c0), "distance_at_plateau": abs(c_near), "phases": phases}


def _convergence(flow: Flow, trajectory) -> dict | None:
    """The final fixed point's slowest decay rate, predicted and measured."""
    y = newton(flow, trajectory.at(float(trajectory.t[-1])))
    if y is None:
        return None
    point = classify(flow, y)
    decaying = point.eigenvalues.real[point.eigenvalues.real < -point.floor]
    if point.kind != "stable" or decaying.size == 0:
        return None
    states = np.column_stack([trajectory.series[n] for n in flow.system.coordinate_names])
    distance = np.max(np.abs(states - y), axis=1)
    # The linear regime: distances between 1e-3 and 1e3 times the run's last accuracy.
    window = (distance < 1e-3) & (distance > 1e3 * max(float(distance[-1]), 1e-13))
    measured = math.nan
    if np.count_nonzero(window) >= 3:
        measured = -float(np.polyfit(trajectory.t[window], np.log(distance[window]), 1)[0])
    return {"fixed_point": point.state, "predicted_rate": float(-np.max(decaying)),
            "measured_rate": measured}


def plateau_predictions(trajectory) -> dict:
    """The saddles a trajectory passes, each with its predicted escape times, and the
    predicted rate of convergence to its final fixed point, beside the measured values.

    Examples
    --------
    >>> from reduced_odes import solve
    >>> from reduced_odes.models.deep_linear import DeepLinearParams
    >>> report = plateau_predictions(solve(DeepLinearParams(s=1.0, sigma=1e-3)))
    >>> report["plateaus"], round(report["convergence"]["predicted_rate"], 9)
    ([], 2.0)
    """
    flow = _flow_of(trajectory)
    states = np.column_stack([trajectory.series[n] for n in flow.system.coordinate_names])
    plateaus = []
    for point in _saddles(flow, trajectory):
        near = float(trajectory.t[int(np.argmin(np.max(np.abs(states - point.coordinates),
                                                        axis=1)))])
        plateaus.append(_escape(flow, trajectory, point, near))
    return json_safe({"plateaus": plateaus, "convergence": _convergence(flow, trajectory)})
