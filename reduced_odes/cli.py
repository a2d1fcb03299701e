"""The ``reduced-odes`` command line.

Every command takes ``--model NAME`` (a registered model, ``path/to/file.py:OBJECT``
or ``package.module:OBJECT``; default ``induction_head``); the model's
parameters become options of ``solve``, and a command beyond ``solve`` is
offered only for a model that supplies its hook.

Exit status: 0 success, 1 a verified claim failed, 2 bad input, or a
trajectory that failed with nothing to show (before its first step, on every
backend installed; one line on stderr, no traceback),
3 ``solve``: a phase was not reached within the run (``phase_outcomes`` in the
JSON says why; a run that stopped part-way, e.g. at its domain's edge, keeps and
prints the phases it reached before), 4 ``reproduce``: the fresh results differ
from the committed ones beyond the stated tolerance (the differences are
listed), 130 interrupted.  An ill-conditioned phase time (``solve``'s
cross-check: ``phase_outcomes`` gives its error estimate) is one warning line on
stderr, with exit status 0; so is a run that stopped part-way after its last phase.
Every output location, input file and parameter is checked before any work.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, NoReturn

from . import _analysis_command, _model_commands, _sweep_command
from ._backend import NATIVE_MIN_SETTINGS, check_backend
from ._cli_options import (
    add_backend_option,
    add_run_options,
    check_run_options,
    run_executor,
    writable,
)
from ._errors import (
    EXIT_BAD_INPUT,
    EXIT_DIFFERS,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_NOT_REACHED,
    EXIT_OK,
    DerivationError,
)
from ._integrate import solve
from ._params import METHODS, ParameterError, SolverConfig
from ._plateaus import plateau_predictions
from ._registry import DEFAULT_MODEL, get_model, registered_models
from ._results import trajectory_record, write_json
from ._trajectory import DomainError
from ._verify import check_grid, verdict, verify
from ._version import __version__

# The exit statuses are defined with the errors (reduced_odes._errors), re-exported here.
__all__ = ["EXIT_BAD_INPUT", "EXIT_DIFFERS", "EXIT_FAILED", "EXIT_INTERRUPTED",
           "EXIT_NOT_REACHED", "EXIT_OK", "main", "run"]


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


def _add_parameter_options(parser: argparse.ArgumentParser, cls, kind_of: str = "param"
                           ) -> None:
    """One ``--<field>`` option per declared field of the dataclass ``cls``, with its range
    (``kind_of``: the prefix of its destination, ``param`` or ``threshold``)."""
    if cls is None:
        return
    for item in cls.declared():
        allowed = item.metadata["allowed"]
        kind = {"flag": _flag, "choice": str}.get(allowed.kind, float)
        parser.add_argument(f"--{item.name}", dest=f"{kind_of}_{item.name}", type=kind,
                            default=item.default, metavar="X" if kind is float else None,
                            choices=allowed.options or None,
                            help=f"{item.metadata['help']}; {allowed.text} "
                                 f"(default: {item.default})")


def _parameter_values(args: argparse.Namespace, cls, kind_of: str = "param") -> dict:
    return {} if cls is None else {f.name: getattr(args, f"{kind_of}_{f.name}")
                                   for f in cls.declared()}


def _thresholds(args: argparse.Namespace, model):
    """The model's phase thresholds from the options; None where every one is its default
    (the run and its document are then those of ``solve`` without thresholds)."""
    if model.Thresholds is None:
        return None
    thresholds = model.Thresholds(**_parameter_values(args, model.Thresholds, "threshold"))
    return None if thresholds == model.Thresholds() else thresholds


def _add_variant_option(parser, model, *, with_all: bool = False) -> None:
    choices = (*model.variants, "all") if with_all else model.variants
    default = "all" if with_all else model.variants[0]
    parser.add_argument(f"--{model.variant_option}", dest="variant", choices=choices,
                        default=default, help=f"{model.variant_option} (default: {default})")


# -- solve -----------------------------------------------------------------------------
def _add_solve_arguments(parser: argparse.ArgumentParser, model) -> None:
    _add_parameter_options(parser, model.Params)
    _add_variant_option(parser, model)
    _add_parameter_options(parser, model.Thresholds, "threshold")  # where phases are read
    parser.add_argument("--method", choices=METHODS, default="LSODA",
                        help="stiff solver (default: LSODA)")
    for name in ("rtol", "atol"):  # help from SolverConfig's declaration: one source
        item = next(f for f in SolverConfig.declared() if f.name == name)
        parser.add_argument(f"--{name}", type=float, default=item.default, metavar="X",
                            help=f"{item.metadata['help']}; {item.metadata['allowed'].text} "
                                 f"(default: {item.default:g})")
    add_backend_option(parser, "python for one trajectory")
    parser.add_argument("--cross-check", type=_flag, default=True, metavar="BOOL",
                        help="solve again at a hundredth of the tolerances to estimate each "
                             "phase time's error and mark ill-conditioned ones; 2 to 4 times "
                             "the cost (default: true)")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON document (default: a table)")
    parser.add_argument("--out", metavar="FILE", default=None,
                        help="also write the trajectory (phases, series, versions) as JSON "
                             "(default: none)")
    parser.add_argument("--predictions", action="store_true",
                        help="also report each plateau's saddle with its predicted escape "
                             "times, and the predicted rate of convergence, beside the "
                             "measured ones (JSON: 'predictions'; default: off)")


def _cmd_solve(args: argparse.Namespace) -> int:
    model = args.model
    params = model.Params(**_parameter_values(args, model.Params))
    thresholds = _thresholds(args, model)
    solver = SolverConfig(method=args.method, rtol=args.rtol, atol=args.atol,
                          backend=args.backend, cross_check=args.cross_check)
    if args.out is not None:
        writable(args.out, "file")
    try:
        trajectory = solve(params, args.variant, solver, thresholds, model=model)
    except DomainError as exc:
        if exc.trajectory is None:  # stopped before its first step: nothing to show
            raise
        trajectory = exc.trajectory
    document = trajectory.to_dict()
    if args.predictions:  # beside the measured values; never in a written file
        document["predictions"] = plateau_predictions(trajectory)
    if args.out:
        write_json(args.out, trajectory_record(trajectory))
    status = _phase_status(trajectory)
    if args.json:
        print(json.dumps(document, indent=2))
        return status
    settings = "  ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
                         for k, v in document["params"].items())
    print(f"model={model.name}  {model.variant_option}={args.variant}  {settings}")
    print(_format_table([(k, f"{v:.6g}" if v is not None else "not reached",
                          _estimate_text(document["phase_outcomes"][k]))
                         for k, v in document["phases"].items()],
                        ("phase", "time", "error estimate")))
    print()
    print(_format_table([(k, f"{v:.6g}" if v is not None else "n/a")
                         for k, v in document["final"].items()], ("final", "value")))
    if args.predictions:
        print("\npredictions: " + json.dumps(document["predictions"]))
    s = document["solver"]
    print(f"\nsolver {s['method']} rtol={s['rtol']:g} atol={s['atol']:g}: "
          f"nfev={s['nfev']} njev={s['njev']} steps={s['steps']} backend={s['backend']}")
    if s.get("atol_floor"):  # an absolute error in ln x is a relative one in x: >= eps
        print("atol of the log coordinates raised to the machine epsilon: " +
              ", ".join(f"{k}={v:.3g}" for k, v in s["atol_floor"].items()))
    for key in ("fallback_reason", "stopped"):
        if s[key]:
            print(f"{key.replace('_', ' ')}: {s[key]}")
    return status


def _estimate_text(outcome: dict) -> str:
    """A phase's cross-check for the table: its relative error estimate, and the mark."""
    if "ill_conditioned" not in outcome:
        return "-"
    estimate = outcome["error_estimate"]
    text = "n/a" if estimate is None else f"{estimate:.1e}"
    return f"{text} ill-conditioned" if outcome["ill_conditioned"] else text


