"""Verification of the committee machine: grids, one measurement per setting, and the claims.

Every prediction is read off the derived ODE (fixed points, Jacobian
eigenvalues) or is a closed form of the literature held against it; every
measurement is a trajectory of the same ODE.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import pairwise

import numpy as np

from reduced_odes.author import json_safe, load_tolerances

__all__ = ["ACTIVATION_TOLERANCES", "TOLERANCES", "claims", "measure", "verify_metadata",
           "verify_settings"]

#: Tolerances, each with its reason (``tolerances.toml``, table ``claims``).
TOLERANCES = load_tolerances(__package__)

#: The tolerances of the ``full`` grid's claims of other activations, kept apart so that
#: ``verify_metadata`` (written into every grid's results, the default's committed) is
#: unchanged; each row carries its tolerance and reason all the same.
ACTIVATION_TOLERANCES = load_tolerances(__package__, "activation_claims")

#: Asymmetries of the escape-time law, largest first.
ASYMMETRIES = (1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8)
#: Learning rates of the plateau's rise.
ETAS = (0.0, 0.05, 0.1, 0.2, 0.4)
#: Output noise and learning rate of the K >= M runs.
NOISY = {"M": 1, "eta": 0.1, "noise": 0.5}

#: What each grid holds; the main job runs ``default``.
GRIDS = {
    "quick": {"plateau": [2], "escape": ASYMMETRIES[::2], "eta": ETAS[:3:2], "noise": [1, 2]},
    "default": {"plateau": [2, 3], "escape": ASYMMETRIES, "eta": ETAS, "noise": [1, 2]},
    "full": {"plateau": [2, 3, 4, 5], "escape": ASYMMETRIES + (1e-9, 1e-10), "eta": ETAS,
             "noise": [1, 2], "activation_plateau": [("tanh", 0.0), ("relu", 0.1)],
             "activation_noise": [("tanh", 2)], "activation_eta_max": [("relu", 2)],
             "second_layer": [2]},
}
#: The trained read-out's runs (Goldt et al. 2019), erf, K = M: a student whose read-out
#: starts at half the teacher's and is learnt at half the rate of the first layer.
SECOND_LAYER = {"eta": 0.2, "second_layer": True, "v_rate": 0.5, "v_star": 1.0, "v0": 0.5,
                "q0": 0.3, "r0": 0.1}
#: Where ReLU's eta_max (the plateau's fold) is checked by runs: a factor below and above.
FOLD_MARGIN = 0.02
#: The time by which the run above the fold must have run away (``numerics.runaway_time``).
RUNAWAY_BY = 2000.0
#: Output noise and learning rate of the over-parameterised runs of other activations.
ACTIVATION_NOISY = {"M": 1, "eta": 0.1, "noise": 0.5}


def verify_metadata() -> dict:
    """Every claim's tolerance and its reason, merged into ``verify-<grid>.json``."""
    return {"tolerances": {name: {"tolerance": value, "reason": reason}
                           for name, (value, reason) in TOLERANCES.items()}}


def _grid(grid: str) -> dict[str, list]:
    return GRIDS[grid]


def verify_settings(grid: str, variants: Sequence[str]) -> tuple[list[dict], list[dict]]:
    """The settings of ``grid``: the erf claims, and one learning run per other activation."""
    points = _grid(grid)
    settings: list[dict] = []
    if "erf" in variants:
        erf = {"variant": "erf"}
        settings += [{**erf, "kind": "plateau", "K": K, "M": K} for K in points["plateau"]]
        settings += [{**erf, "kind": "escape", "K": 2, "M": 2, "asymmetry": a}
                     for a in points["escape"]]
        settings += [{**erf, "kind": "eta", "K": 2, "M": 2, "eta": eta, "asymmetry": 1e-6}
                     for eta in points["eta"]]
        settings += [{**erf, "kind": "eta_max", "K": 2, "M": 2}]
        settings += [{**erf, "kind": "noise", "K": K, **NOISY} for K in points["noise"]]
    settings += [{"variant": v, "kind": "learns", "K": 2, "M": 2} for v in variants if v != "erf"]
    settings += [{"variant": v, "kind": "activation_plateau", "K": 2, "M": 2, "eta": eta,
                  "asymmetry": 1e-8} for v, eta in points.get("activation_plateau", ())
                 if v in variants]
    settings += [{"variant": v, "kind": "activation_noise", "K": K, **ACTIVATION_NOISY}
                 for v, K in points.get("activation_noise", ()) if v in variants]
    settings += [{"variant": v, "kind": "activation_eta_max", "K": K, "M": K}
                 for v, K in points.get("activation_eta_max", ()) if v in variants]
    if "erf" in variants:
        settings += [{"variant": "erf", "kind": "second_layer", "K": K, "M": K, **SECOND_LAYER}
                     for K in points.get("second_layer", ())]
    return settings, []


