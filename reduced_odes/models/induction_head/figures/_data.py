"""Data files behind the figures: trajectories, verify records, predictions, SGD overlay."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from reduced_odes import SolverConfig
from reduced_odes.author import FIGURE_DIGITS, ParameterError, json_safe

from ..params import ModelParams, PhaseThresholds

#: The setting of the ``phases``, ``convergence`` and ``closures`` figures.
DEFAULT_PARAMS = ModelParams(L=200, alpha=0.5, wstar=0.3, sigma=1e-4)
FIGURES = ("phases", "plateau_scaling", "convergence", "closures", "closure_errors")
CLOSURES = ("linear", "meanfield")
OVERLAY_FILE = "compare-overlay.json"


def _num(value: float) -> str:
    return f"{value:g}"


def trajectory_path(data_dir: str | Path, closure: str, params: ModelParams) -> Path:
    """Where :func:`trajectory_data` keeps the trajectory of ``params`` under ``closure``."""
    return Path(data_dir) / (f"trajectory-{closure}-L{params.L}-alpha{_num(params.alpha)}-"
                             f"wstar{_num(params.wstar)}-sigma{_num(params.sigma)}.json")


def trajectory_data(closure: str, params: ModelParams = DEFAULT_PARAMS,
                    data_dir: str | Path = "figures/data", *, n_output: int = 1000,
                    n_tail: int = 600, with_predictions: bool = True,
                    force: bool = False) -> Path:
    """The trajectory data file of ``params`` under ``closure``; integrated if missing.

    Parameters
    ----------
    closure : {"linear", "meanfield"}
    params : ModelParams
    data_dir : path
    n_output : int
        Log-spaced output times of ``series`` (from t = 0 to the end of the run).
    n_tail : int
        Linearly spaced times of ``phase_IV`` (from ``T_III`` to the end of the run).
    with_predictions : bool
        Store the derived predictions (``phases`` and ``convergence`` need them; the
        ``closures`` figure does not).  An existing file without them is completed.
    force : bool
        Recompute even if the file exists.

    Returns
    -------
    Path
        The JSON file (see the module docstring for its contents).
    """
    from reduced_odes.author import read_json, trajectory_record, write_json

    from ..numerics import derive_predictions

    path = trajectory_path(data_dir, closure, params)
    if path.exists() and not force:
        if not with_predictions:
            return path
        record = read_json(path)
        if "predictions" not in record:
            record["predictions"] = derive_predictions(closure).evaluate(
                params.alpha, params.wstar, params.L, params.sigma)
            write_json(path, record)
        return path
    from reduced_odes import solve

    traj = solve(params, closure, SolverConfig(n_output=n_output))
    record = trajectory_record(traj)
    t_end = float(traj.t[-1])
    start = traj.phases["T_III"] if math.isfinite(traj.phases["T_III"]) else float(traj.t[0])
    times = np.linspace(start, t_end, n_tail)
    observed = traj.observables_at(times)
    loss_g4, loss_ih = observed["L_G4"], observed["L_IH"]
    record["phase_IV"] = {"t": times, "L_G4": loss_g4, "L_IH": loss_ih,
                          "log_w_kq": np.asarray(traj.at(times))[3]}
    if with_predictions:
        record["predictions"] = derive_predictions(closure).evaluate(
            params.alpha, params.wstar, params.L, params.sigma)
    record["description"] = (
        "reduced-odes trajectory for the figures: 'series' log-spaced from t=0, "
        "'phase_IV' linearly spaced from T_III to the end of the run, 'predictions' "
        "from reduced_odes.models.induction_head.predictions at this setting")
    write_json(path, record)
    return path


def _scaling_settings(closure: str, grid: str, alpha: float, wstar: float,
                      L: Sequence | None, sigma: Sequence | None) -> list[dict]:
    from ..claims import GRIDS, grid_settings

    if grid not in GRIDS:
        raise ParameterError(f"grid={grid!r}; allowed: {', '.join(GRIDS)}")
    spec = {"alpha": [alpha], "wstar": [wstar],
            "L": list(GRIDS[grid]["L"] if L is None else L),
            "sigma": [float(s) for s in (GRIDS[grid]["sigma"] if sigma is None else sigma)]}
    settings, _ = grid_settings(spec, [closure])
    return settings


def scaling_records(closure: str, data_dir: str | Path = "figures/data",
                    grid: str = "default", *, alpha: float = 0.5, wstar: float = 0.3,
                    L: Sequence[int] | None = None, sigma: Sequence[float] | None = None,
                    executor=None, progress: bool | None = None) -> list[dict]:
    """The verify records of the (L, sigma) scaling settings, run first if missing.

    Reads ``<data_dir>/verify-<grid>.jsonl`` (written by ``reduced-odes verify
    --grid <grid> --out <data_dir>``).  Settings at ``(alpha, wstar)`` over the
    grid's ``L`` and ``sigma`` (or the given lists) that have no result yet are
    measured with :func:`reduced_odes.models.induction_head.claims.measure_setting` and appended to
    that file, exactly as ``verify`` would.

    Returns
    -------
    list of dict
        ``{"key", "setting", "result", "metadata"}`` records, sorted by (L, sigma).
    """
    from reduced_odes.author import read_results, run_sweep, setting_key, versions

    from ..claims import measure_setting

    settings = _scaling_settings(closure, grid, alpha, wstar, L, sigma)
    path = Path(data_dir) / f"verify-{grid}.jsonl"
    done = {r["key"]: r for r in (read_results(path) if path.exists() else [])
            if "result" in r}
    missing = [s for s in settings if setting_key(s) not in done]
    if missing:
        path.parent.mkdir(parents=True, exist_ok=True)
        # The metadata verify() stamps into every line.
        metadata = {"versions": versions(),
                    "solver": {"method": "LSODA", "rtol": 1e-10, "atol": 1e-12}}
        run_sweep(missing, measure_setting, path, executor=executor, progress=progress,
                  metadata=metadata)
        done = {r["key"]: r for r in read_results(path) if "result" in r}
    records = [done[setting_key(s)] for s in settings if setting_key(s) in done]
    # Drawn at the precision a figure shows: the same bytes from any machine's run.
    return json_safe(sorted(records, key=lambda r: (r["setting"]["L"], -r["setting"]["sigma"])),
                     digits=FIGURE_DIGITS)


def predictions_path(data_dir: str | Path, closure: str, alpha: float, wstar: float) -> Path:
    return Path(data_dir) / f"predictions-{closure}-alpha{_num(alpha)}-wstar{_num(wstar)}.json"


#: Significant digits of the predicted lines: exact expressions, evaluated far below a pixel.
PREDICTION_DIGITS = 10


def _round(value: float) -> float | None:
    return json_safe(float(value), digits=PREDICTION_DIGITS)


def predictions_data(closure: str, data_dir: str | Path = "figures/data", *,
                     alpha: float = 0.5, wstar: float = 0.3,
                     L: Iterable[float] = (), sigma: Iterable[float] = (),
                     force: bool = False) -> Path:
    """Predicted ``lambda``, ``2/lambda`` and leading-order ``T_em`` on a fine (L, sigma) grid.

    The grid spans 40 <= L <= 2e5 and 1e-13 <= sigma <= 0.1 and always contains
    the given ``L`` and ``sigma`` (the measured settings).  The file is
    (re)computed when missing or when it lacks one of them.
    """
    from reduced_odes.author import read_json, versions

    path = predictions_path(data_dir, closure, alpha, wstar)
    need_l = {int(v) for v in L}
    need_s = {float(v) for v in sigma}
    if path.exists() and not force:
        stored = read_json(path)  # a corrupt file: exit 2 naming it, not a traceback
        if need_l <= set(stored["L"]) and need_s <= set(stored["sigma"]):
            return path
        need_l |= set(stored["L"])
        need_s |= set(stored["sigma"])
    from reduced_odes.author import write_json

    from ..numerics import derive_predictions

    lengths = sorted(need_l | {int(round(v)) for v in np.geomspace(40, 2e5, 61)})
    sigmas = sorted(need_s | {float(f"{v:.6g}") for v in np.geomspace(1e-13, 1e-1, 25)})
    pred = derive_predictions(closure)
    theta = PhaseThresholds().emergence
    lam, slope, leading = [], [], []
    for length in lengths:
        row = []
        for s in sigmas:
            values = pred.evaluate(alpha, wstar, length, s, theta_em=theta)
            row.append(_round(values["T_em_leading"]))
        lam.append(_round(values["lambda"]))
        slope.append(_round(values["T_em_slope"]))
        leading.append(row)
    write_json(path, {
        "closure": closure, "alpha": alpha, "wstar": wstar, "theta_em": theta,
        "L": lengths, "sigma": sigmas, "lambda": lam, "T_em_slope": slope,
        "T_em_leading": leading, "versions": versions(),
        "description": "reduced_odes.models.induction_head.predictions for the "
                       "plateau-scaling figure: lambda[L], T_em_slope[L] = 2/lambda, "
                       "T_em_leading[L][sigma] = ln(theta_em w*/sigma^2)/lambda"})
    return path


def load_overlay(path: str | Path) -> dict | None:
    """Read an exact-softmax SGD overlay file (schema in the module docstring).

    Returns ``None`` if the file does not exist, else ``{"setting": dict | None,
    "curves": [curve, ...]}`` with each curve's arrays as float ndarrays.
    Raises :class:`ParameterError` naming the file if it does not fit the schema.
    """
    path = Path(path)
    if not path.exists():
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ParameterError(f"{path}: not valid JSON: {exc}") from None
    if isinstance(doc, list):
        doc = {"curves": doc}
    elif isinstance(doc, dict) and "curves" not in doc:
        doc = {"curves": [doc]}
    if not isinstance(doc, dict) or not isinstance(doc.get("curves"), list) \
            or not doc["curves"]:
        raise ParameterError(f"{path}: expected a curve object, a list of curves or "
                             "{'curves': [...]}")

    def setting_of(d):
        return (d.get("setting") or d.get("params")) if isinstance(d, dict) else None

    setting = setting_of(doc) or next((setting_of(c) for c in doc["curves"] if setting_of(c)),
                                      None)
    curves = []
    for k, curve in enumerate(doc["curves"]):
        if not isinstance(curve, dict) or "t" not in curve:
            raise ParameterError(f"{path}: curve {k} needs a 't' array")
        t = np.asarray(curve["t"], dtype=float)
        out = {"t": t, "label": str(curve.get("label", "exact-softmax SGD")), "interval": {}}
        for name in ("w_kq", "L_IH"):
            if curve.get(name) is not None:
                out[name] = np.asarray(curve[name], dtype=float)
                if out[name].shape != t.shape:
                    raise ParameterError(f"{path}: curve {k}: '{name}' has {out[name].size} "
                                         f"values for {t.size} times")
            bands = curve.get("interval") or {}
            band = bands.get(name) if isinstance(bands, dict) else None
            if band is None and isinstance(bands, dict) and f"{name}_lo" in bands:
                band = {"lo": bands[f"{name}_lo"], "hi": bands.get(f"{name}_hi")}
            if band is not None:
                if not isinstance(band, dict) or band.get("lo") is None \
                        or band.get("hi") is None:
                    raise ParameterError(f"{path}: curve {k}: interval '{name}' needs "
                                         "'lo' and 'hi'")
                lo, hi = (np.asarray(band[b], dtype=float) for b in ("lo", "hi"))
                if lo.shape != t.shape or hi.shape != t.shape:
                    raise ParameterError(f"{path}: curve {k}: interval '{name}' must have "
                                         f"'lo' and 'hi' of {t.size} values")
                out["interval"][name] = (lo, hi)
        if "w_kq" not in out and "L_IH" not in out:
            raise ParameterError(f"{path}: curve {k} has neither 'w_kq' nor 'L_IH'")
        curves.append(out)
    if setting is not None:
        try:
            setting = ModelParams(**{k: setting[k] for k in ("L", "alpha", "wstar", "sigma")}
                                  ).as_dict()
        except (KeyError, TypeError) as exc:
            raise ParameterError(f"{path}: 'setting' needs L, alpha, wstar, sigma ({exc})") \
                from None
    return {"setting": setting, "curves": curves}