def _phase_status(trajectory) -> int:
    """EXIT_NOT_REACHED (with one stderr line) if a phase was not reached, else EXIT_OK; one
    warning line if a phase is ill-conditioned."""
    if trajectory.ill_conditioned:
        phases = "; ".join(f"{k} ({v})" for k, v in trajectory.ill_conditioned.items())
        print(f"reduced-odes solve: warning: ill-conditioned phase time: {phases}",
              file=sys.stderr)
    if not trajectory.unreached:
        if trajectory.stopped:  # every phase was reached before: they stand
            print(f"reduced-odes solve: warning: every phase was reached before the run "
                  f"stopped: {trajectory.stopped}", file=sys.stderr)
        return EXIT_OK
    reasons = "; ".join(f"{k} {v}" for k, v in trajectory.unreached.items())
    print(f"reduced-odes solve: phase not reached: {reasons}", file=sys.stderr)
    return EXIT_NOT_REACHED


# -- models ----------------------------------------------------------------------------
def _add_models_arguments(parser: argparse.ArgumentParser, model) -> None:
    parser.add_argument("--json", action="store_true",
                        help="a JSON list of {name, description, variants, commands} "
                             "(default: a table)")


def _commands_of(model) -> list[str]:
    """The commands ``model`` offers: solve, sweep, and each whose hook it supplies."""
    return ["solve", "sweep", *[name for name, command in COMMANDS.items()
                                if command.hook and model.supports(command.hook)]]


def _cmd_models(args: argparse.Namespace) -> int:
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
    grids = tuple(getattr(model, "grids", ("quick", "default", "full")))
    # A model may declare no grid: every command still parses, and verify refuses in one line.
    parser.add_argument("--grid", choices=grids or None, default=grids[0] if grids else None,
                        help=f"verification grid (default: {grids[0] if grids else 'none'}; "
                             f"'default' is the main job's)")
    parser.add_argument("--json", action="store_true",
                        help="print the claims as JSON (default: a table)")
    parser.add_argument("--out", metavar="DIR", default=None,
                        help="directory for raw per-setting results and the verdict "
                             "(default: results/<model>); an interrupted run resumes from it")
    add_run_options(parser)
    add_backend_option(parser, f"numba when installed and the grid has at least "
                               f"{NATIVE_MIN_SETTINGS} settings, else python")


