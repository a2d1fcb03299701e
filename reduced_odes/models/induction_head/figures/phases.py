"""Figure 1, ``phases``: the paper's Figure 2 redone."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from reduced_odes import author as ra

from . import _style as style


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

    s, ph, p = style.series_of(record), style.phases_of(record), record["params"]
    t_end = float(s["t"][-1])
    keep = s["t"] >= t_min * 0.999
    t = s["t"][keep]
    with matplotlib.rc_context(ra.STYLE):
        fig, (ax, bx) = ra.new_figure(4.3, 2, sharex=True, heights=[1.15, 1.0])
        ra.log_time_axis(ax, t_min, t_end)
        ax.set_yscale("log")
        ax.plot(t, s["L_G4"][keep], color=style.G4, label=fr"{style.LG4} (4-gram)", zorder=3)
        l_ih = s["L_IH"][keep]
        ax.plot(t, np.where(l_ih > 0, l_ih, np.nan), color=style.IH,
                label=fr"{style.LIH} (induction head)", zorder=3)
        top = float(np.nanmax(np.r_[s["L_G4"][keep], l_ih]))
        plateau = float(record.get("predictions", {}).get("plateau_L_IH", math.nan))
        bottom = 10 ** math.floor(math.log10(min(float(s["L_G4"][-1]),
                                                 plateau if math.isfinite(plateau) else top)
                                             * 1e-2))
        ax.set_ylim(bottom, top * 10 ** (0.3 * math.log10(top / bottom)))
        if not style.shade_phases(ax, ph, t_min, t_end, labels=True):
            ax.text(0.02, 0.32, r"phase times out of order ($T_{\mathrm{II}}<T_{\mathrm{I}}$):"
                    "\nthe induction head emerges\nbefore the 4-gram is learned",
                    transform=ax.transAxes, fontsize=6, va="bottom", color="0.1", zorder=5)
        ax.axvline(ph["T_em"], ymax=0.62, color="0.3", lw=0.7, ls=":", zorder=2)
        ax.text(ph["T_em"], 0.04, r" $T_{\mathrm{em}}$", transform=ax.get_xaxis_transform(),
                ha="right", va="bottom", fontsize=6, color="0.2", rotation=90)
        ax.set_ylabel("partial loss (dimensionless)")
        ax.legend(loc="lower left", bbox_to_anchor=(0.0, 0.06))
        ax.set_title("(a) partial losses", loc="left")

        style.shade_phases(bx, ph, t_min, t_end, labels=False)
        bx.axvline(ph["T_em"], color="0.3", lw=0.7, ls=":", zorder=2)
        bx.plot(t, s["w_v1"][keep], color=style.G4, label=r"$w_{v1}$", zorder=3)
        bx.plot(t, s["w_v2"][keep], color=style.IH, label=r"$w_{v2}$", zorder=3)
        bx.plot(t, s["w_kq"][keep] / p["wstar"], color=style.IH, ls="--",
                label=r"$w_{kq}/w^*$", zorder=3)
        bx.set_ylim(-0.03, 1.2)
        bx.set_ylabel("value weights, $w_{kq}/w^*$ (dimensionless)")
        bx.set_xlabel(style.TIME)
        px = bx.twinx()
        px.plot(t, s["p"][keep], color=style.G4, ls=(0, (1.2, 1.2)), lw=1.2, zorder=3)
        px.set_ylabel("ALiBi slope $p$ (dimensionless)", color=style.G4)
        px.tick_params(axis="y", colors=style.G4)
        px.set_ylim(0, float(np.nanmax(s["p"])) * 1.08)
        handles = bx.get_legend_handles_labels()[0] + [
            Line2D([], [], color=style.G4, ls=(0, (1.2, 1.2)), lw=1.2, label="$p$ (right axis)")]
        bx.legend(handles=handles, loc="upper left", ncols=2, columnspacing=0.8,
                  handlelength=1.8)
        bx.set_title("(b) parameters", loc="left")
        fig.suptitle(f"Four phases of training, {record['closure']} closure\n"
                     + style.params_text(p))
    style.meta(fig, "phases", record["closure"], p,
               f"T_I={ph['T_I']:.6g}, T_II={ph['T_II']:.6g}, T_em={ph['T_em']:.6g}, "
               f"T_III={ph['T_III']:.6g}", record.get("versions"), record.get("solver"))
    return fig
