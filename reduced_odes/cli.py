"""The ``reduced-odes`` command line.

Every command takes ``--model NAME`` (a registered model, ``path/to/file.py:OBJECT``
or ``package.module:OBJECT``; default ``induction_head``); the model's
parameters become options of ``solve``, and a command beyond ``solve`` is
offered only for a model that supplies its hook.

Exit status: 0 success, 1 a verified claim failed, 2 bad input or a
trajectory that left its model's domain (one line on stderr, no traceback).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from ._params import METHODS, ParameterError

__all__ = ["main"]

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2
DEFAULT_MODEL = "induction_head"


def _format_table(rows: Sequence[Sequence], header: Sequence[str]) -> str:
    cells = [list(map(str, header))] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _flag(text: str) -> bool:
    if text.lower() in ("true", "1", "yes"):
        return True
    if text.lower() in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"{text!r} is not true or false")


def _add_parameter_options(parser: argparse.ArgumentParser, cls) -> None:
    """One ``--<field>`` option per declared field of the dataclass ``cls``, with its range."""
    if cls is None:
        return
    for item in cls.declared():
        allowed = item.metadata["allowed"]
        kind = {"flag": _flag, "choice": str}.get(allowed.kind, float)
        parser.add_argument(f"--{item.name}", dest=f"param_{item.name}", type=kind,
                            default=item.default, metavar="X" if kind is float else None,
                            choices=allowed.options or None,
                            help=f"{item.metadata['help']}; {allowed.text} "
                                 f"(default: {item.default})")


def _parameter_values(args: argparse.Namespace, cls) -> dict:
    return {} if cls is None else {f.name: getattr(args, f"param_{f.name}")
                                   for f in cls.declared()}


def _add_variant_option(parser, model, *, with_all: bool = False) -> None:
    choices = (*model.variants, "all") if with_all else model.variants
    default = "all" if with_all else model.variants[0]
    parser.add_argument(f"--{model.variant_option}", dest="variant", choices=choices,
                        default=default, help=f"{model.variant_option} (default: {default})")


# -- solve -----------------------------------------------------------------------------
def _add_solve_arguments(parser: argparse.ArgumentParser, model) -> None:
    _add_parameter_options(parser, model.Params)
    _add_variant_option(parser, model)
    parser.add_argument("--method", choices=METHODS, default="LSODA",
                        help="stiff solver (default: LSODA)")
    parser.add_argument("--rtol", type=float, default=1e-10,
                        help="relative tolerance in (0, 1) (default: 1e-10)")
    parser.add_argument("--atol", type=float, default=1e-12,
                        help="absolute tolerance > 0 (default: 1e-12)")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("--out", metavar="FILE", default=None,
                        help="also write the trajectory (phases, series, versions) as JSON")


def _cmd_solve(args: argparse.Namespace) -> int:
    from ._integrate import solve
    from ._params import SolverConfig

    model = args.model
    params = model.Params(**_parameter_values(args, model.Params))
    solver = SolverConfig(method=args.method, rtol=args.rtol, atol=args.atol)
    _check_output_file(args.out)
    trajectory = solve(params, args.variant, solver, model=model)
    document = trajectory.to_dict()
    if args.out:
        from ._results import trajectory_record, write_json

        write_json(args.out, trajectory_record(trajectory))
    if args.json:
        print(json.dumps(document, indent=2))
        return EXIT_OK
    settings = "  ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
                         for k, v in document["params"].items())
    print(f"model={model.name}  {model.variant_option}={args.variant}  {settings}")
    print(_format_table([(k, f"{v:.6g}" if v is not None else "not reached")
                         for k, v in document["phases"].items()], ("phase", "time")))
    print()
    print(_format_table([(k, f"{v:.6g}" if v is not None else "n/a")
                         for k, v in document["final"].items()], ("final", "value")))
    s = document["solver"]
    print(f"\nsolver {s['method']} rtol={s['rtol']:g} atol={s['atol']:g}: "
          f"nfev={s['nfev']} njev={s['njev']} steps={s['steps']}")
    return EXIT_OK


def _check_output_file(path: str | None) -> None:
    """ParameterError unless ``path`` can be written (checked before any work)."""
    if path is None:
        return
    target = Path(path)
    if target.is_dir():
        raise ParameterError(f"out={path!r} is a directory; allowed: a file path")
    parent = target.parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise ParameterError(f"out={path!r}: {str(parent)!r} is not a directory")
    import os

    if not os.access(parent, os.W_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise ParameterError(f"out={path!r} is not writable")


# -- models ----------------------------------------------------------------------------
def _add_models_arguments(parser: argparse.ArgumentParser, model) -> None:
    parser.add_argument("--json", action="store_true",
                        help="a JSON list of {name, description, variants, commands}")


_HOOKS = {"verify": "claims", "derive": "export_derivations", "figures": "figures",
          "compare": "compare"}


def _commands_of(model) -> list[str]:
    return ["solve", "sweep", *[c for c, hook in _HOOKS.items() if model.supports(hook)]]


def _cmd_models(args: argparse.Namespace) -> int:
    from ._registry import registered_models

    models = registered_models()
    if args.json:
        print(json.dumps([{"name": m.name, "description": m.description,
                           "variants": list(m.variants), "commands": _commands_of(m)}
                          for m in models], indent=2))
        return EXIT_OK
    print(_format_table([(m.name, ", ".join(m.variants), m.description) for m in models],
                        ("model", "variants", "description")))
    return EXIT_OK


# -- verify ----------------------------------------------------------------------------
def _add_verify_arguments(parser: argparse.ArgumentParser, model) -> None:
    _add_variant_option(parser, model, with_all=True)
    grids = getattr(model, "grids", ("quick", "default", "full"))
    parser.add_argument("--grid", choices=grids, default=grids[0],
                        help=f"verification grid (default: {grids[0]}; 'default' is the "
                             f"main job's)")
    parser.add_argument("--json", action="store_true", help="print the claims as JSON")
    parser.add_argument("--out", metavar="DIR", default=None,
                        help="directory for raw per-setting results and the verdict "
                             "(default: results/<model>); an interrupted run resumes from it")
    parser.add_argument("--workers", type=int, default=None,
                        help="processes (default: all cores)")


def _cmd_verify(args: argparse.Namespace) -> int:
    from ._verify import verify

    if args.workers is not None and args.workers < 1:
        raise ParameterError(f"workers={args.workers} must be an integer >= 1")
    out = args.out if args.out is not None else f"results/{args.model.name}"
    executor = None
    if args.workers is not None:
        from concurrent.futures import ProcessPoolExecutor

        executor = ProcessPoolExecutor(max_workers=args.workers)
    try:
        report = verify(args.model, args.grid, args.variant, out, executor=executor)
    finally:
        if executor is not None:
            executor.shutdown()
    if args.json:
        print(json.dumps(report.as_dict(), indent=2))
    else:
        print(report.table())
        for row in report.skipped:
            print(f"skipped: {row}")
        checked = [c for c in report.claims if not c.informative]
        print(f"\n{sum(c.passed for c in checked)} of {len(checked)} claims passed "
              f"({len(report.claims) - len(checked)} informative rows); "
              f"raw results in {report.files['raw']}")
    return EXIT_OK if report.passed else EXIT_FAILED


# -- derive ----------------------------------------------------------------------------
def _add_derive_arguments(parser: argparse.ArgumentParser, model) -> None:
    parser.add_argument("--out", metavar="DIR", default="derivations",
                        help=f"directory for {model.name}.md and {model.name}.tex "
                             f"(default: derivations/)")


def _cmd_derive(args: argparse.Namespace) -> int:
    for path in args.model.export_derivations(Path(args.out)):
        print(f"wrote {path}")
    return EXIT_OK


# -- figures ---------------------------------------------------------------------------
def _add_figures_arguments(parser: argparse.ArgumentParser, model) -> None:
    parser.add_argument("--out", metavar="DIR", default=None,
                        help=f"directory of the figures (default: figures/{model.name})")
    parser.add_argument("--data", metavar="DIR", default=None,
                        help=f"directory of the data files (default: figures/data/{model.name});"
                             f" missing ones are computed first")
    parser.add_argument("--format", default="png,pdf",
                        help="comma-separated formats among png, pdf (default: png,pdf)")


def _cmd_figures(args: argparse.Namespace) -> int:
    from ._figstyle import parse_formats

    model = args.model
    formats = parse_formats(args.format)
    out = Path(args.out or f"figures/{model.name}")
    data = Path(args.data or f"figures/data/{model.name}")
    for path in model.figures(out, data, formats, **_model_options(args)):
        print(f"wrote {path}")
    return EXIT_OK


# -- compare ---------------------------------------------------------------------------
def _add_compare_arguments(parser: argparse.ArgumentParser, model) -> None:
    parser.add_argument("--quick", action="store_true",
                        help="a small grid (< 2 min on two cores) instead of the full one")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--out", metavar="DIR", default="results",
                        help="directory for the comparison's data files (default: results/)")


def _model_options(args: argparse.Namespace) -> dict:
    """The values of the options the model added to this command (see ``command_options``)."""
    return {dest: getattr(args, dest) for dest in args.model_options}


def _cmd_compare(args: argparse.Namespace) -> int:
    model = args.model
    result = model.compare(quick=args.quick, out=Path(args.out), **_model_options(args))
    print(json.dumps(result, indent=2) if args.json else model.format_compare(result))
    return EXIT_OK


# -- reproduce -------------------------------------------------------------------------
def _add_reproduce_arguments(parser: argparse.ArgumentParser, model) -> None:
    parser.add_argument("--grid", default="default",
                        help="verification grid of every model (default: default)")
    parser.add_argument("--figures", metavar="DIR", default="figures",
                        help="root of the figures; each model draws into <DIR>/<model> "
                             "from <DIR>/data/<model> (default: figures/)")
    parser.add_argument("--derivations", metavar="DIR", default="derivations",
                        help="directory of the derivations (default: derivations/)")
    parser.add_argument("--results", metavar="DIR", default="results",
                        help="root of the resumable verify runs, <DIR>/<model> "
                             "(default: results/)")
    parser.add_argument("--only", metavar="MODEL", default=None,
                        help="one model instead of every registered one")


def _reproduce_one(model, args: argparse.Namespace) -> int:
    """Derive, verify on the grid and draw the figures of one model; its exit status."""
    import shutil

    status = EXIT_OK
    print(f"== {model.name}", flush=True)
    if model.supports("export_derivations"):
        status = _cmd_derive(argparse.Namespace(model=model, out=args.derivations))
    data = Path(args.figures) / "data" / model.name
    if model.supports("claims"):
        results = Path(args.results) / model.name
        status = max(status, _cmd_verify(argparse.Namespace(
            model=model, grid=args.grid, variant="all", json=False, out=str(results),
            workers=None)))
        data.mkdir(parents=True, exist_ok=True)
        for suffix in ("jsonl", "json", "md"):
            shutil.copyfile(results / f"verify-{args.grid}.{suffix}",
                            data / f"verify-{args.grid}.{suffix}")
    if model.supports("figures"):
        status = max(status, _cmd_figures(argparse.Namespace(
            model=model, out=str(Path(args.figures) / model.name), data=str(data),
            format="png,pdf", model_options=[])))
    return status


def _cmd_reproduce(args: argparse.Namespace) -> int:
    """The README's main job: every model derived, verified on its grid, and drawn."""
    from ._registry import get_model, registered_models

    models = [get_model(args.only)] if args.only else registered_models()
    return max(_reproduce_one(model, args) for model in models)


