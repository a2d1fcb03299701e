"""Figure 5, ``closure_errors``: closure / exact phase times over the closure-error grid."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from reduced_odes import author as ra
from reduced_odes.author import ParameterError

from . import _style as style
from .closures import _CLOSURE_STYLE

#: The table ``reduced-odes compare --grid FILE`` writes (optional: never created here).
COMPARE_GRID_FILE = "compare-grid.json"
#: Multiplicative shift in L between sigmas: the ratio should not depend on sigma, so the
#: markers coincide, and side by side they stay distinguishable (0.05 decade apart).
_SIGMA_DODGE = 1.12
_PANELS = (
    ("T_em", r"$T_{\mathrm{em}}$: closure / exact" "\n(dimensionless)",
     r"(a) emergence time $T_{\mathrm{em}}$, closure / exact"),
    ("window", "window: closure / exact\n(dimensionless)",
     r"(b) emergence window $T_{\mathrm{III}}-T_{\mathrm{II}}$, closure / exact"),
)


def _finite(value) -> float:
    """A stored number as a float: ``null`` (NaN) and ``"inf"`` become non-finite."""
    return math.nan if value is None else float(value)


def closure_error_points(rows: Sequence[Mapping], quantity: str) -> dict[tuple, list[tuple]]:
    """The ratios closure / exact of ``quantity``, grouped by ``(closure, wstar, sigma)``.

    Rows where the window is ``T_III`` (``T_II = 0``) are left out of ``"window"``,
    as are closure blocks without that ratio (a failed run) and non-finite ratios.

    Parameters
    ----------
    rows : sequence of dict
        The ``rows`` of a ``compare --grid`` table.
    quantity : {"T_em", "window", "T_III"}

    Returns
    -------
    dict
        ``(closure, wstar, sigma) -> [(L, value, lo, hi), ...]`` sorted by L.

    Examples
    --------
    >>> row = {"L": 20, "sigma": 0.1, "wstar": 0.3, "exact": {"window_is_T_III": True},
    ...        "linear": {"ratio_to_exact": {"T_em": {"value": 0.9, "lo": 0.8, "hi": 1.0}}}}
    >>> closure_error_points([row], "T_em")
    {('linear', 0.3, 0.1): [(20, 0.9, 0.8, 1.0)]}
    >>> closure_error_points([row], "window")
    {}
    """
    points: dict[tuple, list[tuple]] = {}
    for row in rows:
        if quantity == "window" and row["exact"].get("window_is_T_III"):
            continue  # T_II = 0: no emergence window to compare
        for closure in _CLOSURE_STYLE:
            ratio = row.get(closure, {}).get("ratio_to_exact", {}).get(quantity)
            if ratio is None:
                continue
            value, lo, hi = (_finite(ratio[k]) for k in ("value", "lo", "hi"))
            if all(math.isfinite(v) for v in (value, lo, hi)):
                key = (closure, float(row["wstar"]), float(row["sigma"]))
                points.setdefault(key, []).append((row["L"], value, lo, hi))
    return {k: sorted(v) for k, v in sorted(points.items())}


def _draw_panel(ax, points: Mapping[tuple, list[tuple]], colours: Mapping, markers: Mapping,
                dodge: Mapping) -> None:
    """One ``errorbar`` per ``(closure, wstar, sigma)``, with the reference line at 1."""
    ax.axhline(1.0, color="0.6", lw=0.6, zorder=1)
    for (closure, wstar, sigma), pts in points.items():
        length, value, lo, hi = zip(*pts, strict=True)
        ax.errorbar([x * dodge[sigma] for x in length], value,
                    yerr=[[max(0.0, v - a) for v, a in zip(value, lo, strict=True)],
                          [max(0.0, b - v) for v, b in zip(value, hi, strict=True)]],
                    color=colours[wstar], marker=markers[sigma], mec="white", mew=0.4,
                    ms=4.0, lw=0.6, elinewidth=0.6, capsize=1.2, zorder=3,
                    **_CLOSURE_STYLE[closure])
    bounds = [1.0] + [v for pts in points.values() for p in pts for v in p[2:]]
    pad = 0.12 * max(max(bounds) - min(bounds), 0.02)
    ax.set_ylim(min(bounds) - pad, max(bounds) + pad)
    if not points:
        ax.text(0.5, 0.5, "no setting with an emergence window", transform=ax.transAxes,
                ha="center", va="center", color="0.3")


def _legend(fig, closures: Sequence[str], colours: Mapping, markers: Mapping) -> None:
    """One legend below the panels, a column per encoding (w*, closure, sigma)."""
    from matplotlib.lines import Line2D

    columns = [
        [(Line2D([], [], color=c, lw=1.1), fr"$w^*={w:g}$") for w, c in colours.items()],
        [(Line2D([], [], color="0.3", lw=0.9, **_CLOSURE_STYLE[c]), c) for c in closures],
        [(Line2D([], [], ls="none", color="0.3", marker=m, ms=4.0), fr"$\sigma={ra.sci(s)}$")
         for s, m in markers.items()],
    ]
    depth = max(len(col) for col in columns)
    blank = (Line2D([], [], alpha=0.0), "")  # pads short columns so each encoding keeps one
    entries = [e for col in columns for e in col + [blank] * (depth - len(col))]
    fig.legend(*zip(*entries, strict=True), loc="outside lower center", ncols=len(columns),
               columnspacing=1.2, handlelength=2.2)


def _subtitle(doc: Mapping, alphas: Sequence[float]) -> str:
    """Which exact estimator, the alpha(s), and the confidence of the error bars."""
    meta = doc.get("metadata") or {}
    levels = {t.get("settings", {}).get("confidence") for t in meta.get("tables", [])}
    level = next(iter(levels)) if len(levels) == 1 and None not in levels else None
    bars = f"{100 * level:g}% interval" if level is not None else "interval"
    exact = ("exact-softmax population flow" if meta.get("estimator", "population")
             == "population" else f"exact softmax ({meta['estimator']})")
    alpha = ", ".join(f"{a:g}" for a in alphas)
    return (f"Closure error against the {exact}, " + fr"$\alpha={alpha}$" + "\n"
            f"bars: {bars} of the exact time; markers offset in $L$ per $\\sigma$")


def plot_closure_errors(doc: Mapping):
    """Closure / exact ``T_em`` and emergence window against L, over the compare grid.

    One colour per w*, the closure's line style (solid ``linear``, dashed
    ``meanfield``), one marker per sigma: the closure error should not depend on
    sigma, so the markers of one (closure, w*) coincide (they are shifted slightly
    in L to stay visible).  Error bars are the ratio's interval (from the exact
    time's); the grey line is 1, no closure error.  Panel (b) leaves out the
    settings where ``T_II = 0`` (the window is then ``T_III``) and says how many.

    Parameters
    ----------
    doc : dict
        A ``reduced-odes compare --grid`` table: ``{"rows": [...], "metadata": {...}}``.

    Examples
    --------
    >>> ratio = {"value": 0.9, "lo": 0.89, "hi": 0.91}
    >>> block = {"ratio_to_exact": {"T_em": ratio, "window": ratio}}
    >>> row = {"L": 20, "sigma": 0.1, "wstar": 0.3, "alpha": 0.5,
    ...        "exact": {"window_is_T_III": False}, "linear": block, "meanfield": block}
    >>> fig = plot_closure_errors({"rows": [row, {**row, "L": 50}]})
    >>> [len(ax.containers) for ax in fig.axes]  # one errorbar per closure
    [2, 2]
    """
    import matplotlib

    from reduced_odes.author import FIGURE_DIGITS, json_safe

    # Displayed precision: the same bytes everywhere.
    rows = json_safe(list(doc.get("rows") or []), digits=FIGURE_DIGITS)
    points = {q: closure_error_points(rows, q) for q, *_ in _PANELS}
    if not points["T_em"]:
        raise ParameterError("no compare row with a finite closure/exact T_em ratio")
    used = {**points["T_em"], **points["window"]}  # both panels share the encodings
    lengths = sorted({p[0] for pts in used.values() for p in pts})
    sigmas = sorted({k[2] for k in used}, reverse=True)
    wstars = sorted({k[1] for k in used})
    colours = {w: ra.SERIES[i % len(ra.SERIES)][0] for i, w in enumerate(wstars)}
    markers = {s: ra.SERIES[i % len(ra.SERIES)][1] for i, s in enumerate(sigmas)}
    dodge = {s: _SIGMA_DODGE ** (i - (len(sigmas) - 1) / 2) for i, s in enumerate(sigmas)}
    closures = [c for c in _CLOSURE_STYLE if any(k[0] == c for k in used)]
    left_out = sum(bool(r["exact"].get("window_is_T_III")) for r in rows)
    alphas = sorted({float(r["alpha"]) for r in rows if "alpha" in r})
    with matplotlib.rc_context(ra.STYLE):
        fig, axes = ra.new_figure(4.6, 2, sharex=True)
        for ax, (quantity, ylabel, title) in zip(axes, _PANELS, strict=True):
            _draw_panel(ax, points[quantity], colours, markers, dodge)
            ax.set_ylabel(ylabel)
            ax.set_title(title, loc="left")
        if left_out:
            axes[1].set_title(_PANELS[1][2] + f"\n({left_out} setting{'s' * (left_out > 1)} "
                              r"with $T_{\mathrm{II}}=0$ left out: window = $T_{\mathrm{III}}$)",
                              loc="left")
        ra.log_x(axes[1], min(lengths) / 1.6, max(lengths) * 1.6)
        axes[1].set_xlabel(r"sequence length $L$ (tokens)")
        _legend(fig, closures, colours, markers)
        fig.suptitle(_subtitle(doc, alphas))
    versions = (doc.get("metadata") or {}).get("versions")
    style.meta(fig, "closure_errors", ",".join(closures), None,
               f"alpha in {alphas}, L in {lengths}, sigma in {sigmas}, "
               f"wstar in {sorted(colours)}, window left out at {left_out} settings", versions)
    return fig
