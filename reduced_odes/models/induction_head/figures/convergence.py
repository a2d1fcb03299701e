"""Figure 3, ``convergence``: the phase-IV tails against their predicted rates."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from reduced_odes import author as ra

from . import _style as style


def plot_convergence(record: Mapping, *, t_min: float = 1.0):
    """Phase IV: ``t L_G4(t) -> 1/4`` and ``ln L_IH(t)`` with the predicted slope ``-2 mu``.

    The predicted line in panel (b) has slope ``-2 mu`` (no fit) and passes
    through the measured ``ln L_IH`` where ``L_IH`` = 1e-8 times its plateau
    value (the middle, in log, of the window verify fits the decay rate in).
    Values below 1e-13 times the plateau are round-off and are not drawn.
    """
    import matplotlib

    s, ph = style.series_of(record), style.phases_of(record)
    p, pred = record["params"], record["predictions"]
    tail = record["phase_IV"]
    with matplotlib.rc_context(ra.STYLE):
        fig, (ax, bx) = ra.new_figure(4.4, 2)
        keep = s["t"] >= t_min
        t = s["t"][keep]
        end_value = float(s["t"][-1] * s["L_G4"][-1])
        ax.plot(t, t * s["L_G4"][keep], color=style.G4, zorder=3,
                label=fr"$t\,${style.LG4}$(t)$ (measured; {end_value:.4f} at the end)")
        quarter = float(pred["tail_t_L_G4"])
        ax.axhline(quarter, color="0.25", ls="--", lw=0.9, zorder=2,
                   label=fr"predicted limit {quarter:g}")
        ra.log_time_axis(ax, t_min, float(t[-1]))
        ymax = float(np.nanmax(t * s["L_G4"][keep]))
        ax.set_ylim(0, max(ymax, quarter) * 1.25)
        for name, value in (("T_I", ph["T_I"]), ("T_III", ph["T_III"])):
            if math.isfinite(value):
                ax.axvline(value, color="0.55", lw=0.6, ls=":", zorder=1)
                ax.text(value, 0.03, " $T_{\\mathrm{" + name[2:] + "}}$",
                        transform=ax.get_xaxis_transform(), rotation=90, fontsize=6,
                        color="0.3", ha="right", va="bottom")
        ax.set_xlabel(style.TIME)
        ax.set_ylabel(fr"$t\,${style.LG4} (dimensionless)")
        ax.legend(loc="upper right")
        ax.set_title(r"(a) 4-gram: algebraic tail $L_{\mathrm{G4}}\approx 1/(4t)$", loc="left")

        t4 = np.asarray(tail["t"], dtype=float)
        l_ih = np.array([np.nan if v is None else v for v in tail["L_IH"]], dtype=float)
        plateau = float(pred["plateau_L_IH"])
        ok = l_ih > style.NOISE_FLOOR * plateau
        # Past the first value at round-off level the curve is noise: stop there.
        if not ok.all():
            ok[int(np.argmin(ok)):] = False
        bx.plot(t4[ok], np.log(l_ih[ok]), color=style.IH, lw=2.4, alpha=0.55, solid_capstyle="butt",
                label=fr"$\ln${style.LIH}$(t)$ (measured)", zorder=2)
        rate = float(pred["L_IH_decay_rate"])
        level = math.log(style.ANCHOR_RATIO * plateau)
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
        bx.set_xlabel(style.TIME + r", phase IV ($t\geq T_{\mathrm{III}}$)")
        bx.set_ylabel(fr"$\ln${style.LIH} ({style.LIH} dimensionless)")
        bx.legend(loc="upper right")
        bx.set_title(r"(b) induction head: exponential decay $e^{-2\mu t}$", loc="left")
        fig.suptitle(f"Convergence (phase IV), {record['closure']} closure\n"
                     + style.params_text(p))
    style.meta(fig, "convergence", record["closure"], p,
               f"mu={pred['mu']:.6g}, tail t*L_G4={quarter:g}", record.get("versions"),
               record.get("solver"))
    return fig
