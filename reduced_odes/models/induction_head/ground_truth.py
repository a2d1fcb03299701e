"""The ``compare`` command: exact-softmax ground truth against the reduced ODEs.

Two estimators of the exact flow (``--estimator``):

* ``population`` (default): the deterministic population flow of
  :mod:`.population`, from independent samples of the intractable softmax
  averages, with error bars -- one setting, or a grid through the resumable
  sweep engine, one task per sample;
* ``sgd``: online SGD with exact softmax attention (:mod:`.sgd_compare`).

:func:`run_compare` validates every input first and writes the results;
:func:`format_compare` renders either kind as Markdown.
"""

from __future__ import annotations

import concurrent.futures as cf
import math
import time
from collections.abc import Sequence
from typing import Any

from reduced_odes import author as ra

from ._common import cell, json_safe, ratio, reduced_run
from .sgd_compare import compare_closures, format_markdown, sgd_overlay

__all__ = ["check_compare_request", "format_compare", "format_population", "group_by_tables",
           "population_rows", "population_sample_task", "rows_from_estimate", "run_compare"]


# --------------------------------------------------------------------------- #
# Population estimator: deterministic ground truth from sample averages
# --------------------------------------------------------------------------- #
#: Work per independent sample, in tokens (draws times L): the cost of a sample
#: is then about the same at every L.  With POPULATION_SAMPLES samples the
#: standard error of T_em is about 0.1% on the closure-error grid.
POPULATION_TOKENS = 5_000_000
POPULATION_SAMPLES = 8
#: Tokens per vectorised block: about 25 MB of exponentials at 32 nodes, at any L.
BLOCK_TOKENS = 50_000
POPULATION_PHASES = ("T_II", "T_em", "T_III", "window")


def _closure_block(traj, exact: dict[str, Any]) -> dict[str, Any]:
    """A closure's phase times (``solve``'s) and its ratios to the exact ones, with intervals."""
    if isinstance(traj, str):
        return {"error": traj}
    block: dict[str, Any] = {k: float(v) for k, v in traj.phases.items()}
    block["window"] = block["T_III"] - block["T_II"]
    ratios = {}
    for name in ("T_em", "window", "T_III"):
        mean, lo, hi = (exact[name], *exact["intervals"][name])
        if exact.get("window_is_T_III") and name == "window":
            continue  # no emergence window to compare: T_II is 0
        ratios[name] = {"value": ratio(block[name], mean), "lo": ratio(block[name], hi),
                        "hi": ratio(block[name], lo)}
    block["ratio_to_exact"] = ratios
    return block


def _population_model(group: dict[str, Any]):
    from .population import InductionHeadPopulation

    return InductionHeadPopulation(L=int(group["L"]), wstar=float(group["wstar"]),
                                   alpha=float(group["alpha"]),
                                   sigmas=tuple(float(s) for s in group["sigmas"]),
                                   attention=group.get("attention", "exact"))


