"""Publication figures, drawn only from result files (JSON / JSON Lines).

``reduced-odes figures`` writes each figure as PNG and PDF.  Every figure is
drawn from data files in ``figures/data/`` (committed beside the figures), so a
figure can be regenerated without re-integrating anything; a data file that is
missing is first created by calling the package, then the figure is drawn.

Data files (``<data>`` = ``figures/data`` by default)
-----------------------------------------------------
``trajectory-<closure>-L<L>-alpha<a>-wstar<w>-sigma<s>.json``
    :func:`reduced_odes._results.trajectory_record` of one run (log-spaced
    ``series`` from t = 0, phases, solver, versions) plus ``phase_IV``, the
    dense output sampled on a *linear* time grid from ``T_III`` to the end of
    the run (for the exponential decay of ``L_IH``), and ``predictions``, the
    derived predictions of :mod:`reduced_odes._predictions` at that setting.
``verify-<grid>.jsonl``
    The raw per-setting results of ``reduced-odes verify --grid <grid>``.  If
    the settings a figure needs are missing, only those are run (through the
    same resumable sweep engine, so a later ``verify`` reuses them).
``predictions-<closure>-alpha<a>-wstar<w>.json``
    ``lambda``, ``T_em_slope = 2/lambda`` and ``T_em_leading`` on a fine grid of
    ``L`` and ``sigma`` (the lines of the scaling figure).
``compare-overlay.json`` (optional, never created here)
    Exact-softmax SGD curves for the closures figure, as written by ``reduced-odes
    compare`` (:func:`reduced_odes._compare.sgd_overlay`).  Schema, a single curve
    object or ``{"setting": {...}, "curves": [curve, ...]}``::

        {"t": [...], "w_kq": [...], "L_IH": [...],      # w_kq or L_IH may be absent
         "label": "exact softmax SGD (4 seeds)",        # optional
         "interval": {"w_kq": {"lo": [...], "hi": [...]},  # optional band
                      "L_IH": {"lo": [...], "hi": [...]}},
         "setting": {"L": 50, "alpha": 0.5, "wstar": 0.3, "sigma": 0.01}}  # optional

    ``params`` is accepted for ``setting``, and a flat ``interval``
    ``{"w_kq_lo": [...], "w_kq_hi": [...]}`` for the nested one.  When a setting is
    given, the closures figure is drawn at that setting (the ODE trajectories are
    computed there); otherwise at the default setting.

Figures (``<out>`` = ``figures``; the ``linear`` closure, the paper's, gets the plain
name, the other closure a ``-meanfield`` suffix)
----------------------------------------------------------------------------------
``phases``            the four phases: L_G4, L_IH and the parameters against t.
``plateau_scaling``   T_em against ln(1/sigma) for several L (markers: verify records;
                      lines: the leading-order prediction, slope 2/lambda, no fit), T_em/L
                      against L, and the excess (T_em - T_em_leading)/L (the O(L) term).
``convergence``       t L_G4 -> 1/4 and ln L_IH in phase IV against the predicted slope
                      -2 mu (anchored where L_IH = 1e-8 x its plateau level).
``closures``          linear vs meanfield (and exact-softmax SGD when its data exist).

Phase boundaries (shaded in ``phases``) are the measured phase times of
:class:`reduced_odes.PhaseThresholds`: I = [0, T_I] (L_G4 down to 1% of L_G4(0)),
II = [T_I, T_II] (until w_kq = 0.1 w*), III = [T_II, T_III] (w_kq from 0.1 w* to
0.9 w*, with T_em at 0.5 w* marked), IV = [T_III, end of run].  If the measured
times are out of order (the induction head emerging before the 4-gram is learned,
as at alpha = 0.2, w* = 0.45, L = 50), each boundary is clipped to the one before
it and the figure says so.

Colours are Okabe-Ito: the 4-gram mechanism (L_G4, w_v1, p) is always blue, the
induction head (L_IH, w_v2, w_kq) always vermillion.  Output files carry no
timestamps, so regenerating them from the same data gives identical bytes.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import sys
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np

from ._params import ModelParams, ParameterError, PhaseThresholds, SolverConfig
from ._version import __version__

__all__ = [
    "DEFAULT_PARAMS",
    "FIGURES",
    "FORMATS",
    "MECHANISM_COLOURS",
    "OKABE_ITO",
    "add_arguments",
    "figure_path",
    "load_overlay",
    "make_figures",
    "plot_closures",
    "plot_convergence",
    "plot_phases",
    "plot_plateau_scaling",
    "predictions_data",
    "predictions_path",
    "render",
    "run",
    "save_figure",
    "scaling_records",
    "trajectory_data",
    "trajectory_path",
]

#: The setting of the ``phases``, ``convergence`` and ``closures`` figures.
DEFAULT_PARAMS = ModelParams(L=200, alpha=0.5, wstar=0.3, sigma=1e-4)
FIGURES = ("phases", "plateau_scaling", "convergence", "closures")
FORMATS = ("png", "pdf")
CLOSURES = ("linear", "meanfield")
OVERLAY_FILE = "compare-overlay.json"

#: Okabe & Ito (2008), the colour-blind safe palette.
OKABE_ITO = {
    "black": "#000000", "orange": "#E69F00", "sky_blue": "#56B4E9",
    "bluish_green": "#009E73", "yellow": "#F0E442", "blue": "#0072B2",
    "vermillion": "#D55E00", "reddish_purple": "#CC79A7",
}
#: One colour per mechanism, in every figure.
MECHANISM_COLOURS = {"4-gram": OKABE_ITO["blue"], "induction head": OKABE_ITO["vermillion"]}
_G4, _IH = MECHANISM_COLOURS["4-gram"], MECHANISM_COLOURS["induction head"]
#: Series that are not a mechanism (several L): the remaining Okabe-Ito colours, with markers.
_SERIES = [(OKABE_ITO[c], m) for c, m in (("orange", "o"), ("bluish_green", "s"),
                                          ("reddish_purple", "^"), ("sky_blue", "D"),
                                          ("black", "v"), ("yellow", "P"))]
#: Phase shading I..IV: light neutral greys, so the mechanism colours stay the only colours.
_PHASE_SHADES = ("#F2F2F2", "#DCDCDC", "#BDBDBD", "#E6E6E6")
PHASE_NAMES = ("partial learning", "plateau", "emergence", "convergence")

#: Single-column width (inches) and the type sizes that stay readable there.
COLUMN_WIDTH = 3.4
_DPI = 300
_STYLE = {
    "font.family": "DejaVu Sans", "font.size": 7.0, "axes.titlesize": 7.0,
    "axes.labelsize": 7.0, "xtick.labelsize": 6.5, "ytick.labelsize": 6.5,
    "legend.fontsize": 6.0, "figure.titlesize": 7.5, "lines.linewidth": 1.1,
    "lines.markersize": 3.5, "axes.linewidth": 0.6, "xtick.major.width": 0.6,
    "ytick.major.width": 0.6, "xtick.minor.width": 0.4, "ytick.minor.width": 0.4,
    "xtick.major.size": 2.5, "ytick.major.size": 2.5, "xtick.minor.size": 1.5,
    "ytick.minor.size": 1.5, "legend.frameon": True, "legend.framealpha": 0.9,
    "legend.edgecolor": "0.8", "legend.handlelength": 2.0, "legend.borderaxespad": 0.4,
    "axes.titlepad": 3.0, "mathtext.fontset": "dejavusans", "pdf.fonttype": 42,
    "pdf.compression": 9, "savefig.dpi": _DPI, "figure.dpi": 100,
    "axes.unicode_minus": True, "path.simplify": True,
}
_TIME = "t (gradient-flow time)"
_LG4, _LIH = r"$L_{\mathrm{G4}}$", r"$L_{\mathrm{IH}}$"
#: Phase-IV display: L_IH below this fraction of its plateau is cancellation noise.
_NOISE_FLOOR = 1e-13
#: The predicted phase-IV slope is anchored where L_IH/plateau equals this (the
#: log-midpoint of verify's fit window [1e-10, 1e-6]).
_ANCHOR_RATIO = 1e-8


# --------------------------------------------------------------------------- #
# Data files
# --------------------------------------------------------------------------- #
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
    from ._predictions import derive_predictions
    from ._results import read_json, trajectory_record, write_json

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
    from ._integrate import solve

    traj = solve(params, closure, SolverConfig(n_output=n_output))
    record = trajectory_record(traj)
    t_end = float(traj.t[-1])
    start = traj.phases["T_III"] if math.isfinite(traj.phases["T_III"]) else float(traj.t[0])
    times = np.linspace(start, t_end, n_tail)
    loss_g4, loss_ih = traj.losses_at(times)
    record["phase_IV"] = {"t": times, "L_G4": loss_g4, "L_IH": loss_ih,
                          "log_w_kq": np.asarray(traj.at(times))[3]}
    if with_predictions:
        record["predictions"] = derive_predictions(closure).evaluate(
            params.alpha, params.wstar, params.L, params.sigma)
    record["description"] = (
        "reduced-odes trajectory for the figures: 'series' log-spaced from t=0, "
        "'phase_IV' linearly spaced from T_III to the end of the run, 'predictions' "
        "from reduced_odes._predictions at this setting")
    write_json(path, record)
    return path


def _scaling_settings(closure: str, grid: str, alpha: float, wstar: float,
                      L: Sequence | None, sigma: Sequence | None) -> list[dict]:
    from ._verify import GRIDS, grid_settings

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
    measured with :func:`reduced_odes._verify.measure_setting` and appended to
    that file, exactly as ``verify`` would.

    Returns
    -------
    list of dict
        ``{"key", "setting", "result", "metadata"}`` records, sorted by (L, sigma).
    """
    from ._provenance import versions
    from ._sweep import read_results, run_sweep, setting_key
    from ._verify import measure_setting

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
    return sorted(records, key=lambda r: (r["setting"]["L"], -r["setting"]["sigma"]))


