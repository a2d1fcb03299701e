"""The four figures, each drawn from its data document only (no integration here).

Colours follow the mechanism: consistent samples and the neurons' margin ``A``
blue, hard samples and the attention margin ``theta`` vermillion, the whole
loss black; Algorithm 1 is dashed against the joint flow.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from reduced_odes import author as ra

from .data import SNAPSHOTS

__all__ = ["STAGE_NAMES", "plot_algorithm1", "plot_scaling", "plot_separation", "plot_stages"]

CONSISTENT, HARD, ALL = ra.OKABE_ITO["blue"], ra.OKABE_ITO["vermillion"], ra.OKABE_ITO["black"]
PREDICTED = ra.OKABE_ITO["bluish_green"]
LABEL_COLOUR = {1: ra.OKABE_ITO["blue"], -1: ra.OKABE_ITO["orange"]}
STAGE_NAMES = ("1: neurons", "2: attention", "3: convergence")
_MARK = {"lw": 0.7, "ls": ":", "color": "0.35", "zorder": 2}




def _setting(params: Mapping) -> str:
    return (fr"$\mu={params['mu']:g}$, $\kappa={params['kappa']:g}$, "
            fr"$\sigma={ra.sci(params['sigma'])}$, $\sigma_{{att}}={ra.sci(params['sigma_att'])}$")


def _stage_axes(axes, doc: Mapping) -> None:
    """Log time over the run, stages 1-3 shaded (``[t0, T1, T2, T3]``, then converged)."""
    t, ph = doc["series"]["t"], doc["phases"]
    edges = [t[0], ph["T1"], ph["T2"], t[-1]]
    for k, ax in enumerate(axes):
        ra.log_time_axis(ax, t[0], t[-1])
        ra.shade_spans(ax, edges, STAGE_NAMES, labels=k == 0)
        ax.axvline(ph["T3"], **_MARK)
    axes[-1].set_xlabel(ra.TIME_LABEL)


@ra.house_style
def plot_stages(doc: Mapping):
    """``stages``: the loss on all, consistent and hard samples (top), ``A`` and
    ``theta = tanh(ell/2)`` (bottom); stages shaded, ``T3`` dotted.

    Examples
    --------
    >>> fig = plot_stages(_example())
    >>> len(fig.axes), fig.axes[0].get_yscale()
    (2, 'log')
    """
    s = {k: ra.as_array(v) for k, v in doc["series"].items()}
    fig, (ax, bx) = ra.new_figure(3.8, 2, sharex=True, heights=[1.1, 1.0])
    ax.set_yscale("log")
    ax.plot(s["t"], s["loss"], color=ALL, label="all samples", zorder=3)
    ax.plot(s["t"], s["loss_consistent"], color=CONSISTENT, label=r"consistent ($s_1=s_2$)",
            zorder=3)
    ax.plot(s["t"], s["loss_hard"], color=HARD, label=r"hard ($s_1\neq s_2$)", zorder=3)
    ax.set_ylim(1e-6, 5.0)  # room above the losses for the stage names
    ax.set_ylabel("loss")
    ax.legend(loc="lower left")
    ax.set_title(_setting(doc["params"]) + ", square loss")
    bx.plot(s["t"], s["A"], color=CONSISTENT, label=r"$A$ (margin, consistent)", zorder=3)
    bx.plot(s["t"], s["theta"], color=HARD, label=r"$\theta=\tanh(\ell/2)$ (attention)", zorder=3)
    bx.set_ylim(0, 1.3)  # A overshoots to max A*(theta) = (1 + sqrt2)/2 in stage 2
    bx.set_ylabel("margin")
    bx.legend(loc="center left")
    _stage_axes((ax, bx), doc)
    return fig


def _snapshot(ax, snap: Mapping, name: str, mu: float) -> None:
    """The value-plane features ``z`` of the eight configurations, coloured by label;
    hard samples filled, consistent hollow; the readout's decision line dashed."""
    ax.plot([-mu, mu], [mu, -mu], color="0.5", lw=0.6, ls="--", zorder=1)
    for point in snap["points"]:
        # Identifier 1: large circle, 2: small square on top, so coinciding features
        # of opposite labels (non-separable) both show.
        colour = LABEL_COLOUR[point["y"]]
        first = point["k"] == 1
        ax.plot(*point["z"], "o" if first else "s", color=colour,
                mfc=colour if point["hard"] else "white", ms=5.5 if first else 2.8, mew=0.8,
                zorder=3 if first else 4)
    label = "t = 0" if name == "T0" else f"${name[0]}_{name[1]}$"
    theta = float(f"{snap['theta']:.2g}")
    shown = ra.sci(theta) if theta < 1e-2 else f"{theta:g}"
    ax.set_title(f"{label}\n" + fr"$\theta={shown}$", fontsize=6.0)
    ax.set_xlim(-1.15 * mu, 1.15 * mu)
    ax.set_ylim(-1.15 * mu, 1.15 * mu)
    ax.set_aspect("equal")
    ax.set_xticks([-mu, 0, mu])
    ax.set_yticks([-mu, 0, mu])
    ax.tick_params(labelsize=5.5)
    ax.set_xlabel(r"$z_1$", labelpad=0)


