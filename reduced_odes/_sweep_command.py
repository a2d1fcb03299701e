"""``reduced-odes sweep``: :func:`~reduced_odes.solve` over a TOML grid, resumably.

Each setting of the grid (see :func:`reduced_odes._grid.load_grid`) is a table of

* the model's parameters (the fields of ``model.Params``),
* its variant, under the model's variant option (e.g. ``closure``; default: the
  command's option),
* solver settings ``method, rtol, atol, t_end, n_output, backend``
  (:class:`~reduced_odes.SolverConfig`; ``backend`` defaults to the command's ``--backend``),
* the model's phase thresholds, if it has any (``model.Thresholds``).

Omitted keys take the defaults.  Every setting is validated before any work
starts, so a bad grid fails at once with exit status 2 and one line on
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
from pathlib import Path
from typing import Any

from ._backend import NATIVE_MIN_SETTINGS, for_job
from ._cli_options import (
    add_backend_option,
    add_run_options,
    check_run_options,
    repair_if_asked,
    run_executor,
    writable,
)
from ._grid import load_grid
from ._integrate import solve
from ._params import ParameterError, SolverConfig
from ._prepare import prepare
from ._progress import Progress
from ._provenance import platform_stamp, source_stamp, versions
from ._registry import get_model, reference, registered_names
from ._setting import Setting, allowed_keys
from ._sweep import run_sweep

__all__ = ["HELP", "add_arguments", "run", "solve_setting"]

#: Seconds of checking a grid before its progress is shown (then the error of a bad setting
#: found later is the last line on stderr, after the progress lines).
CHECK_QUIET_SECONDS = 2.0
HELP = "solve every setting of a TOML grid, in parallel, resumably (one JSON line each)"


def add_arguments(parser: argparse.ArgumentParser, model) -> None:
    """Options of ``reduced-odes sweep``."""
    parser.add_argument("--grid", required=True, metavar="FILE.toml",
                        help="TOML file with a [grid] table (lists are crossed) and an optional "
                             "[fixed] table; keys: " + ", ".join(allowed_keys(model)))
    parser.add_argument("--out", default="results.jsonl", metavar="FILE.jsonl",
                        help="results file, appended to; settings already in it are skipped "
                             "(default: results.jsonl)")

    add_run_options(parser)
    add_backend_option(parser, f"numba when installed and the grid has at least "
                               f"{NATIVE_MIN_SETTINGS} settings, else python; a grid's own "
                               f"'backend' key wins")
    parser.add_argument(f"--{model.variant_option}", dest="variant", choices=model.variants,
                        default=model.variants[0],
                        help=f"{model.variant_option} of the settings that do not name one "
                             f"(default: {model.variants[0]})")
    parser.add_argument("--no-progress", dest="progress", action="store_false",
                        help="no progress on stderr (default: progress, one plain line per 5%% "
                             "when stderr is not a terminal)")


def solve_setting(setting: dict[str, Any]) -> dict[str, Any]:
    """The sweep task: solve one setting of ``setting["model"]``; its ``to_dict()`` document.

    Module level, so that worker processes (and dask) can pickle it by name.

    Examples
    --------
    A setting holds the model, its parameters and any solver option:

    >>> document = solve_setting({"model": "deep_linear", "s": 2.0, "sigma": 1e-4,
    ...                           "rtol": 1e-8})
    >>> round(document["phases"]["T_half"], 4), document["solver"]["rtol"]
    (4.7785, 1e-08)
    """
    return solve(Setting.from_mapping(setting)).to_dict()


def _grid_settings(args: argparse.Namespace, model) -> tuple[list[dict[str, Any]], str]:
    """Every setting of ``args.grid``, its defaults filled in, each checked (before any
    work), and the backend of the job; ParameterError naming the grid and the first bad
    setting."""
    try:
        settings = load_grid(args.grid, keys=["model", *allowed_keys(model)])
    except OSError as exc:
        raise ParameterError(f"grid={args.grid!r} cannot be read: {exc.strerror}") from None
    except ValueError as exc:  # invalid TOML or the wrong shape; the message names the file
        raise ParameterError(f"grid: {exc}") from None
    ref = reference(model)
    _check_models(model, ref, settings)
    backend = for_job(args.backend, len(settings))
    defaults = {"model": ref, model.variant_option: args.variant, "backend": backend}
    for i, setting in enumerate(settings):  # in place: a large grid is not held twice
        settings[i] = defaults | setting | {"model": ref}
    # On a terminal a line rewritten in place; in a log, plain lines (one per 5% or 30 s).
    # None in the first seconds: a small grid's exit 2 leaves its error line alone.
    report = Progress("checking grid", len(settings), show=args.progress,
                      quiet=CHECK_QUIET_SECONDS)
    try:
        for done, setting in enumerate(settings, 1):
            try:
                Setting.from_mapping(setting, model)
            except ParameterError as exc:
                raise ParameterError(f"{exc} (in grid setting {setting})") from None
            if done % 1000 == 0:
                report.update(done)
        report.update(len(settings))
    finally:  # the progress line ends before the error's
        report.close()
    return settings, backend


def _check_models(model, ref: str, settings: list[dict[str, Any]]) -> None:
    """ParameterError unless every ``model`` a grid names is the command's (``--model``).

    A grid is data: it may name a registered model (built-in or an entry point), or repeat
    the command's ``--model`` as it was given; a model from a file or a module comes from
    ``--model`` only.  Nothing a grid names is imported before it passes that check.
    """
    checked = {model.name, ref}
    for value in {repr(s["model"]): s["model"] for s in settings if "model" in s}.values():
        if not isinstance(value, str):
            raise ParameterError(f"grid key model={value!r} is not a model reference; "
                                 f"allowed: {ref!r} (the command's --model) or no model key")
        if value in checked:
            continue
        if value not in (names := registered_names()):
            raise ParameterError(f"grid key model={value!r} is not registered; allowed in a "
                                 f"grid: {ref!r} (the command's --model) or a registered "
                                 f"name ({', '.join(names)}); a model from a file or module "
                                 f"comes from --model only")
        if get_model(value) is not model:
            raise ParameterError(f"grid key model={value!r} is not the command's model "
                                 f"{ref!r}; allowed: {ref!r} or no model key (one sweep "
                                 f"per model, each with its --model)")
        checked.add(value)


def run(args: argparse.Namespace) -> int:
    """Handler of ``reduced-odes sweep``; see the module docstring for the exit status."""
    model = args.model
    writable(args.out, "file")
    check_run_options(args)
    settings, backend = _grid_settings(args, model)
    repair_if_asked(args, Path(args.out))
    metadata = {"versions": versions(), "platform": platform_stamp(),
                "solver_defaults": SolverConfig().as_dict(),
                "grid": os.path.abspath(args.grid), "source": source_stamp()}

    def compile_once(pending: list[dict[str, Any]]) -> None:  # here, not in every worker
        prepare(model, sorted({s[model.variant_option] for s in pending}), backend)

    with run_executor(args) as (executor, workers):
        report = run_sweep(settings, solve_setting, args.out, executor=executor,
                           max_workers=workers, progress=args.progress, metadata=metadata,
                           prepare=compile_once, collect=False)
    print(f"sweep: {report.total} settings, {report.skipped} already done, "
          f"{report.completed} completed, {report.failed} failed -> {report.results_path}")
    if report.failed:
        print(f"reduced-odes sweep: {report.failed} setting(s) failed; their errors are in "
              f"{report.results_path} and a rerun retries them", file=sys.stderr)
        return 1
    return 0
