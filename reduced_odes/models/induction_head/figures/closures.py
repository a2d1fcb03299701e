"""Figure 4, ``closures``: linear vs meanfield, with exact-softmax SGD when available."""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping

import numpy as np

from reduced_odes import author as ra

from . import _style as style

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
    with matplotlib.rc_context(ra.STYLE):
        fig, (ax, bx) = ra.new_figure(4.2, 2, sharex=True)
        t_hi, lows = 0.0, []
        for closure, record in records.items():
            s, ph = style.series_of(record), style.phases_of(record)
            t_hi = max(t_hi, 1.3 * ph["T_III"]) if math.isfinite(ph["T_III"]) else \
                max(t_hi, float(s["t"][-1]))
            line_style = _CLOSURE_STYLE.get(closure, {"ls": "-."})
            l_ih = np.where(s["L_IH"] > 0, s["L_IH"], np.nan)
            ax.plot(s["t"], l_ih, color=style.IH, label=f"{closure} ODE", zorder=3, **line_style)
            plateau = record.get("predictions", {}).get("plateau_L_IH")
            if plateau is None:  # the level where emergence starts
                plateau = float(np.interp(ph["T_II"], s["t"], s["L_IH"]))
            lows.append(float(plateau))
            bx.plot(s["t"], s["w_kq"] / params["wstar"], color=style.IH, zorder=3,
                    label=f"{closure} ODE", **line_style)
            for a in (ax, bx):
                a.axvline(ph["T_em"], color=style.IH, lw=0.5, ls=line_style["ls"], alpha=0.6,
                          zorder=1)
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
        l_ihs = [style.series_of(r)["L_IH"] for r in records.values()]
        top = max(float(np.nanmax(np.where(l_ih > 0, l_ih, np.nan))) for l_ih in l_ihs)
        ax.set_ylim(min(lows) * 1e-3, top * 40)
        ax.set_xlim(0, t_hi)
        ax.set_ylabel(fr"{style.LIH} (dimensionless)")
        # One legend (the line styles are the same in both panels), where the curves are not.
        handles, labels = bx.get_legend_handles_labels()
        ax.legend(handles, labels, loc="upper right")
        ax.set_title(r"(a) induction-head loss $L_{\mathrm{IH}}$ (thin lines: $T_{\mathrm{em}}$)",
                     loc="left")
        bx.axhline(1.0, color="0.6", lw=0.6, zorder=1)
        bx.set_ylim(-0.03, 1.12)
        bx.set_xlabel(style.TIME)
        bx.set_ylabel(r"$w_{kq}/w^*$ (dimensionless)")
        bx.set_title(r"(b) query-key weight $w_{kq}/w^*$", loc="left")
        title = "Softmax closures compared\n" + style.params_text(params)
        if overlay:
            title = "Softmax closures vs exact-softmax SGD\n" + style.params_text(params)
        fig.suptitle(title)
    first = next(iter(records.values()))
    curves = "; ".join(c["label"] for c in overlay["curves"]) if overlay else "none"
    style.meta(fig, "closures", ",".join(records), params, f"overlay: {curves}",
               first.get("versions"), first.get("solver"))
    return fig