@ra.house_style
def plot_separation(doc: Mapping):
    """``attention_separation``: the head-averaged features of the eight configurations at
    t = 0, T1, T2, T3 (top; hard samples of opposite labels start on one point) and the
    attention-feature margin ``theta(t)``, integrated and from ``T(ell)`` (bottom).

    Examples
    --------
    >>> fig = plot_separation(_example())
    >>> len(fig.axes)
    5
    """
    mu = doc["params"]["mu"]
    fig, axes = ra.new_figure(3.6, 2, ncols=4, heights=[1.0, 1.2])
    for ax, name in zip(axes[0], SNAPSHOTS, strict=True):
        _snapshot(ax, doc["snapshots"][name], name, mu)
    axes[0][0].set_ylabel(r"$z_2$", labelpad=0)
    grid = axes[1][0].get_gridspec()
    for ax in axes[1]:
        ax.remove()
    bx = fig.add_subplot(grid[1, :])
    s, pred = doc["series"], doc["predicted"]
    bx.plot(ra.as_array(s["t"]), ra.as_array(s["theta"]), color=HARD, label="integrated", zorder=3)
    bx.plot(ra.as_array(pred["t"]), ra.as_array(pred["theta"]), color=PREDICTED, ls="--",
            label=r"$\tanh(T^{-1}(t)/2)$ (slow manifold)", zorder=4)
    for name in SNAPSHOTS[1:]:
        bx.axvline(doc["phases"][name], **_MARK)
    bx.set_yscale("log")
    bx.set_ylim(1e-7, 2.0)
    bx.set_ylabel(r"$\theta$ (hard-sample margin / $A$)")
    bx.legend(loc="upper left")
    ra.log_time_axis(bx, s["t"][0], s["t"][-1])
    bx.set_xlabel(ra.TIME_LABEL + r"; dotted: $T_1, T_2, T_3$")
    fig.suptitle("head-averaged features $z$ of the 8 configurations\n"
                 "filled: hard samples; blue: $y=+1$, orange: $y=-1$\n"
                 "circle/square: identifier 1/2; dashed: readout boundary", fontsize=6.0)
    return fig


def _scaling_panel(ax, sweep: Mapping, xlabel: str, slope_text: str) -> None:
    ax.plot(ra.as_array(sweep["line_x"]), ra.as_array(sweep["line_T2"]), color=PREDICTED, lw=0.9,
            label=r"$T(\ln 3)$, slope " + slope_text + f" = {sweep['slope']:.4g}", zorder=2)
    ax.plot(ra.as_array(sweep["x"]), ra.as_array(sweep["T2"]), "o", color=ALL, mfc="white", mew=0.9,
            label=r"integrated $T_2$", zorder=3)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(r"$T_2$")
    ax.legend(loc="upper left")


