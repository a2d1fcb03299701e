"""``reduced-odes sweep``: :func:`~reduced_odes._integrate.solve` over a TOML grid, resumably.

Each setting of the grid (see :func:`reduced_odes._sweep.load_grid`) is a table of

* model parameters ``L, alpha, wstar, sigma`` (:class:`~reduced_odes.ModelParams`),
* ``closure`` (``linear`` or ``meanfield``; default: the ``--closure`` option),
* solver settings ``method, rtol, atol, t_end, n_output`` (:class:`~reduced_odes.SolverConfig`),
* phase thresholds ``four_gram, onset, emergence, converged``
  (:class:`~reduced_odes.PhaseThresholds`).

Omitted keys take the package defaults.  Every setting is validated before any
work starts, so a bad grid fails at once with exit status 2 and one line on
stderr.  Each finished setting appends one JSON line to the results file; a
rerun skips the settings that already have a result.

Exit status: 0 when every setting has a result, 1 when some setting failed
(its error is recorded in the results file and it is retried by the next run),
2 for bad input.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

__all__ = ["HELP", "add_arguments", "run", "solve_setting"]

HELP = "solve every setting of a TOML grid, in parallel, resumably (one JSON line each)"

MODEL_KEYS = ("L", "alpha", "wstar", "sigma")
SOLVER_KEYS = ("method", "rtol", "atol", "t_end", "n_output")
THRESHOLD_KEYS = ("four_gram", "onset", "emergence", "converged")
ALLOWED_KEYS = (*MODEL_KEYS, "closure", *SOLVER_KEYS, *THRESHOLD_KEYS)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``reduced-odes sweep``."""
    parser.add_argument("--grid", required=True, metavar="FILE.toml",
                        help="TOML file with a [grid] table (lists are crossed) and an optional "
                             "[fixed] table; keys: " + ", ".join(ALLOWED_KEYS))
    parser.add_argument("--out", default="results.jsonl", metavar="FILE.jsonl",
                        help="results file, appended to; settings already in it are skipped "
                             "(default: results.jsonl)")
    parser.add_argument("--workers", type=int, default=None, metavar="N",
                        help="worker processes (default: the number of CPUs)")
    parser.add_argument("--closure", choices=("linear", "meanfield"), default="linear",
                        help="closure of the settings that do not name one (default: linear)")
    parser.add_argument("--no-progress", dest="progress", action="store_false",
                        help="no progress line on stderr")


def _split(setting: dict[str, Any]):
    """``(params, closure, solver, thresholds)`` of one setting; ParameterError if invalid."""
    from ._params import ModelParams, ParameterError, PhaseThresholds, SolverConfig

    unknown = sorted(set(setting) - set(ALLOWED_KEYS))
    if unknown:
        raise ParameterError(f"unknown grid key(s) {unknown}; allowed: {', '.join(ALLOWED_KEYS)}")
    pick = {name: {k: setting[k] for k in keys if k in setting}
            for name, keys in (("model", MODEL_KEYS), ("solver", SOLVER_KEYS),
                               ("thresholds", THRESHOLD_KEYS))}
    params = ModelParams(**pick["model"])
    closure = setting.get("closure", "linear")
    params.check_closure(closure)
    return params, closure, SolverConfig(**pick["solver"]), PhaseThresholds(**pick["thresholds"])


def solve_setting(setting: dict[str, Any]) -> dict[str, Any]:
    """The sweep task: solve one setting and return its ``Trajectory.to_dict()`` document.

    Module level, so that worker processes (and dask) can pickle it by name.
    """
    from ._integrate import solve

    params, closure, solver, thresholds = _split(setting)
    return solve(params, closure, solver, thresholds).to_dict()


def run(args: argparse.Namespace) -> int:
    """Handler of ``reduced-odes sweep``; see the module docstring for the exit status."""
    from ._compile import load_system
    from ._params import ParameterError, SolverConfig
    from ._provenance import versions
    from ._sweep import load_grid, run_sweep

    if args.workers is not None and args.workers < 1:
        raise ParameterError(f"workers={args.workers} must be an integer >= 1")
    try:
        settings = load_grid(args.grid)
    except OSError as exc:
        raise ParameterError(f"grid={args.grid!r} cannot be read: {exc.strerror}") from None
    except ValueError as exc:  # invalid TOML or the wrong shape; the message names the file
        raise ParameterError(f"grid: {exc}") from None
    settings = [{"closure": args.closure} | setting for setting in settings]
    for setting in settings:
        try:
            _split(setting)
        except ParameterError as exc:
            raise ParameterError(f"{exc} (in grid setting {setting})") from None
    for closure in sorted({s["closure"] for s in settings}):
        load_system(closure)  # derive and compile once here, not in every worker
    metadata = {"versions": versions(), "solver_defaults": SolverConfig().as_dict(),
                "grid": os.path.abspath(args.grid)}
    report = run_sweep(settings, solve_setting, args.out, max_workers=args.workers,
                       progress=args.progress, metadata=metadata)
    print(f"sweep: {report.total} settings, {report.skipped} already done, "
          f"{report.completed} completed, {report.failed} failed -> {report.results_path}")
    if report.failed:
        print(f"reduced-odes sweep: {report.failed} setting(s) failed; their errors are in "
              f"{report.results_path} and a rerun retries them", file=sys.stderr)
        return 1
    return 0
