"""House style of the figures: palette, sizes, shared drawing helpers, deterministic output."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from reduced_odes import __version__
from reduced_odes.author import (
    FORMATS,
    OKABE_ITO,
    SHADES,
    save_each_format,
    sci,
)

#: One colour per mechanism, in every figure.
MECHANISM_COLOURS = {"4-gram": OKABE_ITO["blue"], "induction head": OKABE_ITO["vermillion"]}
G4, IH = MECHANISM_COLOURS["4-gram"], MECHANISM_COLOURS["induction head"]
PHASE_NAMES = ("partial learning", "plateau", "emergence", "convergence")
TIME = "t (gradient-flow time)"
LG4, LIH = r"$L_{\mathrm{G4}}$", r"$L_{\mathrm{IH}}$"
#: Phase-IV display: L_IH below this fraction of its plateau is cancellation noise.
NOISE_FLOOR = 1e-13
#: The predicted phase-IV slope is anchored where L_IH/plateau equals this (the
#: log-midpoint of verify's fit window [1e-10, 1e-6]).
ANCHOR_RATIO = 1e-8


def params_text(p: Mapping) -> str:
    return (fr"$L={p['L']:g}$, $\alpha={p['alpha']:g}$, $w^*={p['wstar']:g}$, "
            fr"$\sigma={sci(p['sigma'])}$")


def series_of(record: Mapping) -> dict[str, np.ndarray]:
    s = record["series"]
    out = {k: np.array([np.nan if v is None else v for v in s[k]], dtype=float) for k in s}
    out["w_kq"] = np.exp(out["log_w_kq"])  # finite even where w_kq underflows
    return out


def phases_of(record: Mapping) -> dict[str, float]:
    return {k: (math.nan if v is None else float(v)) for k, v in record["phases"].items()}


def meta(fig, name: str, closure: str | None, params: Mapping | None, extra: str = "",
         versions: Mapping | None = None, solver: Mapping | None = None,
         data: Sequence[str] = ()) -> None:
    """Attach the metadata strings (subject, keywords) that :func:`save_each` stamps in."""
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


def shade_phases(ax, phases: Mapping[str, float], t_lo: float, t_hi: float,
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
        ax.axvspan(a, b, color=SHADES[k], lw=0, zorder=0)
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


def figure_path(out: str | Path, name: str, closure: str | None, fmt: str) -> Path:
    """``<out>/<name>.<fmt>``; closures other than ``linear`` add ``-<closure>``."""
    suffix = "" if closure in (None, "linear") else f"-{closure}"
    return Path(out) / f"{name}{suffix}.{fmt}"


def save_each(draw, keywords: Sequence[str], out: str | Path, name: str,
              closure: str | None, formats: Sequence[str] = FORMATS) -> list[Path]:
    """Write a freshly drawn figure (``draw()``, its keywords extended) in each format at
    :func:`figure_path` (see :func:`reduced_odes.author.save_each_format`)."""
    def drawn():
        fig = draw()
        fig._reduced_odes_meta["keywords"] += list(keywords)
        return fig

    return save_each_format(drawn, figure_path(out, name, closure, "x").with_suffix(""),
                            formats)

