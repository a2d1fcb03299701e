"""The commands that run a model's own hooks, ``derive``, ``figures`` and ``compare``, and
the main job, ``reproduce``: each one's options (``add_*_arguments(parser, model)``) and
its handler (``run_*(args) -> exit status``), rows of :data:`reduced_odes.cli.COMMANDS`.
"""

from __future__ import annotations

import argparse
import json

from ._cli_options import (
    add_backend_option,
    add_executor_options,
    check_run_options,
    run_executor,
    writable,
)
from ._errors import EXIT_OK
from ._figstyle import parse_formats
from ._registry import get_model
from ._reproduce import reproduce

__all__ = ["add_compare_arguments", "add_derive_arguments", "add_figures_arguments",
           "add_reproduce_arguments", "run_compare", "run_derive", "run_figures",
           "run_reproduce"]


# -- derive ----------------------------------------------------------------------------
def add_derive_arguments(parser: argparse.ArgumentParser, model) -> None:
    parser.add_argument("--out", metavar="DIR", default="derivations",
                        help=f"directory for {model.name}.md and {model.name}.tex "
                             f"(default: derivations/)")


def run_derive(args: argparse.Namespace) -> int:
    for path in args.model.export_derivations(writable(args.out, "dir")):
        print(f"wrote {path}")
    return EXIT_OK


# -- figures ---------------------------------------------------------------------------
def add_figures_arguments(parser: argparse.ArgumentParser, model) -> None:
    parser.add_argument("--out", metavar="DIR", default=None,
                        help=f"directory of the figures (default: figures/{model.name})")
    parser.add_argument("--data", metavar="DIR", default=None,
                        help=f"directory of the data files (default: figures/data/{model.name});"
                             f" missing ones are computed first")
    parser.add_argument("--format", default="png,pdf",
                        help="comma-separated formats among png, pdf (default: png,pdf)")


def run_figures(args: argparse.Namespace) -> int:
    model = args.model
    formats = parse_formats(args.format)
    out = writable(args.out or f"figures/{model.name}", "dir")
    data = writable(args.data or f"figures/data/{model.name}", "dir", "data")
    for path in model.figures(out, data, formats, **_model_options(args)):
        print(f"wrote {path}")
    return EXIT_OK


# -- compare ---------------------------------------------------------------------------
def add_compare_arguments(parser: argparse.ArgumentParser, model) -> None:
    parser.add_argument("--quick", action="store_true",
                        help="a small grid (< 2 min on two cores) instead of the full one "
                             "(default: off)")
    parser.add_argument("--json", action="store_true",
                        help="print the result as JSON (default: a table)")
    parser.add_argument("--out", metavar="DIR", default="results",
                        help="directory for the comparison's data files (default: results/)")
    if _runs_in_parallel(model):
        add_executor_options(parser)


def _runs_in_parallel(model) -> bool:
    """Whether the model's ``compare`` takes an ``executor`` (and so ``--workers/--scheduler``)."""
    import inspect

    compare = getattr(model, "compare", None)  # the parser is built for every command
    return compare is not None and "executor" in inspect.signature(compare).parameters


def _model_options(args: argparse.Namespace) -> dict:
    """The values of the options the model added to this command (see ``command_options``)."""
    return {dest: getattr(args, dest) for dest in args.model_options}


def run_compare(args: argparse.Namespace) -> int:
    model = args.model
    out = writable(args.out, "dir")
    if not _runs_in_parallel(model):
        result = model.compare(quick=args.quick, out=out, **_model_options(args))
    else:
        check_run_options(args)
        with run_executor(args) as (executor, workers):
            result = model.compare(quick=args.quick, out=out, executor=executor,
                                   workers=workers, **_model_options(args))
    print(json.dumps(result, indent=2) if args.json else model.format_compare(result))
    return EXIT_OK


# -- reproduce -------------------------------------------------------------------------
def add_reproduce_arguments(parser: argparse.ArgumentParser, model) -> None:
    parser.add_argument("--grid", default="default",
                        help="verification grid of every model (default: default)")
    parser.add_argument("--results", metavar="DIR", default="results",
                        help="working directory: derivations, resumable verify runs "
                             "(<DIR>/<model>) and figures (<DIR>/figures) are written here "
                             "(default: results/)")
    parser.add_argument("--figures", metavar="DIR", default="figures",
                        help="root of the committed figures and of their data "
                             "(<DIR>/data/<model>), which the fresh results are compared with "
                             "(default: figures/)")
    parser.add_argument("--derivations", metavar="DIR", default="derivations",
                        help="directory of the committed derivations (default: derivations/)")
    parser.add_argument("--update-committed", action="store_true",
                        help="copy the fresh results, figures and derivations over the "
                             "committed ones (default: off; they are only compared)")
    parser.add_argument("--only", metavar="MODEL", default=None,
                        help="one model instead of every registered one (default: all)")
    add_backend_option(parser, "as for verify", default="python")


def run_reproduce(args: argparse.Namespace) -> int:
    """The README's main job: every model derived, verified on its grid, drawn and compared."""
    if args.only:
        get_model(args.only)  # an unknown model: bad input, before any directory is made
    writable(args.results, "dir", "results")
    if args.update_committed:
        writable(args.figures, "dir", "figures")
        writable(args.derivations, "dir", "derivations")
    return reproduce(grid=args.grid, results=args.results, figures=args.figures,
                     derivations=args.derivations, update_committed=args.update_committed,
                     only=args.only, backend=args.backend)