def _params(setting: dict):
    from .params import CommitteeParams

    fields = {k: v for k, v in setting.items() if k not in ("variant", "kind")}
    return CommitteeParams(**fields)


def _plateau_value(traj) -> float:
    """``eps_g`` where the flow is slowest between the plateau's entry and the escape, from
    the dense output (the output grid is too coarse for a minimum)."""
    from scipy.optimize import minimize_scalar

    start, end = traj.phases.get("T_plateau", math.nan), traj.phases.get("T_escape", math.nan)
    if not (math.isfinite(start) and math.isfinite(end)):
        return math.nan
    times = np.linspace(start, end, 401)
    speed = traj.observables_at(times)["speed"]
    best = int(np.argmin(speed))
    lo, hi = times[max(best - 1, 0)], times[min(best + 1, len(times) - 1)]
    found = minimize_scalar(lambda t: float(traj.observables_at([t])["speed"][0]),
                            bounds=(lo, hi), method="bounded", options={"xatol": 1e-6})
    return float(traj.observables_at([found.x])["eps_g"][0])


def _phases_reached(params, variant: str):
    """The trajectory, also of a run that stopped once every phase was reached (ReLU at
    ``eta > 0`` learns onto the boundary of the realisable overlaps, where its closed forms
    fail at round-off, docs/committee_machine.md); any other stop is raised."""
    from reduced_odes import DomainError, solve

    from .model import MODEL

    try:
        return solve(params, variant, model=MODEL)
    except DomainError as error:
        if error.trajectory is None or error.trajectory.unreached:
            raise
        return error.trajectory


def measure(setting: dict) -> dict:
    """Integrate (or solve for the fixed points of) one setting; the numbers the claims need."""
    from reduced_odes import SolverConfig, solve

    from .model import MODEL
    from .numerics import largest_learning_rate, specialised_point, unspecialised_fixed_point

    kind, variant = setting["kind"], setting["variant"]
    params = _params(setting)
    if kind == "plateau":
        point = unspecialised_fixed_point(params, variant)
        unstable = point.unstable
        return {"eps_p": point.eps_g, "residual": point.residual,
                "lambda": float(unstable[0]) if unstable.size else None,
                "lambda_spread": float(unstable[0] - unstable[-1]) if unstable.size else None,
                "unstable": int(unstable.size)}
    if kind == "activation_eta_max":
        return _fold_measurement(setting)
    if kind == "eta_max":
        eta_max = largest_learning_rate(params.K, variant)
        ends = {}
        for name, factor in (("below", 0.9), ("above", 1.1)):
            run = _params({**setting, "eta": factor * eta_max})
            try:
                traj = solve(run, variant, SolverConfig(t_end=4000.0), model=MODEL)
                ends[name] = float(traj.final["eps_g"])
            except Exception as exc:  # a run that blows up has failed to learn  # noqa: BLE001
                ends[name], ends[f"{name}_error"] = None, f"{type(exc).__name__}: {exc}"
        return {"eta_max": eta_max, **{f"eps_end_{k}": v for k, v in ends.items()}}
    traj = (_phases_reached(params, variant) if kind == "activation_plateau" else
            solve(params, variant, model=MODEL))
    out = {"T_escape": json_safe(float(traj.phases.get("T_escape", math.nan))),
           "eps_end": float(traj.final["eps_g"])}
    if kind in ("eta", "escape", "activation_plateau"):
        out["plateau"] = json_safe(float(_plateau_value(traj)))
    if kind in ("eta", "activation_plateau"):
        out["eps_p"] = unspecialised_fixed_point(params, variant).eps_g
    if kind == "activation_plateau":
        out["lambda"] = float(unspecialised_fixed_point(params, variant).unstable[0])
        later = _phases_reached(_params({**setting, "asymmetry": 1e-10}), variant)
        out["T_escape_later"] = json_safe(float(later.phases.get("T_escape", math.nan)))
    if kind == "second_layer":
        out["v_miss"] = max(abs(traj.final[f"v_{i + 1}"] - params.v_star)
                            for i in range(params.K))
        out["T_spec"] = json_safe(float(traj.phases.get("T_spec", math.nan)))
    if kind in ("noise", "activation_noise"):
        final = np.array([traj.final[name] for name in traj.system.state_names])
        out["eps_fixed_point"] = specialised_point(params, variant, start=final).eps_g
    return out


