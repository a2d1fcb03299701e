"""The three figures, each drawn from its data document only (no integration here).

Colours follow the mechanism: syntax (P) blue, semantics (Q) vermillion, the
value weight black, the eigenvalue crossing reddish purple.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from reduced_odes import author as ra

__all__ = ["STAGE_NAMES", "plot_scaling", "plot_spectrum", "plot_stages", "stage_edges"]

P, Q, V = ra.OKABE_ITO["blue"], ra.OKABE_ITO["vermillion"], ra.OKABE_ITO["black"]
CROSS, PLATEAU = ra.OKABE_ITO["reddish_purple"], ra.OKABE_ITO["bluish_green"]
STAGE_NAMES = ("I: syntax", "plateau", "II: semantics", "converged")
_LEVEL = {"lw": 0.7, "ls": ":", "zorder": 2}




def stage_edges(doc: Mapping) -> list[float]:
    """``[t_0, T_P@0.99, T_Q@0.1, T_Q@0.99, t_end]``: the bounds of :data:`STAGE_NAMES`.

    Examples
    --------
    >>> doc = {"series": {"t": [1.0, 900.0]},
    ...        "phases": {"T_P@0.99": 200.0, "T_Q@0.1": 500.0, "T_Q@0.99": 700.0}}
    >>> stage_edges(doc)
    [1.0, 200.0, 500.0, 700.0, 900.0]
    """
    t, ph = doc["series"]["t"], doc["phases"]
    return [t[0], ph["T_P@0.99"], ph["T_Q@0.1"], ph["T_Q@0.99"], t[-1]]


def _setting(doc: Mapping) -> str:
    p = doc["params"]
    return (fr"$\sigma={ra.sci(p['sigma'])}$, $d_P={p['d_P']}$, $d_Q={p['d_Q']}$, $N={p['N']}$, "
            fr"$\pi_P={p['pi_P']:g}$, trained $v$")


def _time_axes(axes, doc: Mapping, shade: bool = True) -> None:
    edges = stage_edges(doc)
    for k, ax in enumerate(axes):
        ra.log_time_axis(ax, edges[0], edges[-1])
        if shade:
            ra.shade_spans(ax, edges, STAGE_NAMES, labels=k == 0)
    axes[-1].set_xlabel(ra.TIME_LABEL)


@ra.house_style
def plot_stages(doc: Mapping):
    """``stages``: ``L_P``, ``L_Q`` (top) and ``v``, ``a``, ``b`` (bottom) against time, shaded.

    Examples
    --------
    >>> fig = plot_stages(_example())
    >>> len(fig.axes)
    2
    """
    s, pred = {k: ra.as_array(v) for k, v in doc["series"].items()}, doc["predictions"]
    fig, (ax, bx) = ra.new_figure(4.0, 2, sharex=True, heights=[1.0, 1.1])
    ax.plot(s["t"], s["L_P"], color=P, label=r"$L_P$ (syntax)", zorder=3)
    ax.plot(s["t"], s["L_Q"], color=Q, label=r"$L_Q$ (semantics)", zorder=3)
    for level, colour in ((pred["L_P_min"], P), (pred["L_Q_min"], Q)):
        ax.axhline(level, color=colour, **_LEVEL)
    ax.set_ylim(0, 1.3 * max(np.nanmax(s["L_P"]), np.nanmax(s["L_Q"])))  # room for the stage names
    ax.set_ylabel("loss block")
    ax.legend(loc="center left")
    ax.set_title(_setting(doc))
    bx.set_yscale("log")
    bx.plot(s["t"], s["v"], color=V, label=r"$v$ (value)", zorder=3)
    bx.plot(s["t"], s["eig_P"], color=P, label=r"$a=k_Pq_P$", zorder=3)
    bx.plot(s["t"], s["eig_Q"], color=Q, label=r"$b=k_Qq_Q$", zorder=3)
    bx.set_ylabel("parameter")
    bx.legend(loc="center left")
    _time_axes((ax, bx), doc)
    return fig


def _crossing_point(s: Mapping, T_cross: float) -> float:
    return float(np.exp(np.interp(T_cross, s["t"], np.log(s["eig_P"]))))


@ra.house_style
def plot_spectrum(doc: Mapping):
    """``spectrum``: eigenvalues of ``W = W_Kᵀ W_Q`` (P, Q blocks) against time, crossing marked.

    Examples
    --------
    >>> fig = plot_spectrum(_example())
    >>> fig.axes[0].get_yscale()
    'log'
    """
    s = {k: ra.as_array(v) for k, v in doc["series"].items()}
    pred, p = doc["predictions"], doc["params"]
    fig, (ax,) = ra.new_figure(2.8, 1)
    ax.set_yscale("log")
    for key, colour, name, size in (("eig_P", P, "P block: $a$", p["d_P"]),
                                    ("eig_Q", Q, "Q block: $b$", p["d_Q"])):
        ax.plot(s["t"], s[key], color=colour, label=fr"{name} (${size}$ eigenvalues)", zorder=3)
    ax.axhline(pred["a1"], color=P, **_LEVEL, label=r"$a_1$, $a_\infty$, $b_\infty$ (6.2)")
    ax.axhline(pred["a_inf"], color=P, **_LEVEL)
    ax.axhline(pred["b_inf"], color=Q, **_LEVEL)
    T_cross = doc["phases"].get("T_cross")
    if T_cross is not None:
        ax.axvline(T_cross, color=CROSS, lw=0.8, ls="--", zorder=2)
        ax.plot([T_cross], [_crossing_point(s, T_cross)], "o", color=CROSS, zorder=4,
                label=fr"crossing $T_\times={T_cross:.4g}$")
    ax.set_ylabel(r"eigenvalue of $W=W_K^{\top}W_Q$")
    ax.legend(loc="center left")
    ax.set_title(_setting(doc))
    _time_axes((ax,), doc, shade=False)
    return fig


_STAGE_STYLE = {"T_P": (P, "o", r"$T_P$"), "T_Q": (Q, "s", r"$T_Q$"),
                "T_cross": (CROSS, "^", r"$T_\times$"), "plateau": (PLATEAU, "D", "plateau length")}


def _times_panel(ax, x, measured: Mapping, x_line, line: Mapping, keys) -> None:
    for key in keys:
        colour, marker, label = _STAGE_STYLE[key]
        ax.plot(x_line, ra.as_array(line[key]), color=colour, lw=0.9, zorder=2)
        ax.plot(x, ra.as_array(measured[key]), marker, color=colour, ls="none", mfc="white",
                mew=0.9, label=label, zorder=3)


@ra.house_style
def plot_scaling(doc: Mapping):
    """``scaling``: stage times against ``ln(1/σ²)`` and against ``d_Q/(π_Q² μ²)``.

    Markers are integrated runs; lines are the section-6.4 composite predictions
    (no fit).

    Examples
    --------
    >>> fig = plot_scaling({"sigma": {"ell": [9.2, 18.4], "measured": {k: [1, 2] for k in
    ...     ("T_P", "T_Q", "T_cross")},
    ...     "line": {k: [1, 2] for k in ("ell", "T_P", "T_Q", "T_cross")}},
    ...     "d_Q": {"sigma": 1e-4, "x": [16, 32], "measured": {k: [1, 2] for k in ("T_P", "T_Q",
    ...     "plateau")}, "line": {k: [1, 2] for k in ("x", "T_P", "T_Q", "plateau")}}})
    >>> len(fig.axes)
    2
    """
    sweep, dims = doc["sigma"], doc["d_Q"]
    fig, (ax, bx) = ra.new_figure(4.4, 2)
    _times_panel(ax, sweep["ell"], sweep["measured"], sweep["line"]["ell"], sweep["line"],
                 ("T_P", "T_Q", "T_cross"))
    ax.set_xlabel(r"$\ell=\ln(1/\sigma^2)$")
    ax.set_ylabel("stage time")
    ax.set_title("markers: integrated; lines: composite 6.4 (no fit)")
    ax.legend(loc="upper left")
    _times_panel(bx, dims["x"], dims["measured"], dims["line"]["x"], dims["line"],
                 ("T_P", "T_Q", "plateau"))
    bx.set_xlabel(r"$d_Q/(\pi_Q^2\mu^2)$" + fr"  ($\sigma={ra.sci(dims['sigma'])}$, $d_Q$ varied)")
    bx.set_ylabel("stage time")
    bx.legend(loc="upper left")
    for axis in (ax, bx):
        axis.set_ylim(bottom=0)
    return fig


def _example() -> dict:
    """A small synthetic trajectory document, for the examples."""
    t = np.geomspace(1.0, 1000.0, 50)
    a, b = 1e-4 * np.exp(t / 50).clip(max=1e4), 1e-4 * np.exp(t / 100).clip(max=2e4)
    return {"params": {"sigma": 1e-2, "d_P": 2, "d_Q": 8, "N": 32, "pi_P": 0.5},
            "series": {"t": t, "eig_P": a, "eig_Q": b, "v": 1 + 0 * t, "L_P": 0.25 / (1 + a),
                       "L_Q": 0.25 / (1 + b)},
            "phases": {"T_P@0.99": 300.0, "T_Q@0.1": 500.0, "T_Q@0.99": 800.0, "T_cross": 700.0},
            "predictions": {"a1": 1.0, "a_inf": 0.8, "b_inf": 2.0, "L_P_min": 0.2, "L_Q_min": 0.1}}
