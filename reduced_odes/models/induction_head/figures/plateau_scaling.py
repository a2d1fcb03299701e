"""Figure 2, ``plateau_scaling``: T_em against ln(1/sigma) and L, with the predictions."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from reduced_odes import author as ra
from reduced_odes.author import ParameterError

from . import _style as style


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
    with matplotlib.rc_context(ra.STYLE):
        fig, (ax, bx, cx) = ra.new_figure(6.2, 3, heights=[1.25, 1.0, 0.85])
        markers = {}
        for k, length in enumerate(measured_l):
            colour, marker = ra.SERIES[k % len(ra.SERIES)]
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
                    ms=4.0, zorder=3, label=fr"$\sigma={ra.sci(s)}$")
        ra.log_x(bx, min(measured_l) / 1.6, max(measured_l) * 1.6)
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
    style.meta(fig, "plateau_scaling", closure, None,
               f"alpha={alpha:g}, wstar={wstar:g}, L in {measured_l}, "
               f"sigma in {[float(f'{s:g}') for s in measured_s]}", versions, solver)
    return fig
