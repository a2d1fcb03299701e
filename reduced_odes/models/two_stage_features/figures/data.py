"""The data files behind the figures, computed from the package and rounded for stable bytes.

Every number is rounded to :data:`DIGITS` significant digits, far below what a
figure resolves and far above the solver's rtol, so the files are the same
bytes on every machine whose arithmetic agrees to ~1e-6.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np

from reduced_odes.author import json_safe

from ..params import TwoStageParams

__all__ = ["DATA_FILES", "DIGITS", "D_Q_POINTS", "SCALING_SIGMAS", "TRAJECTORY_PARAMS",
           "scaling_document", "trajectory_document", "write_data"]

#: Significant digits kept in the data files.
DIGITS = 5
#: The setting of ``stages`` and ``spectrum``: defaults at the plateau claims' sigma.
TRAJECTORY_PARAMS = TwoStageParams(sigma=1e-4)
#: Output times of the trajectory file, log-spaced from ``T_START`` to the end of the run.
N_TIMES, T_START = 600, 10.0
#: The sigma sweep of ``scaling`` (defaults otherwise).
SCALING_SIGMAS = (1e-2, 1e-3, 1e-4, 1e-6, 1e-8, 1e-12, 1e-16)
#: ``d_Q`` of the markers of ``scaling`` (sigma = 1e-4, mu = 1): kappa = 4/d_Q <= 0.25 at the
#: defaults, the verified regime; the predicted line runs through every integer in between.
D_Q_POINTS = (4, 6, 8, 12, 16, 24, 32)
#: Points of the predicted lines.
N_LINE = 60
#: The phase times the scaling figure draws.
STAGE_KEYS = ("T_P", "T_Q", "T_cross")


def _phases(traj) -> dict[str, float]:
    return {k: float(v) for k, v in traj.phases.items()}


def trajectory_document(params: TwoStageParams = TRAJECTORY_PARAMS) -> dict:
    """One run: ``L_P``, ``L_Q``, ``v``, ``a``, ``b`` on log-spaced times, phases and predictions.

    Examples
    --------
    >>> doc = trajectory_document(TwoStageParams(sigma=1e-2))  # doctest: +SKIP
    >>> sorted(doc["series"])  # doctest: +SKIP
    ['L_P', 'L_Q', 'eig_P', 'eig_Q', 't', 'v']
    """
    from reduced_odes import solve

    from ..numerics import predict

    traj = solve(params)
    t = np.geomspace(T_START, float(traj.t[-1]), N_TIMES)
    observed = traj.observables_at(t)
    v = traj.at(t)[traj.system.coordinate_names.index("v")]
    series = {"t": t, "v": v, **{k: observed[k] for k in ("L_P", "L_Q", "eig_P", "eig_Q")}}
    pred = predict(params)
    keep = ("a1", "v1", "a_inf", "b_inf", "v_inf", "L_P_min", "L_Q_min", "L_plateau", "L_P0")
    return json_safe({"params": params.as_dict(), "series": series, "phases": _phases(traj),
                    "predictions": {k: pred[k] for k in keep}}, digits=DIGITS)


def _measured(settings: Sequence[TwoStageParams], keys: Sequence[str]) -> dict[str, list]:
    from reduced_odes import solve

    runs = [_phases(solve(p)) for p in settings]
    return {k: [run[k] for run in runs] for k in keys}


def _predicted(settings: Sequence[TwoStageParams], keys: Sequence[str]) -> dict[str, list]:
    from ..numerics import predict

    runs = [predict(p) for p in settings]
    return {k: [run[k] for run in runs] for k in keys}


def _plateau(times: dict[str, list]) -> list[float]:
    return [q - p for p, q in zip(times["T_P@0.99"], times["T_Q@0.1"], strict=True)]


def _sigma_sweep() -> dict:
    measured = _measured([TwoStageParams(sigma=s) for s in SCALING_SIGMAS], STAGE_KEYS)
    ell = np.linspace(-2 * math.log(SCALING_SIGMAS[0]), -2 * math.log(SCALING_SIGMAS[-1]), N_LINE)
    predicted = _predicted([TwoStageParams(sigma=math.exp(-x / 2)) for x in ell], STAGE_KEYS)
    return {"sigma": list(SCALING_SIGMAS), "ell": [-2 * math.log(s) for s in SCALING_SIGMAS],
            "measured": measured, "line": {"ell": ell, **predicted}}


def _semantic_scale(p: TwoStageParams) -> float:
    return p.d_Q / (p.pi_Q**2 * p.mu**2)


def _d_Q_sweep() -> dict:
    sigma, keys = TRAJECTORY_PARAMS.sigma, ("T_P", "T_Q", "T_P@0.99", "T_Q@0.1")
    points = [TwoStageParams(sigma=sigma, d_Q=d_Q) for d_Q in D_Q_POINTS]
    every = range(D_Q_POINTS[0], D_Q_POINTS[-1] + 1)
    line = [TwoStageParams(sigma=sigma, d_Q=d_Q) for d_Q in every]
    measured, predicted = _measured(points, keys), _predicted(line, keys)
    return {"sigma": sigma, "d_Q": list(D_Q_POINTS), "x": [_semantic_scale(p) for p in points],
            "measured": {"T_P": measured["T_P"], "T_Q": measured["T_Q"],
                         "plateau": _plateau(measured)},
            "line": {"x": [_semantic_scale(p) for p in line], "T_P": predicted["T_P"],
                     "T_Q": predicted["T_Q"], "plateau": _plateau(predicted)}}


def scaling_document() -> dict:
    """Stage times against ``ln(1/σ²)`` and against ``d_Q/(π_Q² μ²)``: measured and predicted.

    Examples
    --------
    >>> doc = scaling_document()  # doctest: +SKIP
    >>> sorted(doc)  # doctest: +SKIP
    ['d_Q', 'sigma']
    """
    return json_safe({"sigma": _sigma_sweep(), "d_Q": _d_Q_sweep()}, digits=DIGITS)


#: File name -> the function computing its document.
DATA_FILES: dict[str, Callable[[], dict]] = {
    "trajectory-sigma0.0001.json": trajectory_document,
    "scaling.json": scaling_document,
}


def write_data(data: Path, names: Iterable[str] = tuple(DATA_FILES)) -> list[Path]:
    """Compute the data files ``names`` into the directory ``data``."""
    from reduced_odes.author import write_json

    return [write_json(Path(data) / name, DATA_FILES[name]()) for name in names]
