"""The data files behind the figures, computed from the package and rounded for stable bytes.

Every number keeps :data:`DIGITS` significant digits: far below what a figure
resolves and far above the solver's rtol, so the files are the same bytes on
every machine whose arithmetic agrees to ~1e-6.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from reduced_odes.author import json_safe

from ..params import TwoMixtureParams

__all__ = ["DATA_FILES", "DIGITS", "algorithm1_document", "scaling_document",
           "separation_document", "stages_document", "write_data"]

#: Significant digits kept in the data files.
DIGITS = 5
#: Output times of the trajectory files: log-spaced from ``T_START`` to ``T_STOP`` x T3.
N_TIMES, T_START, T_STOP = 400, 0.1, 30.0
#: The sigma_att and sigma sweeps of ``scaling`` (the other one at its default).
SIGMA_ATTS = (1e-2, 3e-3, 1e-3, 3e-4, 1e-4, 3e-5, 1e-5)
SIGMAS = (1e-1, 3e-2, 1e-2, 3e-3, 1e-3, 3e-4, 1e-4)
#: Points of the predicted lines.
N_LINE = 40
#: The setting of every figure but the sweeps' varied scale: the defaults.
DEFAULT = TwoMixtureParams()
#: Snapshots of the attention features: t = 0 and the three phase times.
SNAPSHOTS = ("T0", "T1", "T2", "T3")


def _scales(params: TwoMixtureParams) -> tuple[float, float, float, float]:
    """``(mu, kappa, A0, ell0)``: the closed forms' arguments (balanced averaged init)."""
    mu, kappa = params.mu, params.kappa
    return mu, kappa, mu * params.sigma**2 / (2 * math.sqrt(2)), kappa * params.sigma_att**2


def _run(params: TwoMixtureParams, variant: str = "square", t_end: float | None = None,
         names=("loss", "loss_consistent", "loss_hard", "A", "theta")) -> dict:
    """One integrated run: the named observables on log-spaced times, and its phases."""
    from reduced_odes import SolverConfig, solve

    traj = solve(params, variant, SolverConfig(t_end=t_end))
    stop = t_end or T_STOP * traj.phases["T3"]
    t = np.geomspace(T_START, stop, N_TIMES)
    observed = traj.observables_at(t)
    return {"series": {"t": t, **{k: observed[k] for k in names}},
            "phases": {k: float(v) for k, v in traj.phases.items()}}


def stages_document(params: TwoMixtureParams = DEFAULT) -> dict:
    """The default joint run: loss on all, consistent and hard samples, ``A``, ``theta``.

    Examples
    --------
    >>> doc = stages_document()  # doctest: +SKIP
    >>> sorted(doc["series"])  # doctest: +SKIP
    ['A', 'loss', 'loss_consistent', 'loss_hard', 't', 'theta']
    """
    return json_safe({"params": params.as_dict(), **_run(params)}, digits=DIGITS)


def _features(mu: float, theta: float) -> list[dict]:
    """The head-averaged value ``z`` of the eight configurations at margin ``theta``: both
    heads put ``p = (1 + theta)/2`` on the corresponding word, so for identifier ``k``
    ``z = mu (p s_k e_k + (1 - p) s_j e_j)``."""
    p = (1 + theta) / 2
    points = []
    for k in (1, 2):
        for s1 in (1, -1):
            for s2 in (1, -1):
                w1, w2 = (p, 1 - p) if k == 1 else (1 - p, p)
                points.append({"k": k, "y": s1 if k == 1 else s2, "hard": s1 != s2,
                               "z": [mu * w1 * s1, mu * w2 * s2]})
    return points