@ra.house_style
def plot_scaling(doc: Mapping):
    """``scaling``: ``T2`` against ``ln(1/sigma_att)`` and ``ln(1/sigma)``; markers are
    integrated runs, lines the closed form with its predicted slope (no fit).

    Examples
    --------
    >>> fig = plot_scaling(_example_scaling())
    >>> len(fig.axes)
    2
    """
    fig, (ax, bx) = ra.new_figure(4.2, 2)
    _scaling_panel(ax, doc["sigma_att"], r"$\ln(1/\sigma_{att})$", r"$8/\kappa$")
    ax.set_title(_setting(doc["params"]) + "; one varied per panel", fontsize=6.0)
    _scaling_panel(bx, doc["sigma"], r"$\ln(1/\sigma)$", r"$4\sqrt{2}/\mu$")
    return fig


@ra.house_style
def plot_algorithm1(doc: Mapping):
    """``algorithm1``: the joint flow (solid) against Algorithm 1 (dashed): the loss with the
    square-loss floor ``L*(theta_II)``, and ``A``, ``theta``; Algorithm 1's stage ends dotted.

    Examples
    --------
    >>> fig = plot_algorithm1({"params": {"mu": 1, "kappa": 0.5, "sigma": 0.01, "sigma_att": 0.001},
    ...     "joint": _example(), "algorithm1": {**_example(), "phases": {"T_AI": 20.0,
    ...     "T_thetaII": 200.0}}, "floor": 1e-3})
    >>> len(fig.axes)
    2
    """
    fig, (ax, bx) = ra.new_figure(3.8, 2, sharex=True, heights=[1.1, 1.0])
    ax.set_yscale("log")
    for key, ls, name in (("joint", "-", "joint flow"), ("algorithm1", "--", "Algorithm 1")):
        s = {k: ra.as_array(v) for k, v in doc[key]["series"].items()}
        ax.plot(s["t"], s["loss"], color=ALL, ls=ls, label=name, zorder=3)
        bx.plot(s["t"], s["A"], color=CONSISTENT, ls=ls, label=f"$A$, {name}", zorder=3)
        bx.plot(s["t"], s["theta"], color=HARD, ls=ls, label=fr"$\theta$, {name}", zorder=3)
    ax.axhline(doc["floor"], color=PREDICTED, lw=0.8, label=r"floor $L^*(\theta_{II})$", zorder=2)
    ax.set_ylabel("loss")
    ax.legend(loc="lower left")
    ax.set_title(_setting(doc["params"]) + ", square loss")
    bx.set_ylim(0, 1.3)  # A overshoots to max A*(theta) = (1 + sqrt2)/2 in stage 2
    bx.set_ylabel("margin")
    bx.legend(loc="center left", ncols=2)
    t = doc["joint"]["series"]["t"]
    for axis in (ax, bx):
        ra.log_time_axis(axis, t[0], t[-1])
        for name in ("T_AI", "T_thetaII"):
            axis.axvline(doc["algorithm1"]["phases"][name], **_MARK)
    bx.set_xlabel(ra.TIME_LABEL + "; dotted: Algorithm 1 stage ends")
    return fig


def _example() -> dict:
    """A small synthetic trajectory document, for the examples."""
    t = np.geomspace(0.1, 1000.0, 40)
    A, theta = 1 - np.exp(-t / 30), 1 - np.exp(-t / 300)
    loss = 0.25 * (1 - A) ** 2 + 0.25 * (1 - A * theta) ** 2
    return {"params": {"mu": 1.0, "kappa": 0.5, "sigma": 0.01, "sigma_att": 0.001},
            "series": {"t": t, "A": A, "theta": theta, "loss": loss,
                       "loss_consistent": 0.5 * (1 - A) ** 2,
                       "loss_hard": 0.5 * (1 - A * theta) ** 2},
            "phases": {"T1": 20.0, "T2": 200.0, "T3": 400.0},
            "snapshots": {k: {"theta": 0.5,
                              "points": [{"k": 1, "y": 1, "hard": True, "z": [0.7, -0.3]}]}
                          for k in ("T0", "T1", "T2", "T3")},
            "predicted": {"t": t[20:], "theta": theta[20:]}}


def _example_scaling() -> dict:
    sweep = {"x": [2.0, 4.0], "T2": [10.0, 40.0], "line_x": [2.0, 4.0], "line_T2": [10.0, 40.0],
             "slope": 15.0}
    return {"params": {"mu": 1.0, "kappa": 0.5, "sigma": 0.01, "sigma_att": 0.001},
            "sigma_att": sweep, "sigma": sweep}