def predictions_path(data_dir: str | Path, closure: str, alpha: float, wstar: float) -> Path:
    return Path(data_dir) / f"predictions-{closure}-alpha{_num(alpha)}-wstar{_num(wstar)}.json"


def _round(value: float) -> float | None:
    return float(f"{value:.10g}") if math.isfinite(value) else None


def predictions_data(closure: str, data_dir: str | Path = "figures/data", *,
                     alpha: float = 0.5, wstar: float = 0.3,
                     L: Iterable[float] = (), sigma: Iterable[float] = (),
                     force: bool = False) -> Path:
    """Predicted ``lambda``, ``2/lambda`` and leading-order ``T_em`` on a fine (L, sigma) grid.

    The grid spans 40 <= L <= 2e5 and 1e-13 <= sigma <= 0.1 and always contains
    the given ``L`` and ``sigma`` (the measured settings).  The file is
    (re)computed when missing or when it lacks one of them.
    """
    from ._provenance import versions

    path = predictions_path(data_dir, closure, alpha, wstar)
    need_l = {int(v) for v in L}
    need_s = {float(v) for v in sigma}
    if path.exists() and not force:
        stored = json.loads(path.read_text(encoding="utf-8"))
        if need_l <= set(stored["L"]) and need_s <= set(stored["sigma"]):
            return path
        need_l |= set(stored["L"])
        need_s |= set(stored["sigma"])
    from ._predictions import derive_predictions
    from ._results import write_json

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
        "description": "reduced_odes._predictions for the plateau-scaling figure: "
                       "lambda[L], T_em_slope[L] = 2/lambda, T_em_leading[L][sigma] = "
                       "ln(theta_em w*/sigma^2)/lambda"})
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