def _fold_measurement(setting: dict) -> dict:
    """ReLU's eta_max, the plateau's fold found by continuation on the derived flow, and the
    runs a margin below it (its trajectory's end) and above it (when its norms run away)."""
    from .numerics import plateau_fold, runaway_time

    eta_max = plateau_fold(setting["K"], setting["variant"])
    below = _phases_reached(_params({**setting, "eta": (1 - FOLD_MARGIN) * eta_max}),
                            setting["variant"])
    above = _params({**setting, "eta": (1 + FOLD_MARGIN) * eta_max})
    return {"eta_max": eta_max, "eps_end_below": float(below.final["eps_g"]),
            "T_escape_below": json_safe(float(below.phases.get("T_escape", math.nan))),
            "runaway_above": json_safe(runaway_time(above, setting["variant"], t_end=RUNAWAY_BY))}


def _rel(predicted: float, measured: float) -> float:
    return abs(measured - predicted) / abs(predicted)


def _value(result: dict, key: str) -> float:
    value = result.get(key)
    return math.nan if value is None else float(value)


def claims(records: list[dict], variants: Sequence[str]) -> list:
    """Every claim, each the worst case over its settings."""
    from reduced_odes.author import Claim

    by_kind: dict[str, list[tuple[dict, dict]]] = {}
    failed = [record for record in records if "result" not in record]
    for record in records:
        if "result" in record:
            by_kind.setdefault(record["setting"]["kind"], []).append((record["setting"],
                                                                      record["result"]))
    rows: list = []

    def add(name: str, predicted: float, measured: float, error: float, where: str,
            passed: bool | None = None) -> None:
        tolerance, reason = {**TOLERANCES, **ACTIVATION_TOLERANCES}[name]
        ok = bool(error <= tolerance) if passed is None else bool(passed)
        if not math.isfinite(error):
            ok = False
        rows.append(Claim(name, float(predicted), float(measured), float(error), tolerance, ok,
                          f"{where}; {reason}"))

    _plateau_claims(by_kind.get("plateau", []), add)
    _escape_claims(by_kind.get("escape", []), by_kind.get("plateau", []), add)
    _eta_claims(by_kind.get("eta", []), by_kind.get("eta_max", []), add)
    _noise_claims(by_kind.get("noise", []), add)
    _activation_claims(by_kind.get("activation_plateau", []),
                       by_kind.get("activation_noise", []), add)
    _fold_claims(by_kind.get("activation_eta_max", []), add)
    _second_layer_claims(by_kind.get("second_layer", []), add)
    for record in failed:
        where = ", ".join(f"{k}={v}" for k, v in record["setting"].items() if k != "model")
        add("every setting ran", 0.0, 1.0, 1.0, f"{where}: {record.get('error', 'no result')}",
            passed=False)
    for setting, result in by_kind.get("learns", []):
        end = _value(result, "eps_end")
        add("student learns the teacher (K = M, no noise)", 0.0, end, abs(end),
            f"activation={setting['variant']}, K=M={setting['K']}")
    return _worst(rows)


