"""House style of the figures: palette, sizes, shared drawing helpers, deterministic output."""

from __future__ import annotations

import io
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from ...._params import ParameterError
from ...._version import __version__
from ._data import FORMATS

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


def _log_x(ax, lo: float, hi: float) -> None:
    from matplotlib.ticker import LogLocator, NullFormatter

    ax.set_xscale("log")
    ax.set_xlim(lo, hi)
    ax.xaxis.set_minor_locator(LogLocator(base=10, subs=np.arange(2, 10) * 0.1, numticks=12))
    ax.xaxis.set_minor_formatter(NullFormatter())


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