#: Subcommands: name -> (help, argument builder, handler, model hook the command needs).
COMMANDS: dict[str, tuple[str, Callable, Callable, str | None]] = {
    "models": ("list the registered models", _add_models_arguments, _cmd_models, None),
    "solve": ("integrate one trajectory until it settles and report its phase times",
              _add_solve_arguments, _cmd_solve, None),
    "derive": ("write the derivations as Markdown and LaTeX", _add_derive_arguments,
               _cmd_derive, "export_derivations"),
    "verify": ("check a model's predictions on a grid and print the verdict table",
               _add_verify_arguments, _cmd_verify, "claims"),
    "compare": ("ground truth (SGD on the unreduced model) against the reduced ODEs",
                _add_compare_arguments, _cmd_compare, "compare"),
    "reproduce": ("the main job: every model derived, verified on its default grid and drawn",
                  _add_reproduce_arguments, _cmd_reproduce, None),
    "sweep": (None, None, None, None),
    "figures": ("draw the figures (PNG, PDF) from the data files in figures/data/<model>",
                _add_figures_arguments, _cmd_figures, "figures"),
}


class _Parser(argparse.ArgumentParser):
    """Usage errors as one stderr line and exit status 2, like every other bad input."""

    def error(self, message):
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


def _model_reference(argv: Sequence[str]) -> str:
    """The ``--model`` value of ``argv`` (read before the model's options are known)."""
    finder = argparse.ArgumentParser(add_help=False)
    finder.add_argument("--model", default=DEFAULT_MODEL)
    known, _ = finder.parse_known_args(argv)
    return known.model