# --------------------------------------------------------------------------- #
# Drawing helpers
# --------------------------------------------------------------------------- #
def _new_figure(height: float, nrows: int, *, sharex: bool = False, heights=None):
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    with matplotlib.rc_context(_STYLE):
        fig = Figure(figsize=(COLUMN_WIDTH, height), layout="constrained")
        FigureCanvasAgg(fig)
        axes = fig.subplots(nrows, 1, sharex=sharex,
                            gridspec_kw={"height_ratios": heights} if heights else None)
    fig.get_layout_engine().set(h_pad=0.04, w_pad=0.04, hspace=0.04)
    return fig, np.atleast_1d(axes)


def _params_text(p: Mapping) -> str:
    return (fr"$L={p['L']:g}$, $\alpha={p['alpha']:g}$, $w^*={p['wstar']:g}$, "
            fr"$\sigma={_sci(p['sigma'])}$")


def _sci(value: float) -> str:
    """``1e-4`` as mathtext ``10^{-4}`` (mantissa kept when it is not 1)."""
    mantissa, exponent = f"{value:.6e}".split("e")
    mantissa = mantissa.rstrip("0").rstrip(".")
    power = f"10^{{{int(exponent)}}}"
    return power if mantissa == "1" else fr"{mantissa}\times{power}"


def _series(record: Mapping) -> dict[str, np.ndarray]:
    s = record["series"]
    out = {k: np.array([np.nan if v is None else v for v in s[k]], dtype=float) for k in s}
    out["w_kq"] = np.exp(out["log_w_kq"])  # finite even where w_kq underflows
    return out


def _phases(record: Mapping) -> dict[str, float]:
    return {k: (math.nan if v is None else float(v)) for k, v in record["phases"].items()}


def _meta(fig, name: str, closure: str | None, params: Mapping | None, extra: str = "",
          versions: Mapping | None = None, solver: Mapping | None = None,
          data: Sequence[str] = ()) -> None:
    """Attach the metadata strings (subject, keywords) that :func:`save_figure` stamps in."""
    subject = f"reduced-odes {__version__} figure '{name}'"
    if closure:
        subject += f", closure {closure}"
    if params:
        subject += (f", L={params['L']:g}, alpha={params['alpha']:g}, "
                    f"wstar={params['wstar']:g}, sigma={params['sigma']:g}")
    if extra:
        subject += f", {extra}"
    keywords = [f"reduced-odes {__version__}", f"figure={name}"]
    if closure:
        keywords.append(f"closure={closure}")
    if params:
        keywords += [f"{k}={params[k]:g}" for k in ("L", "alpha", "wstar", "sigma")]
    if solver:
        keywords += [f"solver={solver.get('method')}", f"rtol={solver.get('rtol'):g}",
                     f"atol={solver.get('atol'):g}"]
    if versions:
        keywords += [f"{k} {v}" for k, v in sorted(versions.items()) if k != "reduced-odes"]
    keywords += [f"data={d}" for d in data]
    fig._reduced_odes_meta = {"title": name, "subject": subject, "keywords": keywords}


def _log_time_axis(ax, lo: float, hi: float) -> None:
    from matplotlib.ticker import LogLocator, NullFormatter

    ax.set_xscale("log")
    ax.set_xlim(lo, hi)
    ax.xaxis.set_major_locator(LogLocator(base=10, numticks=12))
    ax.xaxis.set_minor_locator(LogLocator(base=10, subs=np.arange(2, 10) * 0.1, numticks=12))
    ax.xaxis.set_minor_formatter(NullFormatter())


def _shade_phases(ax, phases: Mapping[str, float], t_lo: float, t_hi: float,
                  labels: bool) -> bool:
    """Shade phases I-IV on a log-time axis; label them (name inside the band if it fits).

    The bands are consecutive: a boundary earlier than the one before it (the
    induction head emerging before the 4-gram is learned, ``T_II < T_I``) is moved
    up to it, so a band can be empty.  Returns whether the measured times were in order.
    """
    raw = [phases["T_I"], phases["T_II"], phases["T_III"]]
    in_order = all(math.isfinite(v) for v in raw) and raw == sorted(raw)
    edges = [t_lo]
    for value in raw:
        edges.append(max(edges[-1], value) if math.isfinite(value) else value)
    edges.append(t_hi)
    span = math.log(t_hi / t_lo)
    for k in range(4):
        a, b = edges[k], edges[k + 1]
        if not (math.isfinite(a) and math.isfinite(b)) or b <= a:
            continue
        ax.axvspan(a, b, color=_PHASE_SHADES[k], lw=0, zorder=0)
        if not labels:
            continue
        width = math.log(b / a) / span
        mid = math.sqrt(a * b)
        roman = ("I", "II", "III", "IV")[k]
        if width > 0.16:
            text, rot = f"{roman}\n{PHASE_NAMES[k]}", 0
        else:
            text, rot = f"{roman} {PHASE_NAMES[k]}", 90
        ax.text(mid, 0.975, text, transform=ax.get_xaxis_transform(), ha="center",
                va="top", rotation=rot, fontsize=6.0, color="0.15", linespacing=1.0,
                zorder=1)
    return in_order


