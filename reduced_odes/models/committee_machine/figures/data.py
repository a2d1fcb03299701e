"""The data files behind the figures, computed from the package and rounded for stable bytes.

Every number keeps :data:`~reduced_odes._reproduce.FIGURE_DIGITS` significant
digits: far below what a figure resolves and far above the solver's rtol, so
the files are the same bytes on every machine whose arithmetic agrees to ~1e-6.
Values within :data:`FLOOR` of zero (converged overlaps, ``eps_g`` at the end of
a run) are integrator noise whose digits differ between machines; they are
written as 0.  Every run uses the pure-Python backend (the reference path).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from reduced_odes.author import FIGURE_DIGITS, json_safe, write_json

from ..params import CommitteeParams, recorded

__all__ = ["ASYMMETRIES", "DATA_FILES", "ETAS", "FLOOR", "NOISY", "NOISY_K", "PLATEAU",
           "escape_document", "eta_document", "noise_document", "plateau_document",
           "write_data"]

#: The classic setting: K = M = 2, erf, eta -> 0, the model's start with the asymmetry of the
#: verified plateau heights (1e-6: a long plateau, close to eps*).
PLATEAU = CommitteeParams(K=2, M=2, asymmetry=1e-6)
#: Asymmetries of the escape-time figure (K = M = 2, erf, eta -> 0), largest first.
ASYMMETRIES = (1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8)
#: Learning rates of the eta figure (K = M = 2, erf); every one is below the largest.
ETAS = (0.0, 0.1, 0.5, 1.0, 2.0)
#: A run at this multiple of the largest learning rate shows learning fail, to this time
#: (it escapes its plateau at t ~ 800 and settles at eps_g > 0).
ABOVE, ABOVE_T_END = 1.1, 4000.0
#: Points of the plateau height eps_p(eta) on [0, eta_max].
N_ETA_CURVE = 41
#: The noisy setting (Goldt et al. 2019): M = 1 teacher, eta = 0.1, output noise 0.5 ...
NOISY = CommitteeParams(K=1, M=1, eta=0.1, noise=0.5)
#: ... learnt by K students.  K = 4 is left out: its learning-rate term alone takes about
#: two minutes to derive, against a budget of ~20 s per figure.
NOISY_K = (1, 2, 3)
#: The noisy runs' common end: a K = 3 student never settles (see :func:`noise_document`).
NOISY_T_END = 1e6
#: Output times: log-spaced from ``T_START``, ``N_TIMES`` of them.
N_TIMES, T_START = 400, 1e-2
#: |value| below this is within 1e3 x the solver's atol (1e-12) of zero: written as 0.
FLOOR = 1e-9
#: A fixed point counts as found when Newton's residual is below this.
RESIDUAL = 1e-12


def _floored(values) -> np.ndarray:
    """Values of a run with those within :data:`FLOOR` of zero set to 0."""
    values = np.asarray(values, dtype=float)
    return np.where(np.abs(values) < FLOOR, 0.0, values)


def _stable(document: dict) -> dict:
    """``document`` as plain JSON values, rounded to the figures' digits."""
    return json_safe(document, digits=FIGURE_DIGITS)


def _config(t_end: float | None = None):
    from reduced_odes import SolverConfig

    return SolverConfig(t_end=t_end, backend="python")


def _solve(params: CommitteeParams, t_end: float | None = None):
    from reduced_odes import solve

    from ..model import MODEL

    return solve(params, "erf", _config(t_end), model=MODEL)


def _series(traj, names: Sequence[str] = ("eps_g",), states: bool = False) -> dict:
    """``t`` log-spaced over the run and the named observables (and every state variable)."""
    t = np.geomspace(T_START, float(traj.t[-1]), N_TIMES)
    observed = traj.observables_at(t)
    series = {"t": t, **{name: _floored(observed[name]) for name in names}}
    if states:
        coordinates = traj.at(t)
        for name in traj.system.state_names:
            series[name] = _floored(coordinates[traj.system.coordinate_names.index(name)])
    return series


def _phases(traj) -> dict[str, float]:
    return {name: float(value) for name, value in traj.phases.items()}


def plateau_document(params: CommitteeParams = PLATEAU) -> dict:
    """The classic run: ``eps_g(t)``, every ``Q_ik`` and ``R_in``, the phases, and the
    plateau (the unspecialised fixed point, with the closed form it is held against).

    Examples
    --------
    >>> doc = plateau_document()  # doctest: +SKIP
    >>> sorted(doc["plateau"])  # doctest: +SKIP
    ['eps_p', 'eps_star', 'lambda', 'state']
    """
    from ..numerics import closed_form_plateau, unspecialised_fixed_point

    traj = _solve(params)
    point = unspecialised_fixed_point(params, "erf")
    names = traj.system.state_names
    return _stable({"params": recorded(params), "activation": "erf",
                    "series": _series(traj, ("eps_g", "specialisation"), states=True),
                    "phases": _phases(traj),
                    "plateau": {"eps_p": point.eps_g, "eps_star": closed_form_plateau(params.K),
                                "lambda": float(point.unstable[0]),
                                "state": dict(zip(names, point.state, strict=True))}})