def _sample_options(L: int, tokens: int, samples: int, nodes: int, seed: int) -> dict[str, int]:
    return {"draws": max(2 * samples, tokens // L), "nodes": nodes,
            "block": max(1, BLOCK_TOKENS // L), "seed": seed}


def population_rows(L: int, wstar: float, alpha: float, sigmas: Sequence[float], *,
                    tokens: int = POPULATION_TOKENS, samples: int = POPULATION_SAMPLES,
                    nodes: int = 32, seed: int = 0, executor=None, progress: bool = True,
                    attention: str = "exact") -> dict[str, Any]:
    """Exact (population-flow) phase times against both closures, one row per ``sigma``.

    The sample averages do not depend on ``sigma``, so one set of tables serves
    every ``sigma`` of the list.  ``T_I`` is the closures' (the 4-gram block is
    closure-independent and has a closed form).

    Parameters
    ----------
    L, wstar, alpha : model parameters.
    sigmas : sequence of float
        Initialisation scales.
    tokens : int
        Draws per sample times ``L``.
    samples, nodes, seed, executor, progress :
        See :func:`~.population.population_flow`.
    attention : {"exact", "linear", "meanfield"}
        A closure here is a validation run: the answer is that closure's ODE.

    Returns
    -------
    dict
        ``rows`` (``L, sigma, wstar, alpha, exact, linear, meanfield``) and the
        estimator's diagnostics ``estimator``.

    Examples
    --------
    >>> res = population_rows(8, 0.3, 0.5, [0.3], tokens=8000, samples=2, nodes=12,
    ...                       progress=False)
    >>> sorted(res["rows"][0])
    ['L', 'alpha', 'exact', 'linear', 'meanfield', 'sigma', 'wstar']
    """
    from .population import population_flow

    group = {"L": L, "wstar": wstar, "alpha": alpha, "sigmas": list(sigmas),
             "attention": attention}
    est = population_flow(_population_model(group), samples=samples, executor=executor,
                          progress=progress, **_sample_options(L, tokens, samples, nodes, seed))
    return rows_from_estimate(group, est, tokens=tokens)


def rows_from_estimate(group: dict[str, Any], est: dict[str, Any], *,
                       tokens: int) -> dict[str, Any]:
    """The rows of one set of tables (``group``: ``L, wstar, alpha, sigmas``) from its estimate."""
    L, alpha, wstar = int(group["L"]), float(group["alpha"]), float(group["wstar"])
    rows = []
    for sigma in group["sigmas"]:
        odes = {c: reduced_run(L, alpha, wstar, sigma, c) for c in ("linear", "meanfield")}
        exact: dict[str, Any] = {"intervals": {}}
        for name in POPULATION_PHASES:
            ph = est["phases"][f"{sigma:g}/{name}"]
            exact.update({name: ph["mean"], f"{name}_se": ph["se"]})
            exact["intervals"][name] = (ph["lo"], ph["hi"])
        some = next((t for t in odes.values() if not isinstance(t, str)), None)
        exact["T_I"] = some.phases["T_I"] if some is not None else math.nan
        exact["window_is_T_III"] = bool(exact["T_II"] == 0.0)
        rows.append({"L": L, "sigma": sigma, "wstar": wstar, "alpha": alpha, "exact": exact,
                     **{c: _closure_block(t, exact) for c, t in odes.items()}})
    diagnostics = {k: est[k] for k in ("interpolation_error", "closure_check", "settings")}
    return json_safe({"rows": rows, "estimator": {**diagnostics,
                                              "attention": group.get("attention", "exact"),
                                              "tokens": tokens}})


def population_sample_task(setting: dict[str, Any]) -> dict[str, Any]:
    """Sweep task: sample ``setting["sample"]`` of the tables of one ``(L, wstar, alpha)``."""
    from .population import population_sample

    L = int(setting["L"])
    options = _sample_options(L, int(setting["tokens"]), int(setting["samples"]),
                              int(setting["nodes"]), int(setting["seed"]))
    return json_safe(population_sample(_population_model(setting), int(setting["sample"]),
                                   **options))


def group_by_tables(settings: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Group ``(L, sigma, wstar, alpha)`` settings into one task per set of tables.

    Examples
    --------
    >>> group_by_tables([{"L": 20, "sigma": s, "wstar": 0.3, "alpha": 0.5} for s in (0.1, 0.01)])
    [{'L': 20, 'wstar': 0.3, 'alpha': 0.5, 'sigmas': [0.1, 0.01]}]
    """
    groups: dict[tuple, dict[str, Any]] = {}
    for s in settings:
        key = (s["L"], s["wstar"], s["alpha"])
        group = groups.setdefault(key, {"L": s["L"], "wstar": s["wstar"], "alpha": s["alpha"],
                                        "sigmas": []})
        group["sigmas"].append(s["sigma"])
    return list(groups.values())


def format_population(result: dict[str, Any]) -> str:
    """Markdown table of a population comparison (``rows`` as from :func:`population_rows`).

    Examples
    --------
    >>> format_population({"rows": [], "metadata": {}}).splitlines()[0]
    '### Exact-softmax population flow vs the reduced ODEs'
    """
    lines = ["### Exact-softmax population flow vs the reduced ODEs", "",
             "Exact: mean ± standard error over independent samples; ratios are closure / "
             "exact with the 95% interval.  † T_II = 0 (w_kq(0) = σ² is already past the "
             "onset): the window is T_III.", "",
             "| L | σ | w* | exact T_em | lin/exact T_em | mf/exact T_em | exact window "
             "| lin/exact window | mf/exact window |", "|---|---|---|---|---|---|---|---|---|"]

    def ratio_cell(block: dict, name: str) -> str:
        r = block.get("ratio_to_exact", {}).get(name)
        if r is None:
            return "—"
        return f"{cell(r['value'], 4)} [{cell(r['lo'], 4)}, {cell(r['hi'], 4)}]"

    for r in result["rows"]:
        ex = r["exact"]
        mark = " †" if ex.get("window_is_T_III") else ""
        lines.append(f"| {r['L']} | {cell(r['sigma'])} | {cell(r['wstar'])} "
                     f"| {cell(ex['T_em'], 6)} ± {cell(ex['T_em_se'], 2)} "
                     f"| {ratio_cell(r['linear'], 'T_em')} "
                     f"| {ratio_cell(r['meanfield'], 'T_em')} "
                     f"| {cell(ex['window'], 5)}{mark} | {ratio_cell(r['linear'], 'window')} "
                     f"| {ratio_cell(r['meanfield'], 'window')} |")
    return "\n".join(lines)


def check_compare_request(*, out: str, estimator: str, L, sigma, wstar, alpha,
                          grid: str | None, tokens: int = POPULATION_TOKENS,
                          samples: int = POPULATION_SAMPLES) -> list[dict[str, Any]]:
    """Validate every input of ``compare`` before any work; the settings to run.

    Raises :class:`~reduced_odes.ParameterError` (one line) on a bad output
    directory, estimator, parameter or grid file.

    Examples
    --------
    >>> check_compare_request(out="results", estimator="population", L=20, sigma=0.1,
    ...                       wstar=0.3, alpha=0.5, grid=None)
    [{'L': 20, 'sigma': 0.1, 'wstar': 0.3, 'alpha': 0.5}]
    """
    import os
    from pathlib import Path

    from .params import ModelParams

    if estimator not in ("population", "sgd"):
        raise ra.ParameterError(f"estimator={estimator!r}; allowed: population, sgd")
    if not 10_000 <= tokens <= 10**10:
        raise ra.ParameterError(f"tokens={tokens!r} is out of range; allowed: an integer in "
                             "[10000, 1e10]")
    if not 2 <= samples <= 1000:
        raise ra.ParameterError(f"samples={samples!r} is out of range; allowed: an integer in "
                             "[2, 1000] (error bars need at least 2)")
    target = Path(out)
    if target.exists() and not target.is_dir():
        raise ra.ParameterError(f"out={out!r} is not a directory")
    parent = target
    while not parent.exists():
        parent = parent.parent
    if not os.access(parent, os.W_OK):
        raise ra.ParameterError(f"out={out!r} is not writable")
    if grid is None:
        settings = [{"L": L, "sigma": sigma, "wstar": wstar, "alpha": alpha}]
    else:
        try:
            settings = ra.load_grid(grid)
        except (OSError, ValueError) as exc:
            raise ra.ParameterError(f"grid={grid!r}: {exc}".splitlines()[0]) from None
        for s in settings:
            if unknown := sorted(set(s) - {"L", "sigma", "wstar", "alpha"}):
                raise ra.ParameterError(f"grid={grid!r}: unknown parameter(s) {unknown}; "
                                     "allowed: L, sigma, wstar, alpha")
            s.setdefault("alpha", alpha)
            s.setdefault("L", L), s.setdefault("sigma", sigma), s.setdefault("wstar", wstar)
    for s in settings:
        ModelParams(**s)  # raises ParameterError naming the parameter and its range
    return settings


def run_compare(*, quick: bool, out, estimator: str = "population", L: int | None = None,
                sigma: float | None = None, wstar: float | None = None,
                alpha: float | None = None, grid: str | None = None,
                tokens: int | None = None, samples: int | None = None,
                executor: cf.Executor | None = None, workers: int | None = None
                ) -> dict[str, Any]:
    """The ``compare`` command: validate everything, then run the chosen estimator.

    ``population``: one setting (``compare-population.json``) or, with
    ``grid``, every setting through the resumable sweep engine, one task per
    independent sample (``compare-grid.jsonl`` then ``compare-grid.json``),
    all in ``out``.  ``sgd``: :func:`compare_closures` on the preset grid, or
    on the one setting given.  ``executor`` (e.g. a dask cluster's) runs the
    work; by default a local process pool of ``workers``.
    """
    from pathlib import Path


    given = {"L": L, "sigma": sigma, "wstar": wstar}
    defaults = {"L": 20, "sigma": 0.1, "wstar": 0.3}
    filled = {k: defaults[k] if v is None else v for k, v in given.items()}
    alpha = 0.5 if alpha is None else alpha
    tokens = (POPULATION_TOKENS // (8 if quick else 1)) if tokens is None else tokens
    samples = POPULATION_SAMPLES if samples is None else samples
    settings = check_compare_request(out=str(out), estimator=estimator, alpha=alpha, grid=grid,
                                     tokens=tokens, samples=samples, **filled)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if estimator == "sgd":
        one = grid is None and any(v is not None for v in given.values())
        points = {k: tuple(dict.fromkeys(s[k] for s in settings)) for k in ("L", "sigma", "wstar")}
        result = compare_closures(quick=quick, alpha=alpha, workers=workers or 2,
                                  **({"grid": points, "modes_at": ()} if one or grid else {}))
        ra.write_json(out / f"compare-{'quick' if quick else 'full'}.json",
                   {**result, "versions": ra.versions()})
        if not (one or grid):
            ra.write_json(out / "compare-overlay.json", sgd_overlay())
        return result
    options = {"tokens": tokens, "samples": samples, "nodes": 32, "seed": 0}
    groups = group_by_tables(settings)
    start = time.perf_counter()
    if grid is None:
        pool = executor or ra.process_pool(workers, samples)
        try:
            runs = [population_rows(g["L"], g["wstar"], g["alpha"], g["sigmas"], executor=pool,
                                    **options) for g in groups]
        finally:
            if executor is None:
                pool.shutdown()
        name = "compare-population.json"
    else:
        runs = _population_sweep(groups, options, out / "compare-grid.jsonl", executor, workers)
        name = "compare-grid.json"
    result = {"rows": [row for run in runs for row in run["rows"]],
              "metadata": {"estimator": "population", "tokens_per_sample": tokens,
                           "samples": samples, "tables": [run["estimator"] for run in runs],
                           "wall_time_s": time.perf_counter() - start, "versions": ra.versions()}}
    ra.write_json(out / name, result)
    return json_safe(result)


def _population_sweep(groups: list[dict[str, Any]], options: dict[str, Any], path,
                      executor: cf.Executor | None, workers: int | None) -> list[dict[str, Any]]:
    """Every sample of every group through the resumable sweep engine; the groups' rows."""
    from .population import population_settings, summarize_samples

    tasks = [{**group, **options, "sample": k} for group in groups
             for k in range(options["samples"])]
    report = ra.run_sweep(tasks, population_sample_task, path, executor=executor,
                       max_workers=None if executor is not None else workers, progress=True,
                       metadata={"versions": ra.versions()})
    if report.failed:
        errors = [r["error"] for r in ra.read_results(path) if "error" in r]
        raise RuntimeError(f"{report.failed} grid task(s) failed; first: {errors[0]}")
    runs, samples = [], options["samples"]
    for i, group in enumerate(groups):
        mine = report.records[i * samples:(i + 1) * samples]  # run_sweep keeps the order
        est = summarize_samples([record["result"] for record in mine])
        est["settings"] = population_settings(
            _population_model(group), samples,
            **_sample_options(int(group["L"]), options["tokens"], samples, options["nodes"],
                              options["seed"]))
        runs.append(rows_from_estimate(group, est, tokens=options["tokens"]))
    return runs


def format_compare(result: dict[str, Any]) -> str:
    """Markdown of either estimator's result: :func:`format_population` or
    :func:`~.sgd_compare.format_markdown`.

    Examples
    --------
    >>> format_compare({"rows": [], "metadata": {}}).splitlines()[0]
    '### Exact-softmax population flow vs the reduced ODEs'
    """
    return format_population(result) if "metadata" in result else format_markdown(result)