# --------------------------------------------------------------------------- #
# Figure 1: the four phases
# --------------------------------------------------------------------------- #
def plot_phases(record: Mapping, *, t_min: float = 1.0):
    """The paper's Figure 2: partial losses and parameters against time, phases shaded.

    Parameters
    ----------
    record : dict
        A trajectory data file (see :func:`trajectory_data`).
    t_min : float
        Left end of the log time axis.

    Returns
    -------
    matplotlib.figure.Figure
        Axes ``[losses, parameters, p]`` (the last is the right-hand axis of the second).
    """
    import matplotlib
    from matplotlib.lines import Line2D

    s, ph, p = _series(record), _phases(record), record["params"]
    t_end = float(s["t"][-1])
    keep = s["t"] >= t_min * 0.999
    t = s["t"][keep]
    with matplotlib.rc_context(_STYLE):
        fig, (ax, bx) = _new_figure(4.3, 2, sharex=True, heights=[1.15, 1.0])
        _log_time_axis(ax, t_min, t_end)
        ax.set_yscale("log")
        ax.plot(t, s["L_G4"][keep], color=_G4, label=fr"{_LG4} (4-gram)", zorder=3)
        l_ih = s["L_IH"][keep]
        ax.plot(t, np.where(l_ih > 0, l_ih, np.nan), color=_IH,
                label=fr"{_LIH} (induction head)", zorder=3)
        top = float(np.nanmax(np.r_[s["L_G4"][keep], l_ih]))
        plateau = float(record.get("predictions", {}).get("plateau_L_IH", math.nan))
        bottom = 10 ** math.floor(math.log10(min(float(s["L_G4"][-1]),
                                                 plateau if math.isfinite(plateau) else top)
                                             * 1e-2))
        ax.set_ylim(bottom, top * 10 ** (0.3 * math.log10(top / bottom)))
        if not _shade_phases(ax, ph, t_min, t_end, labels=True):
            ax.text(0.02, 0.32, r"phase times out of order ($T_{\mathrm{II}}<T_{\mathrm{I}}$):"
                    "\nthe induction head emerges\nbefore the 4-gram is learned",
                    transform=ax.transAxes, fontsize=6, va="bottom", color="0.1", zorder=5)
        ax.axvline(ph["T_em"], ymax=0.62, color="0.3", lw=0.7, ls=":", zorder=2)
        ax.text(ph["T_em"], 0.04, r" $T_{\mathrm{em}}$", transform=ax.get_xaxis_transform(),
                ha="right", va="bottom", fontsize=6, color="0.2", rotation=90)
        ax.set_ylabel("partial loss (dimensionless)")
        ax.legend(loc="lower left", bbox_to_anchor=(0.0, 0.06))
        ax.set_title("(a) partial losses", loc="left")

        _shade_phases(bx, ph, t_min, t_end, labels=False)
        bx.axvline(ph["T_em"], color="0.3", lw=0.7, ls=":", zorder=2)
        bx.plot(t, s["w_v1"][keep], color=_G4, label=r"$w_{v1}$", zorder=3)
        bx.plot(t, s["w_v2"][keep], color=_IH, label=r"$w_{v2}$", zorder=3)
        bx.plot(t, s["w_kq"][keep] / p["wstar"], color=_IH, ls="--",
                label=r"$w_{kq}/w^*$", zorder=3)
        bx.set_ylim(-0.03, 1.2)
        bx.set_ylabel("value weights, $w_{kq}/w^*$ (dimensionless)")
        bx.set_xlabel(_TIME)
        px = bx.twinx()
        px.plot(t, s["p"][keep], color=_G4, ls=(0, (1.2, 1.2)), lw=1.2, zorder=3)
        px.set_ylabel("ALiBi slope $p$ (dimensionless)", color=_G4)
        px.tick_params(axis="y", colors=_G4)
        px.set_ylim(0, float(np.nanmax(s["p"])) * 1.08)
        handles = bx.get_legend_handles_labels()[0] + [
            Line2D([], [], color=_G4, ls=(0, (1.2, 1.2)), lw=1.2, label="$p$ (right axis)")]
        bx.legend(handles=handles, loc="upper left", ncols=2, columnspacing=0.8,
                  handlelength=1.8)
        bx.set_title("(b) parameters", loc="left")
        fig.suptitle(f"Four phases of training, {record['closure']} closure\n"
                     + _params_text(p))
    _meta(fig, "phases", record["closure"], p,
          f"T_I={ph['T_I']:.6g}, T_II={ph['T_II']:.6g}, T_em={ph['T_em']:.6g}, "
          f"T_III={ph['T_III']:.6g}", record.get("versions"), record.get("solver"))
    return fig


