"""The four figures, each drawn from its data document only (no integration here).

Colours follow the mechanism: ``eps_g`` black, the students' overlaps ``Q``
blue, the student–teacher overlaps ``R`` vermillion, what the derived ODE
predicts (fixed points, eigenvalues) bluish green and dashed; series over a
swept number (``eta``, ``K``) take the house series colours.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from reduced_odes import author as ra

__all__ = ["PHASE_NAMES", "TIME", "plot_escape", "plot_eta", "plot_noise", "plot_plateau"]

LOSS, Q_COLOUR, R_COLOUR = ra.OKABE_ITO["black"], ra.OKABE_ITO["blue"], ra.OKABE_ITO["vermillion"]
PREDICTED = ra.OKABE_ITO["bluish_green"]
#: The stages shaded in ``plateau``: before the plateau, on it, after the escape.
PHASE_NAMES = ("approach", "plateau", "specialisation")
#: Online SGD's clock.
TIME = r"$t = \eta\,\mathrm{steps}/N$"
_MARK = {"lw": 0.7, "ls": ":", "color": "0.35", "zorder": 2}


def _positive(values) -> np.ndarray:
    """A data file's ``eps_g`` for a log axis: zeros (below the data's floor) as NaN."""
    values = ra.as_array(values)
    return np.where(values > 0, values, math.nan)


def _setting(params: Mapping, *names: str) -> str:
    symbols = {"K": "K", "M": "M", "eta": r"\eta", "noise": r"\sigma", "asymmetry": "a"}
    parts = []
    for name in names:
        value = params[name]
        shown = ra.sci(value) if name == "asymmetry" else f"{value:g}"
        parts.append(f"${symbols[name]}={shown}$")
    return ", ".join(parts)


@ra.house_style
def plot_plateau(doc: Mapping):
    """``plateau``: ``eps_g(t)`` with the plateau ``eps*`` of the unspecialised fixed point
    (top) and the overlaps ``Q_ik``, ``R_in`` with their plateau values (bottom); the
    approach, the plateau and the specialisation shaded, ``T_spec`` dotted.

    Examples
    --------
    >>> fig = plot_plateau(_example_plateau())
    >>> len(fig.axes), fig.axes[0].get_yscale()
    (2, 'log')
    """
    s, ph, plateau = doc["series"], doc["phases"], doc["plateau"]
    t = ra.as_array(s["t"])
    fig, (ax, bx) = ra.new_figure(3.8, 2, sharex=True, heights=[1.1, 1.0])
    ax.set_yscale("log")
    ax.plot(t, _positive(s["eps_g"]), color=LOSS, label=r"$\epsilon_g$", zorder=3)
    ax.axhline(plateau["eps_p"], color=PREDICTED, ls="--", lw=0.9, zorder=2,
               label=fr"$\epsilon^*={plateau['eps_p']:.4g}$ (unspecialised fixed point)")
    ax.set_ylim(1e-6, 3.0)  # room above the curve for the stage names
    ax.set_ylabel(r"generalisation error $\epsilon_g$")
    ax.legend(loc="lower left")
    ax.set_title(f"soft committee machine, erf, {_setting(doc['params'], 'K', 'M', 'asymmetry')}"
                 r", $\eta\to 0$")
    overlaps = (("Q_1_1", Q_COLOUR, "-", r"$Q_{11}=Q_{22}$"),
                ("Q_1_2", Q_COLOUR, "--", r"$Q_{12}$"),
                ("R_1_1", R_COLOUR, "-", r"$R_{11}=R_{22}$"),
                ("R_1_2", R_COLOUR, "--", r"$R_{12}=R_{21}$"))
    for name, colour, ls, label in overlaps:
        bx.plot(t, ra.as_array(s[name]), color=colour, ls=ls, label=label, zorder=3)
    for name, colour in (("Q_1_1", Q_COLOUR), ("R_1_1", R_COLOUR)):
        bx.axhline(plateau["state"][name], color=colour, lw=0.6, ls=":", zorder=2)
    bx.set_ylim(-0.05, 1.1)
    bx.set_ylabel("overlaps")
    bx.legend(loc="upper left", ncols=2, title="dotted: plateau values", title_fontsize=6.0)
    edges = [t[0], ph["T_plateau"], ph["T_escape"], t[-1]]
    for k, axis in enumerate((ax, bx)):
        ra.log_time_axis(axis, t[0], t[-1])
        ra.shade_spans(axis, edges, PHASE_NAMES, labels=k == 0)
        axis.axvline(ph["T_spec"], **_MARK)
    bx.set_xlabel(TIME + r"; dotted: $T_{spec}$")
    return fig


@ra.house_style
def plot_escape(doc: Mapping):
    """``escape``: ``T_escape`` against ``ln(1/a)`` with the line of slope ``1/lambda``
    through the smallest asymmetry (top; no fit), and the local slopes
    ``dT_escape/d ln(1/a)`` approaching ``1/lambda`` from above (bottom).

    Examples
    --------
    >>> fig = plot_escape(_example_escape())
    >>> len(fig.axes)
    2
    """
    x, T = ra.as_array(doc["x"]), ra.as_array(doc["T_escape"])
    slope = doc["slope"]
    fig, (ax, bx) = ra.new_figure(3.6, 2, sharex=True, heights=[1.3, 1.0])
    line = np.linspace(x.min() - 0.5, x.max() + 0.5, 2)
    ax.plot(line, T[-1] + slope * (line - x[-1]), color=PREDICTED, ls="--", lw=0.9, zorder=2,
            label=fr"slope $1/\lambda={slope:.4g}$ through the last point")
    ax.plot(x, T, "o", color=LOSS, mfc="white", mew=0.9, zorder=3,
            label=r"integrated $T_{escape}$")
    ax.set_ylabel(r"$T_{escape}$ ($\epsilon_g = \epsilon^*/2$)")
    ax.legend(loc="upper left")
    ax.set_title(f"erf, {_setting(doc['params'], 'K', 'M')}, " + r"$\eta\to 0$" + "\n"
                 fr"$\lambda={doc['lambda']:.4g}$: the unstable eigenvalue at the plateau")
    local = doc["local"]
    bx.axhline(slope, color=PREDICTED, ls="--", lw=0.9, label=fr"$1/\lambda={slope:.4g}$",
               zorder=2)
    bx.plot(ra.as_array(local["x"]), ra.as_array(local["slope"]), "s-", color=LOSS, mfc="white",
            mew=0.9, lw=0.7, label="local slope between neighbours", zorder=3)
    for xm, value in zip(local["x"], local["slope"], strict=True):
        bx.annotate(f"{value:.4g}", (xm, value), textcoords="offset points", xytext=(0, 4),
                    ha="center", fontsize=5.5)
    low, high = min(slope, *local["slope"]), max(slope, *local["slope"])
    bx.set_ylim(low - 0.25 * (high - low), high + 0.45 * (high - low))
    bx.set_ylabel(r"$dT_{escape}/d\ln(1/a)$")
    bx.legend(loc="upper right")
    bx.set_xlabel(r"$\ln(1/a)$, $a$ the initial asymmetry of $R_{ii}$")
    top = ax.secondary_xaxis("top", functions=(lambda v: v / math.log(10),
                                               lambda v: v * math.log(10)))
    top.set_xlabel(r"$\log_{10}(1/a)$", labelpad=1)
    return fig


@ra.house_style
def plot_eta(doc: Mapping):
    """``eta``: ``eps_g(t)`` at several learning rates with each plateau ``eps_p(eta)``
    dashed and a run above the largest learning rate, which fails (top); the plateau
    height ``eps_p(eta)`` up to the largest learning rate (bottom).

    Examples
    --------
    >>> fig = plot_eta(_example_eta())
    >>> len(fig.axes), fig.axes[0].get_yscale()
    (2, 'log')
    """
    fig, (ax, bx) = ra.new_figure(4.0, 2, heights=[1.3, 1.0])
    ax.set_yscale("log")
    runs, above = doc["runs"], doc["above"]
    t_all = [t for run in (*runs, above) for t in (run["series"]["t"][0], run["series"]["t"][-1])]
    for run, (colour, marker) in zip(runs, ra.SERIES, strict=False):
        t = ra.as_array(run["series"]["t"])
        ax.plot(t, _positive(run["series"]["eps_g"]), color=colour,
                label=fr"$\eta={run['eta']:g}$", zorder=3)
        ax.axhline(run["eps_p"], color=colour, ls="--", lw=0.7, zorder=2)
        bx.plot(run["eta"], run["eps_p"], marker, color=colour, mfc="white", mew=0.9, zorder=4)
    ax.plot(ra.as_array(above["series"]["t"]), _positive(above["series"]["eps_g"]), color="0.45",
            ls=":", lw=1.2, zorder=3,
            label=fr"$\eta={above['eta']:.3g}={above['factor']:g}\,\eta_{{max}}$: fails, "
                  fr"$\epsilon_g\to{above['eps_end']:.3g}$")
    ax.set_ylim(1e-4, 1.0)
    ax.set_ylabel(r"$\epsilon_g$")
    ax.legend(loc="lower left", ncols=2, title=r"dashed: plateau $\epsilon_p(\eta)$",
              title_fontsize=6.0)
    ra.log_time_axis(ax, min(t_all), max(t_all))
    ax.set_xlabel(TIME)
    ax.set_title(f"erf, {_setting(doc['params'], 'K', 'M', 'asymmetry')}")
    curve, eta_max = doc["curve"], doc["eta_max"]
    bx.plot(ra.as_array(curve["eta"]), ra.as_array(curve["eps_p"]), color=PREDICTED, zorder=3,
            label=r"plateau $\epsilon_p(\eta)$ (unspecialised fixed point)")
    bx.axvline(eta_max, color="0.35", ls=":", lw=0.9, zorder=2)
    bx.text(eta_max, 0.12, fr"$\eta_{{max}}={eta_max:.4g}$ " + "\n(the perfect student\n"
            "is unstable above) ", transform=bx.get_xaxis_transform(), ha="right", va="bottom",
            fontsize=6.0)
    bx.set_xlim(-0.03 * eta_max, 1.1 * eta_max)  # the eta = 0 marker whole
    bx.set_ylim(0, None)
    bx.set_xlabel(r"learning rate $\eta$")
    bx.set_ylabel(r"$\epsilon_p$")
    bx.legend(loc="upper left")
    return fig


@ra.house_style
def plot_noise(doc: Mapping):
    """``noise``: ``eps_g(t)`` of ``K`` students learning one noisy teacher, with the
    asymptotic ``eps_g`` of the fixed point each run settles at (dashed); a run that
    settles at none is said so, with its last overlaps.

    Examples
    --------
    >>> fig = plot_noise(_example_noise())
    >>> fig.axes[0].get_yscale()
    'log'
    """
    fig, (ax,) = ra.new_figure(2.8, 1)
    ax.set_yscale("log")
    notes = []
    for run, (colour, _) in zip(doc["runs"], ra.SERIES, strict=False):
        t = ra.as_array(run["series"]["t"])
        ax.plot(t, _positive(run["series"]["eps_g"]), color=colour, label=f"$K={run['K']}$",
                zorder=3)
        point = run["fixed_point"]
        if point is not None:
            ax.axhline(point["eps_g"], color=colour, ls="--", lw=0.7, zorder=2)
            ax.annotate(fr"$\epsilon_\infty={point['eps_g']:.4g}$", (t[0], point["eps_g"]),
                        textcoords="offset points", xytext=(2, 2), fontsize=5.5, color=colour)
        else:
            notes.append(_no_fixed_point(run))
    t = ra.as_array(doc["runs"][0]["series"]["t"])
    ra.log_time_axis(ax, t[0], t[-1])
    ax.set_ylim(1e-3, 1.0)
    ax.set_xlabel(TIME)
    ax.set_ylabel(r"$\epsilon_g$")
    ax.legend(loc="upper right", title=r"dashed: fixed point $\epsilon_\infty$",
              title_fontsize=6.0)
    if notes:
        ax.text(0.02, 0.03, "\n".join(notes), transform=ax.transAxes, ha="left", va="bottom",
                fontsize=5.5, color="0.15")
    ax.set_title(f"erf, {_setting(doc['params'], 'M', 'eta', 'noise')}; "
                 f"$K$ students, {_setting(doc['params'], 'asymmetry')}")
    return fig


def _no_fixed_point(run: Mapping) -> str:
    """What a run that settles at no fixed point does: its largest student pair."""
    final, K = run["final"], run["K"]
    pairs = [(final[f"Q_{i}_{i}"], i, k) for i in range(2, K + 1) for k in range(i + 1, K + 1)]
    text = f"$K={K}$: no fixed point"
    if pairs:
        norm, i, k = max(pairs)
        text += (f": students {i} and {k} cancel\n"
                 fr"($Q_{{{i}{k}}}={final[f'Q_{i}_{k}']:.4g}$, $Q_{{{i}{i}}}={norm:.4g}$ at the "
                 "end, growing)")
    return text


def _example_plateau() -> dict:
    """A small synthetic ``plateau`` document, for the examples."""
    t = np.geomspace(0.01, 500.0, 40)
    eps = 0.3 * np.exp(-t / 5) + 0.0116 * (t < 150)
    series = {"t": t, "eps_g": eps, "Q_1_1": t / (1 + t), "Q_1_2": 0 * t,
              "R_1_1": t / (1 + t), "R_1_2": 0 * t}
    return {"params": {"K": 2, "M": 2, "asymmetry": 1e-6}, "series": series,
            "phases": {"T_plateau": 8.0, "T_escape": 150.0, "T_spec": 160.0},
            "plateau": {"eps_p": 0.0116, "state": {"Q_1_1": 1 / 3, "R_1_1": 0.408}}}


def _example_escape() -> dict:
    return {"params": {"K": 2, "M": 2}, "x": [2.0, 4.0, 6.0], "T_escape": [50.0, 80.0, 110.0],
            "slope": 15.0, "lambda": 1 / 15, "local": {"x": [3.0, 5.0], "slope": [16.0, 15.5]}}


def _example_eta() -> dict:
    run = {"eta": 0.5, "eps_p": 0.0146, "series": _example_plateau()["series"]}
    return {"params": {"K": 2, "M": 2, "asymmetry": 1e-6}, "runs": [run],
            "above": {"eta": 2.5, "factor": 1.1, "series": run["series"], "eps_end": 0.03},
            "eta_max": 2.3,
            "curve": {"eta": [0.0, 2.3], "eps_p": [0.0116, 0.08]}}


def _example_noise() -> dict:
    series = _example_plateau()["series"]
    return {"params": {"M": 1, "eta": 0.1, "noise": 0.5, "asymmetry": 1e-3},
            "runs": [{"K": 1, "series": series, "fixed_point": {"eps_g": 0.0023}},
                     {"K": 3, "series": series, "fixed_point": None,
                      "final": {"Q_2_2": 400.0, "Q_2_3": -400.0, "Q_3_3": 400.0}}]}