def separation_document(params: TwoMixtureParams = DEFAULT) -> dict:
    """``theta(t)`` integrated and predicted (slow manifold, ``T(ell)`` inverted, after T1),
    and the features of the eight configurations at t = 0, T1, T2, T3.

    Examples
    --------
    >>> doc = separation_document()  # doctest: +SKIP
    >>> start = doc["snapshots"]["T0"]  # doctest: +SKIP
    >>> len(start["points"]), start["theta"] < 1e-6  # doctest: +SKIP
    (8, True)
    """
    from ..numerics import predictor

    run = _run(params, names=("theta",))
    pred, scales = predictor("square"), _scales(params)
    t = np.asarray(run["series"]["t"])
    after = t[t >= run["phases"]["T1"]]
    predicted = [math.tanh(pred.ell_of_t(*scales, x) / 2) for x in after]
    theta0 = math.tanh(params.kappa * params.sigma_att**2 / 2)
    times = {"T0": 0.0, **{k: run["phases"][k] for k in SNAPSHOTS[1:]}}
    thetas = {"T0": theta0, **{k: float(np.interp(v, t, run["series"]["theta"]))
                               for k, v in times.items() if k != "T0"}}
    snapshots = {k: {"t": times[k], "theta": thetas[k], "points": _features(params.mu, thetas[k])}
                 for k in SNAPSHOTS}
    return json_safe({"params": params.as_dict(), **run, "snapshots": snapshots,
                    "predicted": {"t": after, "theta": predicted}}, digits=DIGITS)


def _sweep(field: str, values, base: TwoMixtureParams) -> dict:
    """Integrated and predicted ``T2`` over one initial scale, with the predicted slope."""
    from dataclasses import replace

    from reduced_odes import solve

    from ..numerics import predictor

    pred = predictor("square")
    measured = [solve(replace(base, **{field: v})).phases["T2"] for v in values]
    line = np.geomspace(min(values), max(values), N_LINE)
    predicted = [pred.T_of_ell(*_scales(replace(base, **{field: v})), math.log(3)) for v in line]
    slope = pred.slopes(base.mu, base.kappa)[0 if field == "sigma_att" else 1]
    return {"x": [math.log(1 / v) for v in values], "T2": measured,
            "line_x": [math.log(1 / v) for v in line], "line_T2": predicted, "slope": slope}


def scaling_document(base: TwoMixtureParams = DEFAULT) -> dict:
    """``T2`` against ``ln(1/sigma_att)`` and ``ln(1/sigma)``: integrated runs and the
    closed form ``T(ln 3)`` with its slopes ``8/kappa`` and ``4 sqrt2/mu`` (no fit).

    Examples
    --------
    >>> doc = scaling_document()  # doctest: +SKIP
    >>> round(doc["sigma_att"]["slope"], 6)  # doctest: +SKIP
    16.0
    """
    return json_safe({"params": base.as_dict(), "sigma_att": _sweep("sigma_att", SIGMA_ATTS, base),
                    "sigma": _sweep("sigma", SIGMAS, base)}, digits=DIGITS)


def algorithm1_document(params: TwoMixtureParams = DEFAULT) -> dict:
    """The joint flow against Algorithm 1 (both square loss), with the stage-III floor.

    Examples
    --------
    >>> doc = algorithm1_document()  # doctest: +SKIP
    >>> sorted(doc)  # doctest: +SKIP
    ['algorithm1', 'floor', 'joint', 'params']
    """
    from dataclasses import replace

    from ..numerics import predictor

    joint = _run(params, names=("loss", "A", "theta"))
    end = float(joint["series"]["t"][-1])
    staged = _run(replace(params, protocol="algorithm1"), t_end=end, names=("loss", "A", "theta"))
    floor = predictor("square").L_star(2 * math.atanh(params.theta_II))
    return json_safe({"params": params.as_dict(), "joint": joint, "algorithm1": staged,
                    "floor": floor}, digits=DIGITS)


#: Data file -> the function that computes its document.
DATA_FILES = {"stages.json": stages_document, "separation.json": separation_document,
              "scaling.json": scaling_document, "algorithm1.json": algorithm1_document}


def write_data(data: Path, names: Iterable[str] | None = None) -> list[Path]:
    """Compute the data files ``names`` (default: all) into the directory ``data``.

    No versions are written: the bytes depend on the numbers alone.
    """
    from reduced_odes.author import write_json

    return [write_json(Path(data) / name, DATA_FILES[name]()) for name in (names or DATA_FILES)]