# --------------------------------------------------------------------------- #
# Figure 2: plateau scaling
# --------------------------------------------------------------------------- #
def plot_plateau_scaling(records: Sequence[Mapping], predictions: Mapping):
    """T_em against ln(1/sigma) for several L, T_em/L against L, and the O(L) correction.

    Panel (a): markers are the measured ``T_em`` (one colour and marker per L);
    each line is the leading-order prediction ``T_em_leading = ln(theta_em
    w*/sigma^2)/lambda`` at that L, whose slope in ln(1/sigma) is the predicted
    ``2/lambda`` (no fit and no anchor).  Panel (b): measured ``T_em/L`` (one
    colour per sigma), lines ``T_em_leading/L``.  Panel (c): the excess
    ``(T_em - T_em_leading)/L``, the O(L) correction, which the prediction says
    is independent of sigma (flat) and proportional to L (the same for every L).

    Parameters
    ----------
    records : sequence of dict
        Verify records (``setting``, ``result``) of one closure at one (alpha, w*).
    predictions : dict
        A predictions data file (see :func:`predictions_data`).
    """
    import matplotlib
    from matplotlib import colormaps
    from matplotlib.lines import Line2D

    closure, alpha, wstar = predictions["closure"], predictions["alpha"], predictions["wstar"]
    lengths = np.asarray(predictions["L"], dtype=float)
    sigmas = np.asarray(predictions["sigma"], dtype=float)
    leading = np.array([[np.nan if v is None else v for v in row]
                        for row in predictions["T_em_leading"]], dtype=float)

    def lead(length: float, sigma: float) -> float:
        i = int(np.argmin(np.abs(lengths - length)))
        j = int(np.argmin(np.abs(np.log(sigmas / sigma))))
        return float(leading[i, j])

    rows = []
    for r in records:
        st, res = r["setting"], r["result"]
        t_em = res["phases"].get("T_em")
        if (st["closure"], st["alpha"], st["wstar"]) != (closure, alpha, wstar) \
                or t_em is None or not math.isfinite(t_em):
            continue
        rows.append((int(st["L"]), float(st["sigma"]), float(t_em)))
    if not rows:
        raise ParameterError(f"no verify record with a finite T_em for closure {closure!r}, "
                             f"alpha={alpha:g}, wstar={wstar:g}")
    rows.sort()
    measured_l = sorted({r[0] for r in rows})
    measured_s = sorted({r[1] for r in rows}, reverse=True)
    x_lo, x_hi = math.log(1 / max(measured_s)), math.log(1 / min(measured_s))
    pad = 0.05 * max(x_hi - x_lo, 1.0)
    x_line = np.log(1 / sigmas)
    in_x = (x_line >= x_lo - pad) & (x_line <= x_hi + pad)
    with matplotlib.rc_context(_STYLE):
        fig, (ax, bx, cx) = _new_figure(6.2, 3, heights=[1.25, 1.0, 0.85])
        markers = {}
        for k, length in enumerate(measured_l):
            colour, marker = _SERIES[k % len(_SERIES)]
            markers[length] = (colour, marker)
            i = int(np.argmin(np.abs(lengths - length)))
            ax.plot(x_line[in_x], leading[i, in_x], color=colour, lw=0.9, zorder=2)
            xs, ys = zip(*[(math.log(1 / s), t) for L_, s, t in rows if L_ == length],
                         strict=True)
            ax.plot(xs, ys, ls="none", marker=marker, color=colour, mec="white", mew=0.4,
                    ms=4.2, zorder=3, label=f"$L={length:g}$")
            xs, ys = zip(*[(math.log(1 / s), (t - lead(L_, s)) / L_)
                           for L_, s, t in rows if L_ == length], strict=True)
            cx.plot(xs, ys, color=colour, lw=0.7, marker=marker, mec="white", mew=0.4,
                    ms=4.2, zorder=3)
        ax.set_yscale("log")
        y_min = min(t for *_, t in rows)
        y_max = max(t for *_, t in rows)
        ax.set_ylim(y_min / 2.5, y_max * (y_max / y_min) ** 0.45)
        ax.set_xlim(x_lo - pad, x_hi + pad)
        ax.set_xlabel(r"$\ln(1/\sigma)$ (dimensionless)")
        ax.set_ylabel(r"$T_{\mathrm{em}}$ (gradient-flow time)")
        handles, labels = ax.get_legend_handles_labels()
        handles.append(Line2D([], [], color="0.3", lw=0.9))
        labels.append(r"leading order, slope $2/\lambda$")
        ax.legend(handles, labels, loc="upper left", ncols=3, columnspacing=0.8,
                  handlelength=1.6)
        ax.set_title(r"(a) plateau length $T_{\mathrm{em}}$ against $\ln(1/\sigma)$",
                     loc="left")

        cmap = colormaps["cividis"]
        for k, s in enumerate(measured_s):
            colour = cmap(0.92 * k / max(1, len(measured_s) - 1))
            j = int(np.argmin(np.abs(np.log(sigmas / s))))
            bx.plot(lengths, leading[:, j] / lengths, color=colour, lw=0.9, zorder=2)
            xs, ys = zip(*[(L_, t / L_) for L_, s_, t in rows if s_ == s], strict=True)
            bx.plot(xs, ys, ls="none", marker="o", color=colour, mec="white", mew=0.4,
                    ms=4.0, zorder=3, label=fr"$\sigma={_sci(s)}$")
        _log_x(bx, min(measured_l) / 1.6, max(measured_l) * 1.6)
        bx.set_ylim(0, max(t / L_ for L_, _, t in rows) * 1.45)
        bx.set_xlabel(r"sequence length $L$ (tokens)")
        bx.set_ylabel(r"$T_{\mathrm{em}}/L$ (time per token)")
        handles, labels = bx.get_legend_handles_labels()
        handles.append(Line2D([], [], color="0.3", lw=0.9))
        labels.append("leading order")
        bx.legend(handles, labels, loc="upper center", ncols=3, columnspacing=0.8,
                  handlelength=1.6)
        bx.set_title(r"(b) $T_{\mathrm{em}}/L$ at fixed $\sigma$: $T_{\mathrm{em}}$ linear in $L$",
                     loc="left")

        cx.set_xlim(x_lo - pad, x_hi + pad)
        values = [(t - lead(L_, s)) / L_ for L_, s, t in rows]
        spread = max(values) - min(values)
        cx.set_ylim(min(values) - 0.35 * spread - 1e-3, max(values) + 0.35 * spread + 1e-3)
        cx.set_xlabel(r"$\ln(1/\sigma)$ (dimensionless)")
        cx.set_ylabel(r"$(T_{\mathrm{em}}-T_{\mathrm{em}}^{\mathrm{lead}})/L$" "\n(time per token)")
        cx.set_title(r"(c) excess over leading order (markers as in (a))",
                     loc="left")
        fig.suptitle(f"Plateau length: {closure} closure, " + fr"$\alpha={alpha:g}$, "
                     fr"$w^*={wstar:g}$" + "\nmarkers: measured; lines: predicted")
    solver = records[0].get("metadata", {}).get("solver") if records else None
    versions = records[0].get("metadata", {}).get("versions") if records else None
    _meta(fig, "plateau_scaling", closure, None,
          f"alpha={alpha:g}, wstar={wstar:g}, L in {measured_l}, "
          f"sigma in {[float(f'{s:g}') for s in measured_s]}", versions, solver)
    return fig