def _worst(rows: list) -> list:
    """One row per claim: the failing or the largest error, in the order first seen."""
    chosen: dict[str, object] = {}
    for row in rows:
        old = chosen.get(row.name)
        if old is None or (old.passed and not row.passed) or (
                old.passed == row.passed and row.error > old.error):
            chosen[row.name] = row
    return list(chosen.values())


def _plateau_claims(records, add) -> None:
    from .numerics import closed_form_plateau

    for setting, result in records:
        K = setting["K"]
        eps_star, eps_p = closed_form_plateau(K), _value(result, "eps_p")
        add("plateau eps* (fixed point vs closed form)", eps_star, eps_p, abs(eps_p - eps_star),
            f"K=M={K}")
        spread = _value(result, "lambda_spread")
        add("one unstable direction class at the plateau", 0.0, spread, abs(spread),
            f"K=M={K}: {result.get('unstable')} unstable, lambda={_value(result, 'lambda'):.6g}",
            passed=abs(spread) <= 1e-8 * _value(result, "lambda"))


def _escape_claims(records, plateaus, add) -> None:
    lam = next((_value(r, "lambda") for s, r in plateaus if s["K"] == 2), math.nan)
    eps_p = next((_value(r, "eps_p") for s, r in plateaus if s["K"] == 2), math.nan)
    ordered = sorted(records, key=lambda record: -record[0]["asymmetry"])
    if len(ordered) < 2 or not math.isfinite(lam):
        return
    misses = [_rel(eps_p, _value(r, "plateau")) for _, r in ordered]
    closer = all(b < a for a, b in pairwise(misses))
    add("plateau approached as the asymmetry falls", eps_p, _value(ordered[-1][1], "plateau"),
        misses[-1], "K=M=2, relative miss at a = " + ", ".join(
            f"{s['asymmetry']:g}: {m:.3g}" for (s, _), m in zip(ordered, misses, strict=True)),
        passed=closer and misses[-1] <= TOLERANCES["plateau approached as the asymmetry "
                                                   "falls"][0])
    points = [(s["asymmetry"], _value(r, "T_escape")) for s, r in ordered]
    slopes = [(t2 - t1) / math.log(a1 / a2) for (a1, t1), (a2, t2) in pairwise(points)]
    towards = all(abs(b - 1 / lam) < abs(a - 1 / lam) for a, b in pairwise(slopes))
    error = _rel(1 / lam, slopes[-1])
    add("escape time slope vs 1/lambda", 1 / lam, slopes[-1], error,
        f"K=M=2, lambda={lam:.10g}; local slopes dT/dln(1/a) from a={points[0][0]:g} down: "
        + ", ".join(f"{s:.4f}" for s in slopes),
        passed=towards and error <= TOLERANCES["escape time slope vs 1/lambda"][0])


def _eta_claims(records, maxima, add) -> None:
    ordered = sorted((s["eta"], r) for s, r in records)
    heights = [_value(r, "eps_p") for _, r in ordered]
    if len(heights) > 1:
        rises = all(b > a for a, b in pairwise(heights))
        add("plateau rises with eta", heights[0], heights[-1], 0.0 if rises else 1.0,
            "eps_p at eta = " + ", ".join(f"{eta:g}: {h:.6g}" for (eta, _), h in
                                          zip(ordered, heights, strict=True)), passed=rises)
    for eta, result in ordered:
        if eta > 0 and result.get("plateau") is not None:
            add("plateau height of a trajectory at eta > 0", _value(result, "eps_p"),
                _value(result, "plateau"), _rel(_value(result, "eps_p"),
                                                _value(result, "plateau")), f"eta={eta:g}")
    for _, result in maxima:
        eta_max, below = _value(result, "eta_max"), _value(result, "eps_end_below")
        add("largest learning rate: converges below", 0.0, below, abs(below),
            f"eta_max={eta_max:.8g} (K=M=2), run at 0.9 eta_max")
        above = result.get("eps_end_above")
        failed = above is None or not math.isfinite(above) or above > 1e-4
        add("largest learning rate: fails above", 1e-4, math.nan if above is None else above,
            0.0 if failed else 1.0, f"eta_max={eta_max:.8g}, run at 1.1 eta_max"
            + (f" ({result.get('eps_end_above_error')})" if above is None else ""),
            passed=failed)