def _cmd_verify(args: argparse.Namespace) -> int:
    check_grid(args.model, args.grid)  # before the output directory is made
    out = writable(args.out if args.out is not None else f"results/{args.model.name}", "dir")
    check_run_options(args, out / f"verify-{args.grid}.jsonl")
    with run_executor(args) as (executor, workers):
        report = verify(args.model, args.grid, args.variant, out, executor=executor,
                        max_workers=workers, progress=getattr(args, "progress", True),
                        backend=getattr(args, "backend", "auto"))
    print(json.dumps(report.as_dict(), indent=2) if args.json else verdict(report))
    return EXIT_OK if report.passed else EXIT_FAILED


class Command(NamedTuple):
    """One subcommand: its help line, what adds its options (``add_arguments(parser,
    model)``), what runs it (``handler(args) -> exit status``) and the model hook it needs
    (None: every model has it)."""

    help: str
    add_arguments: Callable[[argparse.ArgumentParser, Any], None]
    handler: Callable[[argparse.Namespace], int]
    hook: str | None = None


#: The subcommands, in the order ``--help`` lists them: a new command is one row.
COMMANDS: dict[str, Command] = {
    "models": Command("list the registered models", _add_models_arguments, _cmd_models),
    "solve": Command("integrate one trajectory until it settles and report its phase times",
                     _add_solve_arguments, _cmd_solve),
    "derive": Command("write the derivations as Markdown and LaTeX",
                      _model_commands.add_derive_arguments, _model_commands.run_derive,
                      "export_derivations"),
    "verify": Command("check a model's predictions on a grid and print the verdict table",
                      _add_verify_arguments, _cmd_verify, "claims"),
    "compare": Command("ground truth (SGD on the unreduced model) against the reduced ODEs",
                       _model_commands.add_compare_arguments, _model_commands.run_compare,
                       "compare"),
    "reproduce": Command("the main job: every model derived, verified on its default grid "
                         "and drawn", _model_commands.add_reproduce_arguments,
                         _model_commands.run_reproduce),
    "sweep": Command(_sweep_command.HELP, _sweep_command.add_arguments, _sweep_command.run),
    "figures": Command("draw the figures (PNG, PDF) from the data files in "
                       "figures/data/<model>", _model_commands.add_figures_arguments,
                       _model_commands.run_figures, "figures"),
}


def _analysis(name: str) -> Command:
    """An analysis command (:mod:`reduced_odes._analysis_command`): the model's parameters
    and variant, then the command's own options."""
    def add(parser: argparse.ArgumentParser, model) -> None:
        _add_parameter_options(parser, model.Params)
        _add_variant_option(parser, model)
        _analysis_command.add_arguments(name, parser, model)

    def handle(args: argparse.Namespace) -> int:
        params = args.model.Params(**_parameter_values(args, args.model.Params))
        return _analysis_command.run(name, args, params)

    return Command(_analysis_command.COMMANDS[name], add, handle)


COMMANDS.update({name: _analysis(name) for name in _analysis_command.COMMANDS})


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
    parser = _Parser(prog="reduced-odes",
                     description="Derive, integrate and verify the reduced training dynamics "
                                 "of toy neural networks.")
    parser.add_argument("--version", action="version", version=f"reduced-odes {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (help_text, add_arguments, handler, hook) in COMMANDS.items():
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


def run() -> NoReturn:
    """The ``reduced-odes`` command: :func:`main`, then the exit.

    The interpreter's last garbage collections would walk every object that numba,
    SymPy and matplotlib created, a quarter of a second at each exit; frozen, they are
    skipped.  Every file was closed and the standard streams are still flushed.
    """
    import gc

    code = main()
    gc.freeze()
    sys.exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``reduced-odes`` and ``python -m reduced_odes`` (see :func:`run`); the
    exit status.  Callable in-process, e.g. ``main(["solve", "--L", "200"])``."""
    argv = _join_negative_values(sys.argv[1:] if argv is None else list(argv))
    command = next((a for a in argv if not a.startswith("-")), "reduced-odes")
    try:
        model = get_model(_model_reference(argv))
        args = build_parser(model).parse_args(argv)
        args.model = model
        if args.hook and not model.supports(args.hook):
            raise ParameterError(f"model={model.name!r} does not supply '{args.command}'; "
                                 f"its commands: {', '.join(_commands_of(model))}")
        check_backend(getattr(args, "backend", "auto"))  # before any work
        return args.handler(args)
    except (ParameterError, DomainError, DerivationError) as exc:
        # One line, always: a message is written as one, this joins any that is not.
        print(f"reduced-odes {command}: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print(f"reduced-odes {command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # e.g. `solve --json | head -1`: the reader left, nothing to say
        import os

        # Point stdout at /dev/null, so that the interpreter's final flush is quiet too.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except OSError as exc:  # a file vanished or a disk filled up after the up-front checks
        where = f" {exc.filename!r}" if exc.filename else ""
        print(f"reduced-odes {command}: error:{where} {exc.strerror or exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