def _log_x(ax, lo: float, hi: float) -> None:
    from matplotlib.ticker import LogLocator, NullFormatter

    ax.set_xscale("log")
    ax.set_xlim(lo, hi)
    ax.xaxis.set_minor_locator(LogLocator(base=10, subs=np.arange(2, 10) * 0.1, numticks=12))
    ax.xaxis.set_minor_formatter(NullFormatter())


# --------------------------------------------------------------------------- #
# Figure 3: convergence
# --------------------------------------------------------------------------- #
def plot_convergence(record: Mapping, *, t_min: float = 1.0):
    """Phase IV: ``t L_G4(t) -> 1/4`` and ``ln L_IH(t)`` with the predicted slope ``-2 mu``.

    The predicted line in panel (b) has slope ``-2 mu`` (no fit) and passes
    through the measured ``ln L_IH`` where ``L_IH`` = 1e-8 times its plateau
    value (the middle, in log, of the window verify fits the decay rate in).
    Values below 1e-13 times the plateau are round-off and are not drawn.
    """
    import matplotlib

    s, ph, p, pred = _series(record), _phases(record), record["params"], record["predictions"]
    tail = record["phase_IV"]
    with matplotlib.rc_context(_STYLE):
        fig, (ax, bx) = _new_figure(4.4, 2)
        keep = s["t"] >= t_min
        t = s["t"][keep]
        end_value = float(s["t"][-1] * s["L_G4"][-1])
        ax.plot(t, t * s["L_G4"][keep], color=_G4, zorder=3,
                label=fr"$t\,${_LG4}$(t)$ (measured; {end_value:.4f} at the end)")
        quarter = float(pred["tail_t_L_G4"])
        ax.axhline(quarter, color="0.25", ls="--", lw=0.9, zorder=2,
                   label=fr"predicted limit {quarter:g}")
        _log_time_axis(ax, t_min, float(t[-1]))
        ymax = float(np.nanmax(t * s["L_G4"][keep]))
        ax.set_ylim(0, max(ymax, quarter) * 1.25)
        for name, value in (("T_I", ph["T_I"]), ("T_III", ph["T_III"])):
            if math.isfinite(value):
                ax.axvline(value, color="0.55", lw=0.6, ls=":", zorder=1)
                ax.text(value, 0.03, " $T_{\\mathrm{" + name[2:] + "}}$",
                        transform=ax.get_xaxis_transform(), rotation=90, fontsize=6,
                        color="0.3", ha="right", va="bottom")
        ax.set_xlabel(_TIME)
        ax.set_ylabel(fr"$t\,${_LG4} (dimensionless)")
        ax.legend(loc="upper right")
        ax.set_title(r"(a) 4-gram: algebraic tail $L_{\mathrm{G4}}\approx 1/(4t)$", loc="left")

        t4 = np.asarray(tail["t"], dtype=float)
        l_ih = np.array([np.nan if v is None else v for v in tail["L_IH"]], dtype=float)
        plateau = float(pred["plateau_L_IH"])
        ok = l_ih > _NOISE_FLOOR * plateau
        # Past the first value at round-off level the curve is noise: stop there.
        if not ok.all():
            ok[int(np.argmin(ok)):] = False
        bx.plot(t4[ok], np.log(l_ih[ok]), color=_IH, lw=2.4, alpha=0.55, solid_capstyle="butt",
                label=fr"$\ln${_LIH}$(t)$ (measured)", zorder=2)
        rate = float(pred["L_IH_decay_rate"])
        level = math.log(_ANCHOR_RATIO * plateau)
        log_l = np.log(l_ih[ok])
        if ok.sum() >= 2 and log_l.min() <= level <= log_l.max():
            idx = int(np.argmax(log_l <= level))
            t0 = float(np.interp(level, [log_l[idx], log_l[idx - 1]], [t4[ok][idx],
                                                                       t4[ok][idx - 1]]))
        else:
            t0, level = float(t4[ok][-1]), float(log_l[-1])
        line_t = np.array([t4[0], t4[ok][-1]])
        bx.plot(line_t, level - rate * (line_t - t0), color="0.1", ls="--", lw=0.9,
                zorder=3, label=fr"predicted slope $-2\mu={-rate:.3g}$")
        bx.plot([t0], [level], marker="o", ms=3, color="0.25", zorder=4)
        bx.set_xlim(t4[0], t4[ok][-1])
        y_lo = float(np.log(l_ih[ok]).min())
        y_hi = float(np.log(l_ih[ok]).max())
        bx.set_ylim(y_lo - 0.05 * (y_hi - y_lo), y_hi + 0.28 * (y_hi - y_lo))
        bx.set_xlabel(_TIME + r", phase IV ($t\geq T_{\mathrm{III}}$)")
        bx.set_ylabel(fr"$\ln${_LIH} ({_LIH} dimensionless)")
        bx.legend(loc="upper right")
        bx.set_title(r"(b) induction head: exponential decay $e^{-2\mu t}$", loc="left")
        fig.suptitle(f"Convergence (phase IV), {record['closure']} closure\n"
                     + _params_text(p))
    _meta(fig, "convergence", record["closure"], p,
          f"mu={pred['mu']:.6g}, tail t*L_G4={quarter:g}", record.get("versions"),
          record.get("solver"))
    return fig