def _noise_claims(records, add) -> None:
    ordered = sorted((s["K"], r) for s, r in records)
    for K, result in ordered:
        fixed, end = _value(result, "eps_fixed_point"), _value(result, "eps_end")
        add("asymptotic eps_g with noise (trajectory vs fixed point)", fixed, end,
            _rel(fixed, end), f"K={K}, M={NOISY['M']}, eta={NOISY['eta']}, "
                              f"noise={NOISY['noise']}")
    values = [_value(r, "eps_fixed_point") for _, r in ordered]
    if len(values) > 1:
        grows = all(b > a for a, b in pairwise(values))
        add("asymptotic eps_g grows with K (K = M, M + 1; noise)", values[0], values[-1],
            0.0 if grows else 1.0, "eps_inf at K = " + ", ".join(
                f"{K}: {v:.6g}" for (K, _), v in zip(ordered, values, strict=True)), passed=grows)


def _activation_claims(plateaus, noisy, add) -> None:
    """tanh's and ReLU's plateau and escape at the fixed point found on their derived flows
    (no closed form to hold them against), and an over-parameterised noisy tanh student."""
    for setting, result in plateaus:
        where = f"activation={setting['variant']}, K=M=2, eta={setting['eta']:g}"
        eps_p, plateau = _value(result, "eps_p"), _value(result, "plateau")
        add("plateau of a trajectory at the flow's own fixed point (tanh, ReLU)", eps_p,
            plateau, _rel(eps_p, plateau), where)
        lam = _value(result, "lambda")
        # The later run's asymmetry is 100 times smaller: ln(1/a) grows by ln 100.
        slope = (_value(result, "T_escape_later") - _value(result, "T_escape")) / math.log(100)
        add("escape time slope vs 1/lambda (tanh, ReLU)", 1 / lam, slope,
            _rel(1 / lam, slope), f"{where}, lambda={lam:.10g}")
    for setting, result in noisy:
        fixed, end = _value(result, "eps_fixed_point"), _value(result, "eps_end")
        add("asymptotic eps_g with noise, K > M (tanh)", fixed, end, _rel(fixed, end),
            f"activation={setting['variant']}, K={setting['K']}, "
            + ", ".join(f"{k}={v}" for k, v in ACTIVATION_NOISY.items()))


def _fold_claims(records, add) -> None:
    """ReLU's eta_max: below the plateau's fold the student learns, above it the norms run
    away (no plateau catches the flow from small weights)."""
    for setting, result in records:
        eta_max, end = _value(result, "eta_max"), _value(result, "eps_end_below")
        where = f"activation={setting['variant']}, K=M={setting['K']}, eta_max={eta_max:.10g}"
        add("ReLU eta_max (the plateau's fold): learns below", 0.0, end, abs(end),
            f"{where}, run at {1 - FOLD_MARGIN:g} eta_max (T_escape "
            f"{_value(result, 'T_escape_below'):.6g})")
        runaway = _value(result, "runaway_above")
        add("ReLU eta_max (the plateau's fold): norms run away above", RUNAWAY_BY, runaway,
            0.0 if math.isfinite(runaway) else 1.0,
            f"{where}, run at {1 + FOLD_MARGIN:g} eta_max: an overlap passes 1e3 at t = "
            f"{runaway:.6g}", passed=math.isfinite(runaway))


def _second_layer_claims(records, add) -> None:
    """The trained read-out (Goldt et al. 2019): the student learns the teacher, first layer
    and read-out alike."""
    for setting, result in records:
        where = (f"erf, K=M={setting['K']}, " + ", ".join(
            f"{k}={setting[k]}" for k in ("eta", "v_rate", "v_star", "v0"))
            + f"; T_spec {_value(result, 'T_spec'):.6g}")
        end, miss = _value(result, "eps_end"), _value(result, "v_miss")
        add("trained read-out: learns the teacher (K = M, no noise)", 0.0, end, abs(end), where)
        add("trained read-out: v_i -> v*", setting["v_star"], setting["v_star"] + miss, miss,
            where)
