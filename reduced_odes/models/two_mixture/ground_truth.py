"""Ground truth (spec section 7): the finite-width network trained by GD and minibatch SGD,
against the reduced ODE started from the network's own initial moments.

Each network starts from the ``random`` sign-paired initialisation (neuron
``r + m/2`` is minus neuron ``r``; mirror heads).  The reduced flow is then
integrated from that network's ``(zeta, N, M, q, k)``, and the two are
compared on ``A``, ``ell``, the signal alignment ``M / (M + M_perp)`` and the
stage times ``T1``, ``T2``, with the spec's bounds.  GD runs over widths 32 to
2048 at one step, and over steps at one width (the discrepancy must shrink as
``O(eta)``); SGD uses ``B = 64``, ``eta = 0.01``, ``m = 512``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from .params import TwoMixtureParams
from .simulator import moments, paired_random_net
from .training import Record, train

__all__ = ["BOUNDS", "SETTING", "compare", "discrepancy", "format_compare", "reduced_reference"]

#: The compared setting: short stages (T2 ~ 70) keep GD affordable; kappa/mu = 1 is inside
#: the verified regime, and d_val = 4 makes the initial alignment 1/4.
SETTING = TwoMixtureParams(mu=1.0, kappa=1.0, sigma=1e-2, sigma_att=1e-2, init="random", d_val=4)
#: Spec section 7 bounds: (|dA|/max(1, A), |d ell|/ell, stage times, alignment), by method.
BOUNDS = {"GD": {"A": 0.01, "ell": 0.02, "T": 0.02, "alignment": 1e-3},
          "SGD": {"A": 0.02, "ell": 0.05, "T": 0.02}}
#: A fitted order of the GD discrepancy in eta must lie in this band around 1 (first-order steps).
ORDER_BAND = (0.8, 1.2)
#: Checkpoints at which the trajectories are compared.
N_CHECK = 400


@dataclass(frozen=True)
class Plan:
    """What one comparison runs."""

    losses: tuple[str, ...]
    widths: tuple[int, ...]
    eta: float
    eta_width: int
    etas: tuple[float, ...]
    sgd_seeds: tuple[int, ...]


PLANS = {True: Plan(("square",), (32, 128, 512, 2048), 0.01, 512, (0.01, 0.005), (0,)),
         False: Plan(("square", "logistic"), (32, 64, 128, 256, 512, 1024, 2048), 0.01, 512,
                     (0.01, 0.005, 0.0025), (0, 1, 2))}


def reduced_reference(net, loss: str, params: TwoMixtureParams, t_max: float) -> dict:
    """The reduced ODE from ``net``'s moments: ``A``, ``ell``, alignment on ``N_CHECK + 1``
    even times up to ``t_max``, and ``T1``, ``T2`` (event-located).

    Examples
    --------
    >>> net = paired_random_net(32, 1e-2, 1e-2, 4, 4, np.random.default_rng(0))
    >>> ref = reduced_reference(net, "square", SETTING, 10.0)  # doctest: +SKIP
    >>> ref["t"].size, bool(abs(ref["alignment"][0] - 0.25) < 0.2)  # doctest: +SKIP
    (401, True)
    """
    from reduced_odes import SolverConfig, solve

    start = moments(net)
    traj = solve(params, loss, SolverConfig(t_end=t_max),
                 initial={k: start[k] for k in ("zeta", "N", "M", "q", "k")})
    t = np.linspace(0.0, t_max, N_CHECK + 1)
    observed = traj.observables_at(t)
    M = np.exp(traj.at(t)[traj.system.coordinate_names.index("log_M")])
    return {"t": t, "A": observed["A"], "ell": observed["ell"],
            "alignment": M / (M + start["M_perp"]),
            "T1": traj.phases["T1"], "T2": traj.phases["T2"]}


def discrepancy(record: Record, ref: dict) -> dict:
    """The errors the spec bounds: ``max |dA|/max(1, A)``, ``max |d ell|/ell``, the
    alignment's ``max |d|``, and the relative errors of ``T1``, ``T2``.

    Examples
    --------
    >>> rec = Record(1.0, np.array([0.0, 1.02]), np.array([1.0, 2.0]), np.array([0.5, 0.5]))
    >>> ref = {"t": np.array([0.0, 1.0]), "A": np.array([0.0, 1.0]), "ell": np.array([1.0, 2.0]),
    ...        "alignment": np.array([0.5, 0.5]), "T1": 0.5, "T2": 1.0}
    >>> round(discrepancy(rec, ref)["A"], 6)
    0.02
    """
    index = np.rint(ref["t"] / record.eta).astype(int)
    A, ell = record.A[index], record.ell[index]
    errors = {"A": float(np.max(np.abs(A - ref["A"]) / np.maximum(1.0, ref["A"]))),
              "ell": float(np.max(np.abs(ell - ref["ell"]) / ref["ell"])),
              "alignment": float(np.max(np.abs(record.alignment[index] - ref["alignment"])))}
    for name, series, level in (("T1", "A", SETTING.A1), ("T2", "theta", SETTING.theta2)):
        errors[name] = abs(record.crossing(series, level) - ref[name]) / ref[name]
    return errors


def _verdict(errors: dict, method: str) -> bool:
    bounds = BOUNDS[method]
    return all(errors[k] <= bounds[k] for k in ("A", "ell", "alignment") if k in bounds) and \
        max(errors["T1"], errors["T2"]) <= bounds["T"]


@cache
def _mean_field_phases(loss: str) -> dict:
    """``T1``, ``T2`` of the reduced flow from the m -> infinity moments of the random init."""
    from reduced_odes import solve

    return solve(SETTING, loss).phases


def _run_group(loss: str, nets: list, eta: float, t_max: float, method: str, labels: list[dict],
               batch: int | None = None, rng=None) -> list[dict]:
    """Train ``nets`` together and compare each with its own reduced reference."""
    references = [reduced_reference(net, loss, SETTING, t_max) for net in nets]
    records = train(nets, loss, SETTING.mu, SETTING.kappa, eta, t_max, batch, rng)
    rows = []
    for label, record, ref in zip(labels, records, references, strict=True):
        errors = discrepancy(record, ref)
        # Against the m -> infinity start instead: the initial moments' finite-width spread.
        infinite = _mean_field_phases(loss)
        spread = {f"{k} vs m=inf": abs(record.crossing(*c) - infinite[k]) / infinite[k]
                  for k, c in (("T1", ("A", SETTING.A1)), ("T2", ("theta", SETTING.theta2)))}
        rows.append({**label, "loss": loss, "method": method, "eta": eta, "errors": errors,
                     "informative": spread, "T1": ref["T1"], "T2": ref["T2"],
                     "passed": _verdict(errors, method)})
    return rows


def _net(width: int, seed: int):
    s = SETTING
    return paired_random_net(width, s.sigma, s.sigma_att, s.d_att, s.d_val,
                             np.random.default_rng(seed))


def _order(rows: list[dict]) -> dict:
    """Fitted order ``d ln(error) / d ln(eta)`` of each GD discrepancy over the step sweep."""
    etas = np.log([r["eta"] for r in rows])
    fitted = {}
    for key in ("A", "ell", "T1", "T2"):
        errors = np.log([max(r["errors"][key], 1e-300) for r in rows])
        fitted[key] = float(np.polyfit(etas, errors, 1)[0])
    fitted["passed"] = all(ORDER_BAND[0] <= v <= ORDER_BAND[1] for v in fitted.values())
    return fitted


def compare(quick: bool = True, out=None) -> dict:
    """GD over widths and steps and SGD, each against the reduced ODE from its own start.

    Parameters
    ----------
    quick : bool
        The square loss, four widths, two steps, one SGD seed (< 2 min on two cores);
        otherwise both losses, widths 32..2048, three steps, three SGD seeds.
    out : path, optional
        Directory for ``two_mixture-compare-{quick,full}.json``.

    Examples
    --------
    >>> result = compare(quick=True)  # doctest: +SKIP
    >>> result["passed"]  # doctest: +SKIP
    True
    """
    plan = PLANS[quick]
    result = {"setting": SETTING.as_dict(), "bounds": BOUNDS, "order_band": ORDER_BAND,
              "width": [], "step": [], "sgd": [], "order": {}}
    for loss in plan.losses:
        t_max = 1.5 * _mean_field_phases(loss)["T2"]  # past the attention stage
        result["width"] += _run_group(loss, [_net(m, 1) for m in plan.widths], plan.eta, t_max,
                                      "GD", [{"width": m} for m in plan.widths])
        for eta in plan.etas:
            result["step"] += _run_group(loss, [_net(plan.eta_width, 1)], eta, t_max, "GD",
                                         [{"width": plan.eta_width}])
        result["order"][loss] = _order([r for r in result["step"] if r["loss"] == loss])
        nets = [_net(512, 100 + seed) for seed in plan.sgd_seeds]
        result["sgd"] += _run_group(loss, nets, 0.01, t_max, "SGD",
                                    [{"width": 512, "seed": s, "batch": 64}
                                     for s in plan.sgd_seeds],
                                    batch=64, rng=np.random.default_rng(7))
    rows = result["width"] + result["step"] + result["sgd"]
    result["passed"] = all(r["passed"] for r in rows) and all(
        o["passed"] for o in result["order"].values())
    if out is not None:
        from reduced_odes.author import versions, write_json

        name = f"two_mixture-compare-{'quick' if quick else 'full'}.json"
        write_json(f"{out}/{name}", {**result, "versions": versions()})
    return result


def format_compare(result: dict) -> str:
    """The comparison as Markdown tables: errors by width, by step, SGD, and the fitted order.

    Examples
    --------
    >>> row = {"loss": "square", "method": "GD", "width": 32, "eta": 0.01, "passed": True,
    ...        "errors": {"A": 1e-3, "ell": 2e-3, "alignment": 1e-5, "T1": 1e-3, "T2": 2e-3},
    ...        "informative": {"T1 vs m=inf": 0.1, "T2 vs m=inf": 0.05}}
    >>> print(format_compare({"width": [row], "step": [], "sgd": [], "order": {},
    ...                       "passed": True}).splitlines()[2])
    | square | GD | 32 | 0.01 | 0.001 | 0.002 | 1e-05 | 0.001 | 0.002 | PASS | 0.1, 0.05 |
    """
    header = ("| loss | method | width | eta | max dA/max(1,A) | max d ell/ell | alignment | "
              "T1 rel | T2 rel | verdict | T1, T2 rel vs m=inf start |\n"
              "|---|---|---|---|---|---|---|---|---|---|---|")
    lines = [header]
    for row in result["width"] + result["step"] + result["sgd"]:
        e = row["errors"]
        lines.append(f"| {row['loss']} | {row['method']} | {row['width']} | {row['eta']:g} | "
                     f"{e['A']:.3g} | {e['ell']:.3g} | {e['alignment']:.3g} | {e['T1']:.3g} | "
                     f"{e['T2']:.3g} | {'PASS' if row['passed'] else 'FAIL'} | "
                     f"{row['informative']['T1 vs m=inf']:.3g}, "
                     f"{row['informative']['T2 vs m=inf']:.3g} |")
    for loss, order in result["order"].items():
        fitted = ", ".join(f"{k} {v:.2f}" for k, v in order.items() if k != "passed")
        lines.append(f"\nGD order in eta ({loss}): {fitted} "
                     f"({'PASS' if order['passed'] else 'FAIL'}, band {ORDER_BAND})")
    lines.append(f"\noverall: {'PASS' if result['passed'] else 'FAIL'}")
    return "\n".join(lines)