# --------------------------------------------------------------------------- #
# Figure 4: closures
# --------------------------------------------------------------------------- #
_CLOSURE_STYLE = {"linear": {"ls": "-"}, "meanfield": {"ls": (0, (4.0, 1.6))}}


def plot_closures(records: Mapping[str, Mapping], overlay: Mapping | None = None):
    """One setting under the ``linear`` and ``meanfield`` closures (and exact SGD).

    Parameters
    ----------
    records : dict
        ``closure -> trajectory data`` at one setting.
    overlay : dict, optional
        :func:`load_overlay` output: exact-softmax SGD curves drawn in black.
    """
    import matplotlib

    params = next(iter(records.values()))["params"]
    with matplotlib.rc_context(_STYLE):
        fig, (ax, bx) = _new_figure(4.2, 2, sharex=True)
        t_hi, lows = 0.0, []
        for closure, record in records.items():
            s, ph = _series(record), _phases(record)
            t_hi = max(t_hi, 1.3 * ph["T_III"]) if math.isfinite(ph["T_III"]) else \
                max(t_hi, float(s["t"][-1]))
            style = _CLOSURE_STYLE.get(closure, {"ls": "-."})
            l_ih = np.where(s["L_IH"] > 0, s["L_IH"], np.nan)
            ax.plot(s["t"], l_ih, color=_IH, label=f"{closure} ODE", zorder=3, **style)
            plateau = record.get("predictions", {}).get("plateau_L_IH")
            if plateau is None:  # the level where emergence starts
                plateau = float(np.interp(ph["T_II"], s["t"], s["L_IH"]))
            lows.append(float(plateau))
            bx.plot(s["t"], s["w_kq"] / params["wstar"], color=_IH, zorder=3,
                    label=f"{closure} ODE", **style)
            for a in (ax, bx):
                a.axvline(ph["T_em"], color=_IH, lw=0.5, ls=style["ls"], alpha=0.6, zorder=1)
        if overlay:
            for k, curve in enumerate(overlay["curves"]):
                grey = ("0.0", "0.45", "0.25")[k % 3]
                t = curve["t"]
                for a, name, scale in ((ax, "L_IH", 1.0), (bx, "w_kq", params["wstar"])):
                    if name in curve:
                        a.plot(t, curve[name] / scale, color=grey, lw=0.8, zorder=4,
                               label=textwrap.fill(curve["label"], 28))
                    if name in curve["interval"]:
                        lo, hi = curve["interval"][name]
                        a.fill_between(t, lo / scale, hi / scale, color=grey, alpha=0.18,
                                       lw=0, zorder=2)
                t_hi = max(t_hi, float(np.nanmax(t)))
        ax.set_yscale("log")
        top = max(float(np.nanmax(np.where(_series(r)["L_IH"] > 0, _series(r)["L_IH"],
                                           np.nan))) for r in records.values())
        ax.set_ylim(min(lows) * 1e-3, top * 40)
        ax.set_xlim(0, t_hi)
        ax.set_ylabel(fr"{_LIH} (dimensionless)")
        # One legend (the line styles are the same in both panels), where the curves are not.
        handles, labels = bx.get_legend_handles_labels()
        ax.legend(handles, labels, loc="upper right")
        ax.set_title(r"(a) induction-head loss $L_{\mathrm{IH}}$ (thin lines: $T_{\mathrm{em}}$)",
                     loc="left")
        bx.axhline(1.0, color="0.6", lw=0.6, zorder=1)
        bx.set_ylim(-0.03, 1.12)
        bx.set_xlabel(_TIME)
        bx.set_ylabel(r"$w_{kq}/w^*$ (dimensionless)")
        bx.set_title(r"(b) query-key weight $w_{kq}/w^*$", loc="left")
        title = "Softmax closures compared\n" + _params_text(params)
        if overlay:
            title = "Softmax closures vs exact-softmax SGD\n" + _params_text(params)
        fig.suptitle(title)
    first = next(iter(records.values()))
    _meta(fig, "closures", ",".join(records), params,
          "overlay: " + ("; ".join(c["label"] for c in overlay["curves"]) if overlay else "none"),
          first.get("versions"), first.get("solver"))
    return fig


# --------------------------------------------------------------------------- #
# Output
# --------------------------------------------------------------------------- #
def render(fig, fmt: str) -> bytes:
    """The figure as PNG or PDF bytes, with fixed metadata and no timestamps."""
    import matplotlib

    if fmt not in FORMATS:
        raise ParameterError(f"format={fmt!r}; allowed: {', '.join(FORMATS)}")
    meta = getattr(fig, "_reduced_odes_meta", None) or {
        "title": "figure", "subject": f"reduced-odes {__version__}", "keywords": []}
    software = f"reduced-odes {__version__} (matplotlib {matplotlib.__version__})"
    if fmt == "png":
        metadata = {"Title": meta["title"], "Software": software,
                    "Description": meta["subject"] + "; " + "; ".join(meta["keywords"])}
    else:
        metadata = {"Title": meta["title"], "Subject": meta["subject"],
                    "Keywords": "; ".join(meta["keywords"]), "Creator": software,
                    "Producer": software, "CreationDate": None, "ModDate": None}
    buffer = io.BytesIO()
    with matplotlib.rc_context(_STYLE):
        fig.savefig(buffer, format=fmt, dpi=_DPI, metadata=metadata)
    return buffer.getvalue()


def figure_path(out: str | Path, name: str, closure: str | None, fmt: str) -> Path:
    """``<out>/<name>.<fmt>``; closures other than ``linear`` add ``-<closure>``."""
    suffix = "" if closure in (None, "linear") else f"-{closure}"
    return Path(out) / f"{name}{suffix}.{fmt}"


