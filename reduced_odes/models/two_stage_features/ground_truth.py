"""Ground truth (spec 7.8): plain SGD on the unreduced model against the reduced ODE.

SGD runs from the aligned start at two sigmas, from the perturbed start and
from the fully random start, over several seeds (in worker processes).  Each
stage time is a mean over seeds with a 95% Student-t interval; a claim passes
when the whole interval lies within its tolerance of the ODE.  The random
start is outside the reduced ODE: its shifts are reported as measured, and only
the order of the stages and the plateau are checked.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from reduced_odes.author import load_tolerances, process_pool, t_interval, versions, write_json

from .params import TwoStageParams

__all__ = ["SETUP", "TOLERANCES", "compare", "format_compare", "run_compare", "run_seed"]

#: Spec 7.8: the small dimensions of the SGD check (other parameters at their defaults).
SETUP = {"d_P": 2, "d_Q": 4, "N": 16}
SIGMAS = (1e-2, 1e-3)
#: Seeds per start: quick keeps `compare --quick` under 2 minutes on two cores.
SEEDS = {True: 3, False: 10}
#: Run length, in units of the ODE's T_Q@0.99: past saturation; the random start is late.
LENGTH = {"aligned": 1.05, "perturbed": 1.05, "random": 1.25}
#: name -> (tolerance, reason) (``tolerances.toml``, table ``compare``).
TOLERANCES = load_tolerances(__package__, "compare")
STAGES = ("T_P", "T_Q", "T_cross")


def _params(sigma: float) -> TwoStageParams:
    return TwoStageParams(sigma=sigma, **SETUP)


def _ode(sigma: float, times: np.ndarray | None = None) -> dict:
    """The ODE's phases at ``sigma`` and, at ``times``, its ``a``, ``b``, ``v``."""
    from reduced_odes import solve

    traj = solve(_params(sigma))
    out = {"phases": {k: float(v) for k, v in traj.phases.items()}}
    if times is not None:
        observed = traj.observables_at(times)
        v = traj.at(times)[traj.system.coordinate_names.index("v")]
        out.update(a=observed["eig_P"], b=observed["eig_Q"], v=v)
    return out


def run_seed(job: tuple[str, float, int, float]) -> dict:
    """One SGD run ``(init, sigma, seed, t_end)``: stage times and max deviations from the ODE.

    Examples
    --------
    >>> r = run_seed(("aligned", 1e-2, 0, 2.0))  # doctest: +SKIP
    >>> sorted(r["times"])  # doctest: +SKIP
    ['T_P', 'T_P@0.9', 'T_Q', 'T_Q@0.1', 'T_cross']
    """
    from .numerics import targets
    from .sgd import stage_times, train

    init, sigma, seed, t_end = job
    p = _params(sigma)
    run = train(p, init, seed, t_end)
    ode = _ode(sigma, run.t)
    deviation = {k: float(np.max(np.abs(getattr(run, k) - ode[k])) / np.ptp(ode[k]))
                 for k in ("a", "b", "v")}
    if init == "random":
        deviation["b"] = float(np.max(np.abs(np.abs(run.b) - ode["b"])) / np.ptp(ode["b"]))
    return {"init": init, "sigma": sigma, "seed": seed,
            "times": stage_times(p, run, *targets(p)), "deviation": deviation,
            "final_b_sign": float(np.sign(run.b[-1]))}


def _jobs(quick: bool, ode: dict) -> list[tuple]:
    starts = [("aligned", s) for s in SIGMAS] + [("perturbed", SIGMAS[0]), ("random", SIGMAS[0])]
    jobs = [(init, sigma, seed, LENGTH[init] * ode[sigma]["phases"]["T_Q@0.99"])
            for init, sigma in starts for seed in range(SEEDS[quick])]
    # Longest runs first, so that the workers finish together.
    return sorted(jobs, key=lambda job: -job[3])


def _row(name: str, kind: str, predicted: float, values: Sequence[float],
         relative: bool = True) -> dict:
    """A claim over the seeds: the interval's farthest end from ``predicted`` (relative), or,
    for ``relative=False`` (deviations, already relative), the worst seed."""
    stats = t_interval(values)
    if relative:
        ends = [stats["lo"], stats["hi"]] if math.isfinite(stats["lo"]) else [stats["mean"]]
        error = max(abs(e - predicted) for e in ends) / abs(predicted)
    else:
        error = max(abs(v - predicted) for v in values)
    tolerance = TOLERANCES[kind][0]
    return {"name": name, "predicted": predicted, **stats, "error": error, "tolerance": tolerance,
            "passed": bool(error <= tolerance)}


def _by(runs: list[dict], init: str, sigma: float) -> list[dict]:
    return [r for r in runs if r["init"] == init and r["sigma"] == sigma]


def _stage_rows(runs: list[dict], ode: dict) -> list[dict]:
    rows = []
    for init, sigma in [("aligned", s) for s in SIGMAS] + [("perturbed", SIGMAS[0])]:
        group, phases = _by(runs, init, sigma), ode[sigma]["phases"]
        rows += [_row(f"{key}, {init}, sigma={sigma:g}", "stage time", phases[key],
                      [r["times"][key] for r in group]) for key in STAGES]
        rows += [_row(f"max |d{k}|/range (worst seed), {init}, sigma={sigma:g}", "trajectory",
                      0.0, [r["deviation"][k] for r in group], relative=False)
                 for k in ("a", "b", "v")]
    return rows