def escape_document(base: CommitteeParams = PLATEAU,
                    asymmetries: Sequence[float] = ASYMMETRIES) -> dict:
    """``T_escape`` over the asymmetry, the unstable eigenvalue ``lambda`` at the plateau and
    the local slopes ``dT/d ln(1/a)`` between neighbouring asymmetries (no fit).

    Examples
    --------
    >>> doc = escape_document(asymmetries=(1e-2, 1e-3))  # doctest: +SKIP
    >>> len(doc["local"]["slope"])  # doctest: +SKIP
    1
    """
    from ..numerics import unspecialised_fixed_point

    lam = float(unspecialised_fixed_point(base, "erf").unstable[0])
    times = [_solve(replace(base, asymmetry=a)).phases["T_escape"] for a in asymmetries]
    x = [math.log(1 / a) for a in asymmetries]
    points = list(zip(x, times, strict=True))
    pairs = list(zip(points, points[1:], strict=False))  # neighbours
    slopes = [(t2 - t1) / (x2 - x1) for (x1, t1), (x2, t2) in pairs]
    middles = [(x1 + x2) / 2 for (x1, _), (x2, _) in pairs]
    return _stable({"params": recorded(base), "activation": "erf",
                    "asymmetry": list(asymmetries), "x": x, "T_escape": times,
                    "lambda": lam, "slope": 1 / lam,
                    "local": {"x": middles, "slope": slopes}})


def eta_document(base: CommitteeParams = PLATEAU, etas: Sequence[float] = ETAS) -> dict:
    """``eps_g(t)`` at each learning rate with its plateau ``eps_p(eta)`` (the unspecialised
    fixed point at that eta), the largest learning rate, a run above it, and the curve
    ``eps_p(eta)`` up to it.

    Examples
    --------
    >>> doc = eta_document(etas=(0.0, 0.5))  # doctest: +SKIP
    >>> [run["eta"] for run in doc["runs"]]  # doctest: +SKIP
    [0.0, 0.5]
    """
    from ..numerics import largest_learning_rate, unspecialised_fixed_point

    def plateau(eta: float) -> float:
        return unspecialised_fixed_point(replace(base, eta=eta), "erf").eps_g

    runs = []
    for eta in etas:
        traj = _solve(replace(base, eta=eta))
        runs.append({"eta": eta, "eps_p": plateau(eta), "phases": _phases(traj),
                     "series": _series(traj)})
    eta_max = largest_learning_rate(base.K, "erf")
    above = _solve(replace(base, eta=ABOVE * eta_max), t_end=ABOVE_T_END)
    grid = np.linspace(0.0, eta_max, N_ETA_CURVE)
    return _stable({"params": recorded(base), "activation": "erf", "runs": runs,
                    "eta_max": eta_max,
                    "above": {"eta": ABOVE * eta_max, "factor": ABOVE, "series": _series(above),
                              "eps_end": float(_floored(above.final["eps_g"]))},
                    "curve": {"eta": grid, "eps_p": [plateau(float(eta)) for eta in grid]}})


def _noisy_run(K: int) -> dict:
    """One noisy run to :data:`NOISY_T_END` and the fixed point Newton finds from its end,
    kept only if it is one (residual below :data:`RESIDUAL`) and stable."""
    from ..numerics import specialised_point

    params = replace(NOISY, K=K)
    traj = _solve(params, t_end=NOISY_T_END)
    names = traj.system.state_names
    final = np.array([traj.final[name] for name in names])
    try:
        point = specialised_point(params, "erf", start=final)
    except ValueError:  # Newton left the realisable overlaps (an asin of more than 1)
        point = None
    found = point is not None and point.residual < RESIDUAL and bool(
        np.all(point.eigenvalues.real < 0))
    return {"K": K, "series": _series(traj),
            "final": {name: float(_floored(traj.final[name]))
                      for name in (*names, "eps_g", "speed")},
            "fixed_point": {"eps_g": point.eps_g} if found else None}


def noise_document(Ks: Iterable[int] = NOISY_K) -> dict:
    """``eps_g(t)`` of ``K`` students learning one noisy teacher, and the asymptotic
    ``eps_g`` of the fixed point each run settles at (None where it settles at none: from
    K = 3 two students pair up as ``w_2 ~ -w_3``, cancel, and their norms keep growing).

    Examples
    --------
    >>> doc = noise_document(Ks=(1,))  # doctest: +SKIP
    >>> doc["runs"][0]["fixed_point"]["eps_g"] > 0  # doctest: +SKIP
    True
    """
    fields = {k: v for k, v in recorded(NOISY).items() if k != "K"}
    return _stable({"params": fields, "activation": "erf", "t_end": NOISY_T_END,
                    "runs": [_noisy_run(K) for K in Ks]})


#: Data file -> the function that computes its document.
DATA_FILES = {"plateau.json": plateau_document, "escape.json": escape_document,
              "eta.json": eta_document, "noise.json": noise_document}


def write_data(data: Path, names: Iterable[str] | None = None) -> list[Path]:
    """Compute the data files ``names`` (default: all) into the directory ``data``.

    No versions are written: the bytes depend on the numbers alone.
    """
    return [write_json(Path(data) / name, DATA_FILES[name]()) for name in (names or DATA_FILES)]