def build_parser(model) -> argparse.ArgumentParser:
    """The full parser, with ``model``'s options on every command."""
    from . import _sweep_command
    from ._version import __version__

    parser = _Parser(prog="reduced-odes",
                     description="Derive, integrate and verify the reduced training dynamics "
                                 "of toy neural networks.")
    parser.add_argument("--version", action="version", version=f"reduced-odes {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (help_text, add_arguments, handler, hook) in COMMANDS.items():
        if name == "sweep":
            help_text, handler = _sweep_command.HELP, _sweep_command.run
            add_arguments = _sweep_command.add_arguments
        command = sub.add_parser(name, help=help_text, description=help_text)
        command.add_argument("--model", default=DEFAULT_MODEL,
                             help="registered model name, path/to/file.py:OBJECT or "
                                  "package.module:OBJECT (default: induction_head); "
                                  "see 'reduced-odes models'")
        add_arguments(command, model)
        known = {action.dest for action in command._actions}
        if model.supports("command_options"):
            model.command_options(name, command)
        added = [a.dest for a in command._actions if a.dest not in known]
        command.set_defaults(handler=handler, hook=hook, model_options=added)
    return parser


def _join_negative_values(argv: Sequence[str]) -> list[str]:
    """``--x -1e-3`` -> ``--x=-1e-3``, so that negative numbers reach the range check."""
    out: list[str] = []
    for token in argv:
        if out and out[-1].startswith("--") and "=" not in out[-1] and token.startswith("-"):
            try:
                float(token)
            except ValueError:
                pass
            else:
                out[-1] = f"{out[-1]}={token}"
                continue
        out.append(token)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``reduced-odes`` and ``python -m reduced_odes``."""
    from ._contract import DerivationError
    from ._registry import get_model
    from ._trajectory import DomainError

    argv = _join_negative_values(sys.argv[1:] if argv is None else list(argv))
    command = next((a for a in argv if not a.startswith("-")), "reduced-odes")
    try:
        model = get_model(_model_reference(argv))
        args = build_parser(model).parse_args(argv)
        args.model = model
        if args.hook and not model.supports(args.hook):
            raise ParameterError(f"model={model.name!r} does not supply '{args.command}'; "
                                 f"its commands: {', '.join(_commands_of(model))}")
        return args.handler(args)
    except (ParameterError, DomainError, DerivationError) as exc:
        print(f"reduced-odes {command}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print(f"reduced-odes {command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `solve --json | head -1`: the reader left, nothing to say
        sys.stderr.close()
        return EXIT_OK