def _shift_row(runs: list[dict], slope: float) -> dict:
    """``T_Q(1e-3) - T_Q(1e-2)`` per seed against the 6.3 slope times the change of ``ln(1/σ²)``."""
    high, low = (sorted(_by(runs, "aligned", s), key=lambda r: r["seed"]) for s in SIGMAS)
    shifts = [b["times"]["T_Q"] - a["times"]["T_Q"] for a, b in zip(high, low, strict=True)]
    span = 2 * math.log(SIGMAS[0] / SIGMAS[1])
    return _row(f"T_Q(sigma={SIGMAS[1]:g}) - T_Q(sigma={SIGMAS[0]:g}) vs slope 6.3",
                "sigma shift of T_Q", slope * span, shifts)


def _random_start(runs: list[dict], ode: dict) -> dict:
    """Random start: shifts against the aligned ODE as measured; order and plateau checked."""
    group, phases = _by(runs, "random", SIGMAS[0]), ode[SIGMAS[0]]["phases"]
    shifts = {key: t_interval([r["times"][key] / phases[key] - 1 for r in group]) for key in STAGES}
    ordered = all(r["times"]["T_P"] < r["times"]["T_Q"] for r in group)
    plateau = all(r["times"]["T_P@0.9"] < r["times"]["T_Q@0.1"] for r in group)
    return {"relative_shift": shifts, "stages_in_order": ordered, "plateau": plateau,
            "seeds": len(group), "negative_final_b": sum(r["final_b_sign"] < 0 for r in group),
            "passed": bool(ordered and plateau)}


def compare(quick: bool = True, workers: int | None = None, executor=None) -> dict:
    """SGD against the ODE (spec 7.8): stage times, trajectories, sigma shift, random start.

    The SGD runs go to ``executor`` (e.g. a dask cluster's) when given, else to a
    local pool of ``workers`` processes.

    Examples
    --------
    >>> result = compare(quick=True)  # doctest: +SKIP
    >>> result["passed"]  # doctest: +SKIP
    True
    """
    from .numerics import predict

    ode = {s: _ode(s) for s in SIGMAS}
    jobs = _jobs(quick, ode)
    if executor is not None:
        runs = list(executor.map(run_seed, jobs))
    else:
        with process_pool(workers, len(jobs)) as pool:
            runs = list(pool.map(run_seed, jobs))
    rows = _stage_rows(runs, ode) + [_shift_row(runs, predict(_params(SIGMAS[1]))["slope_T_Q"])]
    random_start = _random_start(runs, ode)
    tolerances = {k: {"tolerance": t, "reason": why} for k, (t, why) in TOLERANCES.items()}
    return {"setup": {**SETUP, "sigmas": list(SIGMAS), "seeds": SEEDS[quick], "quick": quick,
                      "tolerances": tolerances},
            "ode": {f"{s:g}": ode[s]["phases"] for s in SIGMAS}, "rows": rows,
            "random_start": random_start, "runs": runs,
            "passed": bool(all(r["passed"] for r in rows) and random_start["passed"])}


def run_compare(*, quick: bool, out: str | Path, executor=None, workers=None) -> dict:
    """The ``compare`` command: :func:`compare`, written to
    ``<out>/compare-two_stage_features-<quick|full>.json`` with the versions.

    Examples
    --------
    >>> result = run_compare(quick=True, out="results")  # doctest: +SKIP
    """
    result = compare(quick=quick, workers=workers, executor=executor)
    write_json(Path(out) / f"compare-two_stage_features-{'quick' if quick else 'full'}.json",
               {**result, "versions": versions()})
    return result


def _fmt(x: float) -> str:
    return "nan" if x is None or not math.isfinite(x) else f"{x:.4g}"


def format_compare(result: dict) -> str:
    """The comparison as a Markdown table, then the random start as measured.

    Examples
    --------
    >>> row = {"name": "T_P", "predicted": 1.0, "mean": 1.01, "lo": 1.0, "hi": 1.02, "n": 3,
    ...        "error": 0.02, "tolerance": 0.02, "passed": True}
    >>> rs = {"relative_shift": {}, "stages_in_order": True, "plateau": True, "seeds": 3,
    ...       "negative_final_b": 1, "passed": True}
    >>> print(format_compare({"rows": [row], "random_start": rs, "passed": True}).splitlines()[2])
    | T_P | 1 | 1.01 | [1, 1.02] | 3 | 0.02 | 0.02 | PASS |
    """
    lines = ["| claim | ODE | SGD mean | 95% interval | seeds | error | tolerance | verdict |",
             "|---|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        lines.append(f"| {r['name']} | {_fmt(r['predicted'])} | {_fmt(r['mean'])} | "
                     f"[{_fmt(r['lo'])}, {_fmt(r['hi'])}] | {r['n']} | {_fmt(r['error'])} | "
                     f"{_fmt(r['tolerance'])} | {'PASS' if r['passed'] else 'FAIL'} |")
    rs = result["random_start"]
    lines += ["", f"Random start ({rs['seeds']} seeds; not predicted by the aligned ODE): "
              f"stages in order: {rs['stages_in_order']}, plateau: {rs['plateau']}, "
              f"semantic block ending at -b_inf I: {rs['negative_final_b']} of {rs['seeds']}."]
    for key, s in rs["relative_shift"].items():
        lines.append(f"- {key}: {100 * s['mean']:+.1f}% vs the aligned ODE "
                     f"(95% interval [{100 * s['lo']:+.1f}%, {100 * s['hi']:+.1f}%])")
    lines.append("")
    lines.append("all claims passed" if result["passed"] else "some claims FAILED")
    return "\n".join(lines)
