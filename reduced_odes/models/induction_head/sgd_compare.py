"""Real-attention SGD against the reduced ODEs: simulator validation and closure comparison.

Two questions, one function each:

* :func:`validate_simulator` -- is the Monte-Carlo SGD simulator right?  With the
  paper's ``"linear"`` attention the reduced ODE is exact in expectation, so
  SGD must converge to it as ``eta -> 0`` and ``batch -> inf``.
* :func:`compare_closures` -- how good are the closures?  Exact-softmax SGD (the
  ground truth) against the ``"linear"`` and ``"meanfield"`` ODEs: phase times,
  emergence window, end point, and what layer-wise vs joint training changes.

Results are plain JSON-serialisable dicts (non-finite floats become ``None``, or
the strings ``"inf"``/``"-inf"``); :func:`format_markdown` renders them.
:func:`sgd_overlay` is the exact-softmax curve of the ``closures`` figure.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from reduced_odes.author import process_pool, t_interval, versions

from ._common import cell, json_safe, ratio, reduced_run
from .sgd import SGDConfig, simulate_sgd

__all__ = ["compare_closures", "format_markdown", "sgd_overlay", "validate_simulator"]

PHASES = ("T_I", "T_II", "T_em", "T_III")
STATE = ("w_v1", "p", "w_v2", "w_kq")


# --------------------------------------------------------------------------- #
# Small helpers
# --------------------------------------------------------------------------- #
def _map(fn: Callable, items: Sequence, workers: int) -> list:
    """``[fn(i) for i in items]``, in a process pool when ``workers > 1``."""
    if workers <= 1 or len(items) <= 1:
        return [fn(i) for i in items]
    with process_pool(workers, len(items)) as pool:
        return list(pool.map(fn, items))



def _ode_state(traj, t: np.ndarray) -> np.ndarray:
    """ODE state ``(w_v1, p, w_v2, w_kq)`` at times ``t`` (rows), from the dense output."""
    y = np.asarray(traj.at(t), dtype=float).T
    y[:, 3] = np.exp(y[:, 3])  # the ODE integrates ln w_kq
    return y


def _sgd_task(cfg: SGDConfig) -> dict[str, Any]:
    """One SGD run, summarised (top level, so it can run in a worker process)."""
    start = time.perf_counter()
    traj = simulate_sgd(cfg)
    t, state = traj.reduced_state()
    return {
        "phases": traj.phases(),
        "t": t,
        "state": state,
        "p1_final": float(traj.params[-1, 0]),
        "wall": time.perf_counter() - start,
    }


def _record_every(t_max: float, eta: float, n_records: int) -> int:
    return max(1, int(round(t_max / (n_records * eta))))


# --------------------------------------------------------------------------- #
# Simulator validation (linear attention: the ODE is exact in expectation)
# --------------------------------------------------------------------------- #
def validate_simulator(*, L: int = 10, alpha: float = 0.5, wstar: float = 0.2,
                       sigma: float = 0.1,
                       settings: Sequence[tuple[float, int]] = ((1.0, 16), (0.3, 64), (0.1, 256)),
                       n_seeds: int = 8, t_factor: float = 1.3, n_records: int = 200,
                       confidence: float = 0.95, workers: int = 2,
                       closure: str = "linear") -> dict[str, Any]:
    """Show that ``"linear"``-attention SGD converges to the ``"linear"`` ODE.

    Under ``"linear"`` attention the reduced ODE is the exact expected gradient
    flow, so online SGD must approach it as ``eta -> 0`` (Euler error ``O(eta)``)
    and ``batch -> inf`` (noise ``O(sqrt(eta / batch))``).  For each
    ``(eta, batch)`` in ``settings`` (coarse to fine) and each seed, the distance
    is the supremum over the recorded times ``t <= t_factor * T_III(ODE)`` of
    ``max(|dw_v1|, |dp|, |dw_v2|, |dw_kq| / w*)``; it is averaged over seeds.
    The seed-averaged ``T_em`` gets a Student-t interval.

    Defaults and why:

    * ``sigma = 0.1``: the gradient noise on ``w_k`` (``w_q``) is proportional to
      ``w_q`` (``w_k``), and the plateau escape takes ``(1/lambda) ln(w*/(2 sigma^2))``;
      at ``sigma = 0.1`` the plateau is short and the relative noise accumulated
      on it is small, so SGD noise does not dominate the saddle escape.
    * ``wstar = 0.2``: the per-sample ``"linear"`` gradient contains
      ``exp(2 w_kq x_L x_{s-1})`` squared, whose mean is finite only for
      ``|4 w_kq| < 1``; with ``w* = 0.3`` the gradient noise near convergence has
      infinite variance (heavy-tailed jumps).
    * ``L = 10``: the whole run (``T_III ~ 510``) stays cheap.

    Parameters
    ----------
    L, alpha, wstar, sigma : model and initialisation (spec sections 1-4).
    settings : sequence of (eta, batch)
        Learning rates and batch sizes, ordered coarse to fine.
    n_seeds : int
        Seeds per setting (``>= 2``).
    t_factor : float
        Compare up to ``t_factor * T_III`` of the ODE (into phase IV).
    n_records : int
        Approximate number of recorded points per run.
    confidence : float
        Coverage of the ``T_em`` interval.
    workers : int
        Processes used for the runs.
    closure : {"linear", "meanfield"}
        The ODE compared against.  Only ``"linear"`` is the right reference;
        ``"meanfield"`` is a negative control (the check must then fail).

    Returns
    -------
    dict
        ``setup``, ``ode`` (phases, ``t_max``), ``settings`` (per setting: ``eta``,
        ``batch``, ``distance`` and ``distance_by_coordinate`` (seed means),
        ``T_em`` and the other phases as :func:`t_interval` dicts, wall time),
        ``distance_ratios`` (coarse/fine between neighbours), and the verdicts
        ``distance_shrinks`` and ``T_em_covered`` (the finest interval contains
        the ODE ``T_em``).

    Examples
    --------
    >>> res = validate_simulator(L=6, sigma=0.3, settings=((0.5, 8), (0.1, 128)),
    ...                          n_seeds=2, t_factor=0.5, workers=1)
    >>> res["distance_shrinks"]
    True
    """
    if n_seeds < 2:
        raise ValueError(f"n_seeds={n_seeds!r} is invalid: at least 2 seeds are needed")
    if len(settings) < 2:
        raise ValueError(f"settings={settings!r} is invalid: give at least two (eta, batch)")
    if closure not in ("linear", "meanfield"):
        raise ValueError(f"closure={closure!r} is invalid: use 'linear' or 'meanfield'")
    ode = reduced_run(L, alpha, wstar, sigma, closure)
    if isinstance(ode, str):
        raise RuntimeError(f"the {closure} ODE failed: {ode}")
    t_max = t_factor * ode.phases["T_III"]
    configs = [
        SGDConfig(L=L, alpha=alpha, wstar=wstar, sigma=sigma, attention="linear",
                  mode="stage2", batch=batch, eta=eta, t_max=t_max,
                  record_every=_record_every(t_max, eta, n_records), seed=seed)
        for eta, batch in settings for seed in range(n_seeds)
    ]
    runs = _map(_sgd_task, configs, workers)
    rows = []
    for k, (eta, batch) in enumerate(settings):
        block = runs[k * n_seeds:(k + 1) * n_seeds]
        per_coord = []
        for run in block:
            diff = np.abs(run["state"] - _ode_state(ode, run["t"]))
            diff[:, 3] /= abs(wstar)
            per_coord.append(diff.max(axis=0))
        per_coord = np.array(per_coord)
        dist = per_coord.max(axis=1)
        rows.append({
            "eta": eta, "batch": batch, "n_seeds": n_seeds,
            "distance": float(dist.mean()),
            "distance_interval": t_interval(dist, confidence),
            "distance_by_coordinate": dict(zip(("w_v1", "p", "w_v2", "w_kq/wstar"),
                                               per_coord.mean(axis=0).tolist(), strict=True)),
            "phases": {ph: t_interval([r["phases"][ph] for r in block], confidence)
                       for ph in PHASES},
            "wall_time_s": float(sum(r["wall"] for r in block)),
        })
        rows[-1]["T_em"] = rows[-1]["phases"]["T_em"]
    d = [r["distance"] for r in rows]
    fine = rows[-1]["T_em"]
    result = {
        "kind": "validation",
        "setup": {"L": L, "alpha": alpha, "wstar": wstar, "sigma": sigma, "attention": "linear",
                  "closure": closure, "confidence": confidence, "n_seeds": n_seeds},
        "ode": {"phases": dict(ode.phases), "t_max": t_max},
        "settings": rows,
        "distance_ratios": [d[i] / d[i + 1] for i in range(len(d) - 1)],
        "distance_shrinks": all(d[i + 1] < d[i] for i in range(len(d) - 1)),
        "T_em_covered": bool(fine["n_missing"] == 0
                             and fine["lo"] <= ode.phases["T_em"] <= fine["hi"]),
    }
    return json_safe(result)


# --------------------------------------------------------------------------- #
# Closure comparison against exact-softmax SGD
# --------------------------------------------------------------------------- #
QUICK_GRID = {"L": (20, 50), "sigma": (1e-1, 1e-2), "wstar": (0.3,)}
FULL_GRID = {"L": (20, 50, 100, 200), "sigma": (1e-1, 1e-2, 1e-3), "wstar": (0.1, 0.3)}
QUICK_MODES = ((20, 1e-1, 0.3),)
FULL_MODES = ((20, 1e-1, 0.3), (50, 1e-2, 0.3), (50, 1e-1, 0.1))


def _ode_summary(traj) -> dict[str, Any]:
    if isinstance(traj, str):
        return {"error": traj}
    ph = dict(traj.phases)
    return {"phases": ph, "window": ph["T_III"] - ph["T_II"]}


def compare_closures(quick: bool = True, *, alpha: float = 0.5, n_seeds: int | None = None,
                     eta: float | None = None, batch: int | None = None,
                     grid: dict[str, Sequence] | None = None,
                     modes_at: Sequence[tuple[int, float, float]] | None = None,
                     stage1_time: float = 1000.0, t_factor: float = 1.6,
                     confidence: float = 0.95, workers: int = 2) -> dict[str, Any]:
    """Exact-softmax SGD against the ``"linear"`` and ``"meanfield"`` ODEs.

    For every ``(L, sigma, wstar)`` of the grid: ``T_I``, ``T_em`` and the
    emergence window ``T_III - T_II`` of exact-softmax Stage-II SGD (mean and
    Student-t interval over seeds) next to both closures' ODE values, with the
    ratios ODE / SGD; and the end point of exact training (seed means of
    ``w_v1, p, w_v2, w_kq``) next to the fixed point ``(alpha, inf, 1-alpha, w*)``.
    The SGD runs last ``t_factor`` times the latest ODE phase time
    (``max(T_I, T_III)`` over both closures).

    For each ``(L, sigma, wstar)`` in ``modes_at`` the same SGD is also run with
    the real two-layer model, ``"layerwise"`` (Stage I on ``p1`` for
    ``stage1_time``, then Stage II with ``p1`` frozen) and ``"joint"`` (all six
    parameters from ``t = 0``, ``p1(0) = 0``), and compared with ``"stage2"``
    (``p1 = +inf``): do the four phases survive (all reached, ``T_I < T_em`` and
    ``T_II < T_em < T_III``, in every seed), and how ``T_em`` shifts.

    Parameters
    ----------
    quick : bool
        ``True``: ``L in {20, 50}``, ``sigma in {1e-1, 1e-2}``, ``w* = 0.3``, 4 seeds,
        ``eta = 0.5``, ``batch = 256``, modes at ``(20, 0.1, 0.3)`` -- under 2
        minutes on 2 cores.  ``False``: the full grid ``L in {20, 50, 100, 200}``,
        ``sigma in {1e-1, 1e-2, 1e-3}``, ``w* in {0.1, 0.3}``, 5 seeds,
        ``eta = 0.5``, ``batch = 512`` (hours).
    alpha : float
        Target mixing weight.
    n_seeds, eta, batch, grid, modes_at :
        Override the preset.  ``grid`` maps ``"L"``, ``"sigma"``, ``"wstar"`` to
        sequences; ``modes_at`` lists ``(L, sigma, wstar)``.
    stage1_time : float
        Stage-I duration of ``"layerwise"``.  Stage I drives ``p1`` up only
        logarithmically (``e^{2 p1} ~ 4 alpha^2 t``); 1000 gives ``p1 ~ 3.5``,
        i.e. a previous-token weight ``~0.97`` (200 gives ``p1 ~ 2.6``).
    t_factor : float
        SGD horizon in units of the latest ODE phase time.
    confidence : float
        Coverage of the intervals.
    workers : int
        Processes used for the SGD runs.

    Returns
    -------
    dict
        ``setup``, ``rows`` (one record per grid point) and ``modes`` (one
        record per ``modes_at`` point); see :func:`format_markdown`.

    Examples
    --------
    >>> res = compare_closures(grid={"L": (8,), "sigma": (0.1,), "wstar": (0.3,)},
    ...                        modes_at=(), n_seeds=2, eta=0.5, batch=64, workers=1)
    >>> row = res["rows"][0]
    >>> sorted(row["ratio_T_em"])
    ['linear', 'meanfield']
    """
    preset = ({"n_seeds": 4, "eta": 0.5, "batch": 256, "grid": QUICK_GRID, "modes": QUICK_MODES}
              if quick else
              {"n_seeds": 5, "eta": 0.5, "batch": 512, "grid": FULL_GRID, "modes": FULL_MODES})
    n_seeds = preset["n_seeds"] if n_seeds is None else n_seeds
    eta = preset["eta"] if eta is None else eta
    batch = preset["batch"] if batch is None else batch
    grid = preset["grid"] if grid is None else grid
    modes_at = preset["modes"] if modes_at is None else modes_at
    if n_seeds < 2:
        raise ValueError(f"n_seeds={n_seeds!r} is invalid: at least 2 seeds are needed")
    points = [(int(L), float(s), float(w)) for L in grid["L"] for s in grid["sigma"]
              for w in grid["wstar"]]
    mode_points = [(int(L), float(s), float(w)) for L, s, w in modes_at]

    def horizon(L, s, w):
        ends = [max(traj.phases["T_I"], traj.phases["T_III"]) for c in ("linear", "meanfield")
                if not isinstance(traj := reduced_run(L, alpha, w, s, c), str)]
        return t_factor * max(ends) if ends else None

    def cfg(L, s, w, mode, seed, t_max):
        return SGDConfig(L=L, alpha=alpha, wstar=w, sigma=s, attention="exact", mode=mode,
                         batch=batch, eta=eta, t_max=t_max,
                         record_every=_record_every(t_max, eta, 400), seed=seed,
                         stage1_time=stage1_time)

    jobs: list[tuple[tuple, str, SGDConfig]] = []
    for pt in dict.fromkeys(points + mode_points):
        t_max = horizon(*pt)
        if t_max is None:
            continue
        modes = ("stage2", "layerwise", "joint") if pt in mode_points else ("stage2",)
        jobs += [(pt, m, cfg(*pt, m, seed, t_max)) for m in modes for seed in range(n_seeds)]
    start = time.perf_counter()
    outs = _map(_sgd_task, [j[2] for j in jobs], workers)
    wall = time.perf_counter() - start
    runs: dict[tuple, list] = {}
    for (pt, mode, _), out in zip(jobs, outs, strict=True):
        runs.setdefault((pt, mode), []).append(out)

    rows = [_closure_row(pt, alpha, runs.get((pt, "stage2"), []), confidence)
            for pt in points]
    modes = [_modes_row(pt, {m: runs.get((pt, m), []) for m in ("stage2", "layerwise", "joint")},
                        confidence) for pt in mode_points]
    return json_safe({
        "kind": "comparison",
        "setup": {"alpha": alpha, "n_seeds": n_seeds, "eta": eta, "batch": batch,
                  "attention": "exact", "t_factor": t_factor, "stage1_time": stage1_time,
                  "confidence": confidence, "quick": quick, "wall_time_s": wall,
                  "cpu_time_s": float(sum(o["wall"] for o in outs))},
        "rows": rows,
        "modes": modes,
    })


def _closure_row(pt: tuple, alpha: float, block: list, confidence: float) -> dict[str, Any]:
    L, s, w = pt
    row: dict[str, Any] = {"L": L, "sigma": s, "wstar": w, "alpha": alpha}
    odes = {c: _ode_summary(reduced_run(L, alpha, w, s, c)) for c in ("linear", "meanfield")}
    row["ode"] = odes
    if not block:
        row["error"] = "no SGD run: both ODEs failed, so no horizon"
        return row
    ph = {k: [r["phases"][k] for r in block] for k in PHASES}
    window = [b - a for a, b in zip(ph["T_II"], ph["T_III"], strict=True)]
    sgd = {"T_I": t_interval(ph["T_I"], confidence), "T_em": t_interval(ph["T_em"], confidence),
           "window": t_interval(window, confidence),
           "T_II": t_interval(ph["T_II"], confidence),
           "T_III": t_interval(ph["T_III"], confidence)}
    row["sgd_exact"] = sgd
    finals = np.array([r["state"][-1] for r in block])
    row["final"] = {"t": float(block[0]["t"][-1]),
                    "sgd_mean": dict(zip(STATE, finals.mean(axis=0).tolist(), strict=True)),
                    "target": {"w_v1": alpha, "p": math.inf, "w_v2": 1 - alpha, "w_kq": w}}
    for key, name in (("T_em", "T_em"), ("T_I", "T_I"), ("window", "window")):
        row[f"ratio_{key}"] = {
            c: (ratio(o["phases"][name] if name != "window" else o["window"], sgd[key]["mean"])
                if "phases" in o else math.nan)
            for c, o in odes.items()}
    return row


def _modes_row(pt: tuple, blocks: dict[str, list], confidence: float) -> dict[str, Any]:
    L, s, w = pt
    row: dict[str, Any] = {"L": L, "sigma": s, "wstar": w}
    base = None
    for mode, block in blocks.items():
        if not block:
            row[mode] = {"error": "not run"}
            continue
        phases = [r["phases"] for r in block]
        ok = [all(math.isfinite(p[k]) for k in PHASES)
              and p["T_I"] < p["T_em"] and p["T_II"] < p["T_em"] < p["T_III"] for p in phases]
        finals = np.array([r["state"][-1] for r in block])
        rec = {
            "phases": {k: t_interval([p[k] for p in phases], confidence) for k in PHASES},
            "four_phases": bool(all(ok)),
            "four_phases_seeds": int(sum(ok)),
            "final_mean": dict(zip(STATE, finals.mean(axis=0).tolist(), strict=True)),
            "p1_final_mean": float(np.mean([r["p1_final"] for r in block])),
        }
        tem = [p["T_em"] for p in phases]
        if mode == "stage2":
            base = tem
        elif base is not None:
            rec["T_em_shift"] = t_interval(np.array(tem) - np.array(base), confidence)
            rec["T_em_shift"]["note"] = "paired by seed: mode minus stage2"
        row[mode] = rec
    return row


# --------------------------------------------------------------------------- #
# Markdown
# --------------------------------------------------------------------------- #
def _ci(d: dict | None, digits: int = 4) -> str:
    if not d or d.get("mean") is None:
        return "—"
    txt = cell(d["mean"], digits)
    if d.get("lo") is not None:
        txt += f" [{cell(d['lo'], digits)}, {cell(d['hi'], digits)}]"
    if d.get("n_missing"):
        txt += f" ({d['n_missing']} not reached)"
    return txt


def format_markdown(result: dict[str, Any]) -> str:
    """Render a :func:`validate_simulator` or :func:`compare_closures` result as Markdown.

    Parameters
    ----------
    result : dict
        The (JSON-safe) dict returned by either function.

    Returns
    -------
    str

    Examples
    --------
    >>> md = format_markdown({"kind": "comparison", "setup": {"alpha": 0.5}, "rows": [],
    ...                       "modes": []})
    >>> md.splitlines()[0]
    '### Exact-softmax SGD vs the reduced ODEs'
    """
    if result.get("kind") == "validation":
        return _md_validation(result)
    if result.get("kind") == "comparison":
        return _md_comparison(result)
    raise ValueError(f"result kind {result.get('kind')!r} is invalid: expected "
                     "'validation' or 'comparison'")


def _md_validation(res: dict) -> str:
    su, ode = res["setup"], res["ode"]
    lines: list[str] = [
        f"### Simulator validation: linear-attention SGD vs the {su['closure']} ODE",
        "",
        f"L={su['L']}, alpha={su['alpha']}, w*={su['wstar']}, sigma={su['sigma']}, "
        f"{su['n_seeds']} seeds; ODE T_em = {cell(ode['phases']['T_em'])}, "
        f"compared up to t = {cell(ode['t_max'])}.",
        "",
        "| eta | batch | distance (mean [95% CI]) | w_v1 | p | w_v2 | w_kq/w* "
        "| T_em (mean [95% CI]) | CPU s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in res["settings"]:
        c = r["distance_by_coordinate"]
        lines.append(
            f"| {cell(r['eta'])} | {r['batch']} | {_ci(r['distance_interval'], 3)} "
            f"| {cell(c['w_v1'], 3)} | {cell(c['p'], 3)} | {cell(c['w_v2'], 3)} "
            f"| {cell(c['w_kq/wstar'], 3)} | {_ci(r['T_em'], 5)} | {cell(r['wall_time_s'], 3)} |")
    lines += ["",
              f"Distance ratios (coarse/fine): "
              f"{', '.join(cell(x, 3) for x in res['distance_ratios'])}; "
              f"shrinks: {cell(res['distance_shrinks'])}; finest T_em interval contains the "
              f"ODE T_em: {cell(res['T_em_covered'])}."]
    return "\n".join(lines)


def _md_comparison(res: dict) -> str:
    su = res["setup"]
    lines = [
        "### Exact-softmax SGD vs the reduced ODEs",
        "",
        f"alpha={su.get('alpha')}, eta={su.get('eta')}, batch={su.get('batch')}, "
        f"{su.get('n_seeds')} seeds; intervals are 95% Student-t over seeds; "
        "ratios are ODE / SGD mean.",
        "",
        "| L | sigma | w* | SGD T_I | SGD T_em | lin T_em | mf T_em | lin/SGD | mf/SGD "
        "| SGD window | lin window | mf window | lin/SGD | mf/SGD |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in res["rows"]:
        sgd = r.get("sgd_exact", {})
        o = r["ode"]

        def ode_val(c, key, o=o):
            if "phases" not in o[c]:
                return "error"
            return cell(o[c]["window"] if key == "window" else o[c]["phases"][key])

        lines.append(
            f"| {r['L']} | {cell(r['sigma'])} | {cell(r['wstar'])} | {_ci(sgd.get('T_I'))} "
            f"| {_ci(sgd.get('T_em'))} | {ode_val('linear', 'T_em')} "
            f"| {ode_val('meanfield', 'T_em')} "
            f"| {cell(r.get('ratio_T_em', {}).get('linear'), 3)} "
            f"| {cell(r.get('ratio_T_em', {}).get('meanfield'), 3)} "
            f"| {_ci(sgd.get('window'))} | {ode_val('linear', 'window')} "
            f"| {ode_val('meanfield', 'window')} "
            f"| {cell(r.get('ratio_window', {}).get('linear'), 3)} "
            f"| {cell(r.get('ratio_window', {}).get('meanfield'), 3)} |")
    lines += ["", "End point of exact training (seed means) vs the fixed point "
              "(alpha, ∞, 1-alpha, w*):", "",
              "| L | sigma | w* | t | w_v1 | p | w_v2 | w_kq |",
              "|---|---|---|---|---|---|---|---|"]
    for r in res["rows"]:
        if "final" not in r:
            continue
        m, tg = r["final"]["sgd_mean"], r["final"]["target"]
        lines.append(f"| {r['L']} | {cell(r['sigma'])} | {cell(r['wstar'])} "
                     f"| {cell(r['final']['t'])} "
                     + " ".join(f"| {cell(m[k])} ({cell(tg[k])})" for k in STATE) + " |")
    errors = [(r["L"], r["sigma"], r["wstar"], c, o[c]["error"]) for r in res["rows"]
              for o in [r["ode"]] for c in o if "error" in o[c]]
    if errors:
        lines += ["", "ODE failures:", ""]
        lines += [f"- L={L}, sigma={cell(s)}, w*={cell(w)}, {c}: {e}" for L, s, w, c, e in errors]
    if res.get("modes"):
        lines += ["", "Training protocol (exact softmax): stage2 = previous-token layer 1 "
                  "(p1 = ∞); layerwise = Stage I then Stage II; joint = all six at once.", "",
                  "| L | sigma | w* | mode | T_I | T_II | T_em | T_III | four phases "
                  "| T_em shift vs stage2 | p1 end | w_kq end |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in res["modes"]:
            for mode in ("stage2", "layerwise", "joint"):
                rec = r.get(mode, {})
                if "phases" not in rec:
                    continue
                ph = rec["phases"]
                lines.append(
                    f"| {r['L']} | {cell(r['sigma'])} | {cell(r['wstar'])} | {mode} "
                    + " ".join(f"| {_ci(ph[k])}" for k in PHASES)
                    + f" | {cell(rec['four_phases'])} ({rec['four_phases_seeds']} seeds) "
                    f"| {_ci(rec.get('T_em_shift')) if mode != 'stage2' else '—'} "
                    f"| {cell(rec['p1_final_mean'])} | {cell(rec['final_mean']['w_kq'])} |")
    return "\n".join(lines)


# --------------------------------------------------------------------------- #
# Overlay data for the "closures" figure
# --------------------------------------------------------------------------- #
#: The overlay's setting: long enough sequences to separate the closures, short
#: enough that exact-softmax SGD runs in about a minute (`compare --quick` stays under 2 min).
OVERLAY_SETTING = {"L": 50, "alpha": 0.5, "wstar": 0.3, "sigma": 1e-2}


def sgd_overlay(n_seeds: int = 4, eta: float = 0.5, batch: int = 256,
                n_records: int = 400, workers: int = 2) -> dict[str, Any]:
    """Seed-averaged exact-softmax SGD trajectory for the closures figure.

    Returns a JSON-ready dict: ``params``, ``label``, ``t``, the seed means of
    ``w_kq`` and ``L_IH`` (batch estimates), ``interval`` (pointwise min/max over
    seeds of ``w_kq``) and the SGD settings.
    """
    s = OVERLAY_SETTING
    horizon = max(_ode_summary(reduced_run(s["L"], s["alpha"], s["wstar"], s["sigma"], c))
                  ["phases"]["T_III"] for c in ("linear", "meanfield"))
    t_max = 1.6 * horizon
    configs = [SGDConfig(L=s["L"], alpha=s["alpha"], wstar=s["wstar"], sigma=s["sigma"],
                         attention="exact", batch=batch, eta=eta, t_max=t_max, seed=seed,
                         record_every=_record_every(t_max, eta, n_records))
               for seed in range(n_seeds)]
    runs = _map(simulate_sgd, configs, workers)
    w_kq = np.array([r.w_kq for r in runs])
    loss_ih = np.array([r.loss_ih for r in runs])
    return json_safe({
        "params": s, "label": f"exact softmax SGD ({n_seeds} seeds, eta={eta}, B={batch})",
        "t": runs[0].t, "w_kq": w_kq.mean(0), "L_IH": loss_ih.mean(0),
        "interval": {"w_kq_lo": w_kq.min(0), "w_kq_hi": w_kq.max(0)},
        "sgd": {"eta": eta, "batch": batch, "seeds": n_seeds, "attention": "exact"},
        "versions": versions(),
    })


