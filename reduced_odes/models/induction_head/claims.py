"""Theorem 5.5 checked numerically: the grids, the measurements, and the claims.

Each setting of a grid is integrated once (through the resumable sweep engine
of :mod:`reduced_odes._sweep`) and measured; the measurements are then held
against the predictions of :mod:`.numerics`.  Every claim
row carries its prediction, the measurement (the worst case over the grid's
groups), the error, the tolerance and the verdict.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from reduced_odes.author import Claim, ParameterError, informative, load_tolerances, worst

from .params import ModelParams

__all__ = ["GRIDS", "TOLERANCES", "claims", "evaluate_claims", "grid_settings", "measure_setting",
           "verify_metadata"]

#: Grids over (L, sigma, alpha, w*) for each closure.  ``quick`` runs in well under a
#: minute on two cores; ``default`` is the README's main job; ``full`` spans the claimed
#: ranges densely (L from 50 to 1e5, sigma from 1e-2 to 1e-12).
GRIDS: dict[str, dict[str, list]] = {
    "quick": {"alpha": [0.5], "wstar": [0.3], "L": [50, 200, 1000, 100000],
              "sigma": [1e-2, 1e-4, 1e-8, 1e-12]},
    "default": {"alpha": [0.2, 0.5, 0.8], "wstar": [0.1, 0.3, 0.45],
                "L": [50, 200, 1000, 10000, 100000], "sigma": [1e-2, 1e-4, 1e-6, 1e-8, 1e-12]},
    "full": {"alpha": [0.2, 0.5, 0.8], "wstar": [0.1, 0.3, 0.45],
             "L": [50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000],
             "sigma": [10.0**-k for k in range(2, 13)]},
}

#: Tolerances of the claims of Theorem 5.5 (spec section 6); their reasons are in
#: ``tolerances.toml`` (the verdict files list the tolerances alone).
TOLERANCES = {name: value for name, (value, _) in load_tolerances(__package__).items()}
#: Theorem 5.5 assumes small sigma and long L, i.e. a plateau much longer than phase I.
#: The separation claim L_IH(T_I) >= 0.99 plateau is held where the *predicted*
#: T_em is at least this multiple of the predicted T_I; settings outside are
#: reported in an informative row.
REGIME_SEPARATION = 10.0
#: Fits of T_em in ln(1/sigma) use sigma <= this, where w_kq(0) << w* (asymptotic regime).
_SLOPE_SIGMA_MAX = 1e-4
#: Exponent fits in L use L >= this: below it the O(1/L) corrections bend the log-log line.
_EXPONENT_L_MIN = 200
#: Phase-IV fit window for L_IH relative to the plateau level.
_DECAY_WINDOW = (1e-10, 1e-6)


def grid_settings(grid: str | Mapping, closures: Sequence[str]) -> tuple[list[dict], list[dict]]:
    """Settings of ``grid`` for ``closures``, and the skipped ones with their reasons.

    Examples
    --------
    >>> run, skipped = grid_settings("quick", ["linear"])
    >>> len(run), skipped
    (16, [])
    """
    if isinstance(grid, str):
        if grid not in GRIDS:
            raise ParameterError(f"grid={grid!r}; allowed: {', '.join(GRIDS)}")
        grid = GRIDS[grid]
    settings, skipped = [], []
    for closure, alpha, wstar, length, sigma in itertools.product(
            closures, grid["alpha"], grid["wstar"], grid["L"], grid["sigma"]):
        setting = {"model": "induction_head", "closure": closure, "alpha": alpha,
                   "wstar": wstar, "L": int(length), "sigma": float(sigma)}
        try:
            ModelParams(L=length, alpha=alpha, wstar=wstar, sigma=sigma).check_closure(closure)
        except ParameterError as exc:
            skipped.append({**setting, "reason": str(exc)})
            continue
        settings.append(setting)
    return settings, skipped


def _decay_rate(traj, plateau: float) -> float:
    """Exponential rate of L_IH fitted where L_IH/plateau lies in ``_DECAY_WINDOW``.

    ``plateau`` is L_IH at t = 0, an upper bound of the plateau level that does
    not depend on the phases being separated.
    """
    start = traj.phases["T_III"]
    times = np.geomspace(start, traj.t[-1], 4000)
    l_ih = traj.observables_at(times)["L_IH"]
    ratio = l_ih / plateau
    inside = (ratio >= _DECAY_WINDOW[0]) & (ratio <= _DECAY_WINDOW[1])
    if inside.sum() < 10:
        return math.nan
    return -_fit_slope(times[inside], np.log(l_ih[inside]))


def _plateau_rate(traj, wstar: float) -> float:
    """Slope of ln w_kq between w_kq = 1e-4 w* and 1e-2 w* (nan if the run starts above)."""
    log_w = traj.series["log_w_kq"]
    lo, hi = math.log(1e-4 * wstar), math.log(1e-2 * wstar)
    if log_w[0] > lo:
        return math.nan
    t_lo, t_hi = np.interp([lo, hi], log_w, traj.t)
    return float((hi - lo) / (t_hi - t_lo))


def measure_setting(setting: Mapping) -> dict:
    """Integrate one setting and take every measurement the claims need.

    A module-level function so that process pools can run it.

    Examples
    --------
    >>> m = measure_setting({"closure": "linear", "alpha": 0.5, "wstar": 0.3, "L": 200,
    ...                      "sigma": 1e-4})
    >>> round(m["t_L_G4_end"], 3)
    0.25
    """
    from reduced_odes import solve

    params = ModelParams(L=setting["L"], alpha=setting["alpha"], wstar=setting["wstar"],
                         sigma=setting["sigma"])
    traj = solve(params, setting["closure"])
    phases = traj.phases
    final = traj.final
    l_ih_at_t1 = traj.observables_at(phases["T_I"])["L_IH"]
    return {
        "phases": phases,
        "t_end": final["t"],
        "t_L_G4_end": final["t"] * final["L_G4"],
        "L_IH_at_T_I": float(l_ih_at_t1[0]),
        "L_IH_decay_rate": _decay_rate(traj, float(traj.series["L_IH"][0])),
        "plateau_rate": _plateau_rate(traj, params.wstar),
        "final": final,
        "solver": traj.stats.as_dict(),
    }


def _group(records: Iterable[dict], keys: Sequence[str]) -> dict[tuple, list[dict]]:
    groups = defaultdict(list)
    for r in records:
        groups[tuple(r["setting"][k] for k in keys)].append(r)
    return groups


def _fit_slope(x, y) -> float:
    """The least-squares slope, its sums exact (``math.fsum``): the same bits under every
    BLAS kernel, so that the verdict table does not depend on the machine."""
    x, y = [float(v) for v in x], [float(v) for v in y]
    mean_x, mean_y = math.fsum(x) / len(x), math.fsum(y) / len(y)
    return (math.fsum((a - mean_x) * (b - mean_y) for a, b in zip(x, y, strict=True))
            / math.fsum((a - mean_x) ** 2 for a in x))


def evaluate_claims(records: list[dict], closure: str) -> list[Claim]:
    """The claims of one closure from its measured records."""
    from .numerics import derive_predictions

    pred = derive_predictions(closure)
    mine = [r for r in records if r["setting"]["closure"] == closure]
    for r in mine:
        s = r["setting"]
        r["predicted"] = pred.evaluate(s["alpha"], s["wstar"], s["L"], s["sigma"])
    claims = []

    slope_rows, exponent_rows, spread_rows, window_rows = [], [], [], []
    for (alpha, wstar, length), rs in _group(mine, ("alpha", "wstar", "L")).items():
        asym = [r for r in rs if r["setting"]["sigma"] <= _SLOPE_SIGMA_MAX]
        if len(asym) >= 2:
            slope = _fit_slope([-math.log(r["setting"]["sigma"]) for r in asym],
                               [r["result"]["phases"]["T_em"] for r in asym])
            expected = asym[0]["predicted"]["T_em_slope"]
            slope_rows.append((expected, slope, abs(slope / expected - 1),
                               f"alpha={alpha}, w*={wstar}, L={length}"))
        windows = [r["result"]["phases"]["T_III"] - r["result"]["phases"]["T_II"] for r in rs]
        if len(windows) >= 2:
            spread = (max(windows) - min(windows)) / float(np.mean(windows))
            spread_rows.append((0.0, spread, spread, f"alpha={alpha}, w*={wstar}, L={length}"))
    for (alpha, wstar, sigma), rs in _group(mine, ("alpha", "wstar", "sigma")).items():
        big = sorted((r for r in rs if r["setting"]["L"] >= _EXPONENT_L_MIN),
                     key=lambda r: r["setting"]["L"])
        if len(big) >= 2:
            logs = [math.log(r["setting"]["L"]) for r in big]
            t_em = _fit_slope(logs, [math.log(r["result"]["phases"]["T_em"]) for r in big])
            window = _fit_slope(logs, [math.log(r["result"]["phases"]["T_III"]
                                                - r["result"]["phases"]["T_II"]) for r in big])
            where = f"alpha={alpha}, w*={wstar}, sigma={sigma:g}"
            exponent_rows.append((1.0, t_em, abs(t_em - 1), where))
            window_rows.append((1.0, window, abs(window - 1), where))
    claims += [
        worst("T_em slope in ln(1/sigma)", slope_rows,
               TOLERANCES["T_em slope in ln(1/sigma)"], variant=closure),
        worst("T_em exponent in L", exponent_rows, TOLERANCES["T_em exponent in L"],
               variant=closure),
        worst("window spread across sigma", spread_rows,
               TOLERANCES["window spread across sigma"], variant=closure),
        worst("window exponent in L", window_rows, TOLERANCES["window exponent in L"],
               variant=closure),
    ]

    def per_run(name, predicted_key, measured_fn, tolerance_key=None):
        rows = []
        for r in mine:
            predicted = r["predicted"][predicted_key]
            measured = measured_fn(r)
            s = r["setting"]
            rows.append((predicted, measured, abs(measured / predicted - 1),
                         f"alpha={s['alpha']}, w*={s['wstar']}, L={s['L']}, "
                         f"sigma={s['sigma']:g}"))
        return worst(name, rows, TOLERANCES[tolerance_key or name], variant=closure)

    claims.append(per_run("t*L_G4 at end of run", "tail_t_L_G4",
                          lambda r: r["result"]["t_L_G4_end"]))
    claims.append(per_run("L_IH decay rate (phase IV)", "L_IH_decay_rate",
                          lambda r: r["result"]["L_IH_decay_rate"]))
    claims.append(per_run("T_I vs leading order", "T_I_leading",
                          lambda r: r["result"]["phases"]["T_I"]))
    corrected = per_run("T_I vs leading + escape", "T_I_corrected",
                        lambda r: r["result"]["phases"]["T_I"], "T_I vs leading order")
    claims.append(informative(corrected))
    claims.append(per_run("plateau rate lambda", "lambda", lambda r: r["result"]["plateau_rate"]))

    variation_rows, em_rows, plateau_rows = [], [], []
    for (alpha, wstar), rs in _group(mine, ("alpha", "wstar")).items():
        t1 = [r["result"]["phases"]["T_I"] for r in rs]
        tem = [r["result"]["phases"]["T_em"] for r in rs]
        where = f"alpha={alpha}, w*={wstar}, {len(rs)} settings"
        variation_rows.append((0.0, max(t1) / min(t1) - 1, max(t1) / min(t1) - 1, where))
        em_rows.append((100.0, max(tem) / min(tem), -max(tem) / min(tem), where))
    outside_rows = []
    for r in mine:
        ratio = r["result"]["L_IH_at_T_I"] / r["predicted"]["plateau_L_IH"]
        s = r["setting"]
        rows = plateau_rows if _in_regime(r["predicted"]) else outside_rows
        rows.append((1.0, ratio, -ratio, f"alpha={s['alpha']}, w*={s['wstar']}, "
                                         f"L={s['L']}, sigma={s['sigma']:g}"))
    claims.append(worst("T_I variation across L, sigma", variation_rows,
                         TOLERANCES["T_I variation across L, sigma"], variant=closure))
    em = worst("T_em variation across L, sigma", em_rows, 0.0, variant=closure)
    claims.append(Claim(em.name, em.predicted, em.measured, math.nan,
                        TOLERANCES["T_em variation across L, sigma"],
                        em.measured >= TOLERANCES["T_em variation across L, sigma"],
                        em.detail.replace("worst", "smallest")))
    for rows, name, info in ((plateau_rows, "L_IH(T_I) / plateau", False),
                             (outside_rows, "L_IH(T_I) / plateau, outside regime", True)):
        if not rows and info:
            continue
        low = worst(name, rows, 0.0, variant=closure)
        claims.append(Claim(low.name, 1.0, low.measured, 1.0 - low.measured,
                            TOLERANCES["L_IH(T_I) / plateau"],
                            low.measured >= TOLERANCES["L_IH(T_I) / plateau"],
                            low.detail.replace("worst", "smallest"), info))
    return claims


def claims(records: list[dict], closures: Sequence[str]) -> list[Claim]:
    """The claims of every closure in ``closures``, in that order."""
    return [claim for closure in closures for claim in evaluate_claims(records, closure)]


def verify_metadata() -> dict:
    """The grids, the tolerances and the regime separation, for the verdict file.

    Examples
    --------
    >>> sorted(verify_metadata())
    ['grid_values', 'regime_separation', 'tolerances']
    """
    return {"grid_values": GRIDS, "tolerances": TOLERANCES,
            "regime_separation": REGIME_SEPARATION}


def _in_regime(predicted: Mapping[str, float]) -> bool:
    """The theorem's regime of separated phases, judged from predictions alone."""
    return predicted["T_em_leading"] >= REGIME_SEPARATION * predicted["T_I_leading"]