def save_figure(fig, out: str | Path, name: str, closure: str | None,
                formats: Sequence[str] = FORMATS) -> list[Path]:
    """Write ``fig`` in each format; a file whose bytes are unchanged is not rewritten."""
    paths = []
    for fmt in formats:
        data = render(fig, fmt)
        path = figure_path(out, name, closure, fmt)
        path.parent.mkdir(parents=True, exist_ok=True)
        if not (path.exists() and path.read_bytes() == data):
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_bytes(data)
            os.replace(tmp, path)
        paths.append(path)
    return paths


def _parse_formats(text: str | Sequence[str]) -> list[str]:
    items = text.split(",") if isinstance(text, str) else list(text)
    formats = [f.strip().lower().lstrip(".") for f in items if f.strip()]
    bad = [f for f in formats if f not in FORMATS]
    if bad or not formats:
        raise ParameterError(f"format={text!r}; allowed: a comma-separated list of "
                             f"{', '.join(FORMATS)}")
    return list(dict.fromkeys(formats))


def make_figures(out: str | Path = "figures", data: str | Path | None = None,
                 formats: str | Sequence[str] = FORMATS, closure: str = "all",
                 grid: str = "default", *, params: ModelParams | None = None,
                 scaling_L: Sequence[int] | None = None,
                 scaling_sigma: Sequence[float] | None = None, executor=None,
                 log=None) -> list[Path]:
    """Draw every figure from the data files, creating missing data first.

    Parameters
    ----------
    out : path
        Directory of the figures.
    data : path, optional
        Directory of the data files (default ``<out>/data``).
    formats : str or sequence
        ``"png,pdf"`` or a subset.
    closure : {"linear", "meanfield", "all"}
        Closures of the per-closure figures; ``closures`` is drawn only for ``all``.
    grid : str
        Verify grid whose results feed ``plateau_scaling`` (``verify-<grid>.jsonl``).
    params : ModelParams, optional
        Setting of ``phases``, ``convergence`` and ``closures`` (default
        :data:`DEFAULT_PARAMS`).
    scaling_L, scaling_sigma : sequence, optional
        Override the grid's L and sigma values in ``plateau_scaling``.
    executor : concurrent.futures.Executor, optional
        Where missing verify settings run (default: a process pool).
    log : callable, optional
        Called with one line per file written.

    Returns
    -------
    list of Path
        The figure files.
    """
    from ._results import read_json

    log = log or (lambda line: None)
    params = DEFAULT_PARAMS if params is None else params
    formats = _parse_formats(formats)
    if closure not in (*CLOSURES, "all"):
        raise ParameterError(f"closure={closure!r}; allowed: linear, meanfield, all")
    closures = list(CLOSURES) if closure == "all" else [closure]
    out = Path(out)
    data = Path(data) if data is not None else out / "data"
    written: list[Path] = []

    for cl in closures:
        path = trajectory_data(cl, params, data)
        record = read_json(path)
        for name, plot in (("phases", plot_phases), ("convergence", plot_convergence)):
            fig = plot(record)
            fig._reduced_odes_meta["keywords"].append(f"data={path.name}")
            written += save_figure(fig, out, name, cl, formats)
        records = scaling_records(cl, data, grid, alpha=params.alpha, wstar=params.wstar,
                                  L=scaling_L, sigma=scaling_sigma, executor=executor)
        if records:
            pred_path = predictions_data(cl, data, alpha=params.alpha, wstar=params.wstar,
                                         L=[r["setting"]["L"] for r in records],
                                         sigma=[r["setting"]["sigma"] for r in records])
            fig = plot_plateau_scaling(records, read_json(pred_path))
            fig._reduced_odes_meta["keywords"] += [f"data=verify-{grid}.jsonl",
                                                   f"data={pred_path.name}"]
            written += save_figure(fig, out, "plateau_scaling", cl, formats)
    if closure == "all":
        overlay = load_overlay(data / OVERLAY_FILE)
        where = params
        if overlay and overlay["setting"]:
            where = ModelParams(**overlay["setting"])
        paths = {cl: trajectory_data(cl, where, data, with_predictions=False)
                 for cl in CLOSURES}
        fig = plot_closures({cl: read_json(p) for cl, p in paths.items()}, overlay)
        fig._reduced_odes_meta["keywords"] += [f"data={p.name}" for p in paths.values()] + (
            [f"data={OVERLAY_FILE}"] if overlay else [])
        written += save_figure(fig, out, "closures", None, formats)
    for path in written:
        log(f"wrote {path}")
    return written


# --------------------------------------------------------------------------- #
# Command line
# --------------------------------------------------------------------------- #
def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``reduced-odes figures``."""
    from ._verify import GRIDS

    parser.add_argument("--out", metavar="DIR", default="figures",
                        help="directory of the figures (default: figures/)")
    parser.add_argument("--data", metavar="DIR", default=None,
                        help="directory of the data files (default: <out>/data); missing "
                             "ones are computed first")
    parser.add_argument("--format", default="png,pdf",
                        help="comma-separated formats among png, pdf (default: png,pdf)")
    parser.add_argument("--closure", choices=(*CLOSURES, "all"), default="all",
                        help="closures of the per-closure figures; the closures figure "
                             "needs 'all' (default: all)")
    parser.add_argument("--grid", choices=tuple(GRIDS), default="default",
                        help="verify grid feeding plateau_scaling (default: default)")


def run(args: argparse.Namespace) -> int:
    """Handler of ``reduced-odes figures``: ``args`` has out, data, format, closure (grid)."""
    make_figures(args.out, getattr(args, "data", None), args.format, args.closure,
                 getattr(args, "grid", None) or "default",
                 log=lambda line: print(line, file=sys.stdout))
    return 0
