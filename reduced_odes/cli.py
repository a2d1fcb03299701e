"""The ``reduced-odes`` command line.

Exit status: 0 success, 1 a verified claim failed, 2 bad input or a
trajectory that left its closure's domain (one line on stderr, no traceback).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence

from . import _sweep_command
from ._params import METHODS, ModelParams, ParameterError, SolverConfig

__all__ = ["main"]

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2


def _add_model_arguments(parser: argparse.ArgumentParser, closures: Sequence[str]) -> None:
    parser.add_argument("--closure", choices=closures, default="linear",
                        help="softmax closure (default: linear)")
    parser.add_argument("--L", type=float, default=200, help="sequence length, integer >= 4")
    parser.add_argument("--alpha", type=float, default=0.5, help="4-gram weight in (0, 1)")
    parser.add_argument("--wstar", type=float, default=0.3, help="target query-key weight")
    parser.add_argument("--sigma", type=float, default=1e-4, help="initialisation scale > 0")
    parser.add_argument("--method", choices=METHODS, default="LSODA", help="stiff solver")
    parser.add_argument("--rtol", type=float, default=1e-10, help="relative tolerance")
    parser.add_argument("--atol", type=float, default=1e-12, help="absolute tolerance")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("--out", metavar="FILE", default=None,
                        help="also write the trajectory (phases, arrays, versions) as JSON")


def _format_table(rows: Sequence[Sequence], header: Sequence[str]) -> str:
    cells = [list(map(str, header))] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _cmd_solve(args: argparse.Namespace) -> int:
    from ._integrate import solve

    params = ModelParams(L=args.L, alpha=args.alpha, wstar=args.wstar, sigma=args.sigma)
    solver = SolverConfig(method=args.method, rtol=args.rtol, atol=args.atol)
    trajectory = solve(params, args.closure, solver)
    document = trajectory.to_dict()
    if args.out:
        from ._results import trajectory_record, write_json

        write_json(args.out, trajectory_record(trajectory))
    if args.json:
        print(json.dumps(document, indent=2))
        return EXIT_OK
    print(f"closure={args.closure}  L={params.L}  alpha={params.alpha}  "
          f"wstar={params.wstar}  sigma={params.sigma:g}")
    print(_format_table([(k, f"{v:.6g}" if v is not None else "not reached")
                         for k, v in document["phases"].items()], ("phase", "time")))
    print()
    print(_format_table([(k, f"{v:.6g}") for k, v in document["final"].items()],
                        ("final", "value")))
    s = document["solver"]
    print(f"\nsolver {s['method']} rtol={s['rtol']:g} atol={s['atol']:g}: "
          f"nfev={s['nfev']} njev={s['njev']} steps={s['steps']}")
    return EXIT_OK


def _add_verify_arguments(parser: argparse.ArgumentParser) -> None:
    from ._verify import CLOSURE_CHOICES, GRIDS

    parser.add_argument("--closure", choices=CLOSURE_CHOICES, default="all")
    parser.add_argument("--grid", choices=tuple(GRIDS), default="quick",
                        help="quick (< 1 min), default (the README's main job) or full")
    parser.add_argument("--json", action="store_true", help="print the claims as JSON")
    parser.add_argument("--out", metavar="DIR", default="results",
                        help="directory for raw per-setting results and the verdict "
                             "(default: results/); an interrupted run resumes from it")
    parser.add_argument("--workers", type=int, default=None, help="processes (default: all)")


def _cmd_verify(args: argparse.Namespace) -> int:
    from ._verify import verify

    if args.workers is not None and args.workers < 1:
        raise ParameterError(f"workers={args.workers} must be an integer >= 1")
    executor = None
    if args.workers is not None:
        from concurrent.futures import ProcessPoolExecutor

        executor = ProcessPoolExecutor(max_workers=args.workers)
    try:
        report = verify(args.grid, args.closure, args.out, executor=executor)
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


def _add_derive_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", metavar="DIR", default="derivations",
                        help="directory for induction_head.md and induction_head.tex")


def _cmd_derive(args: argparse.Namespace) -> int:
    from ._export import export_derivations

    for path in export_derivations(args.out):
        print(f"wrote {path}")
    return EXIT_OK


def _add_reproduce_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--grid", default="default", help="verification grid (default)")
    parser.add_argument("--figures", metavar="DIR", default="figures")
    parser.add_argument("--derivations", metavar="DIR", default="derivations")
    parser.add_argument("--results", metavar="DIR", default="results",
                        help="where the sweep runs (resumable); default results/")


def _cmd_reproduce(args: argparse.Namespace) -> int:
    """Derive, verify on the grid, write the figures: the README's main job.

    The sweep runs into ``--results`` (resumable if interrupted); its finished
    files are then copied into ``<figures>/data``, from which the figures are drawn.
    """
    import shutil

    status = _cmd_derive(argparse.Namespace(out=args.derivations))
    data = f"{args.figures}/data"
    verdict = _cmd_verify(argparse.Namespace(grid=args.grid, closure="all", json=False,
                                             out=args.results, workers=None))
    for suffix in ("jsonl", "json", "md"):
        shutil.copyfile(f"{args.results}/verify-{args.grid}.{suffix}",
                        f"{data}/verify-{args.grid}.{suffix}")
    drawn = COMMANDS["figures"][2](argparse.Namespace(
        out=args.figures, data=data, format="png,pdf", closure="all", grid=args.grid))
    return max(status, drawn, verdict)


def _add_compare_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true",
                        help="a small grid (< 2 min on two cores) instead of the full one")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--out", metavar="DIR", default="results",
                        help="directory for compare-<quick|full>.json and the SGD overlay "
                             "data read by the closures figure (default: results/)")


def _cmd_compare(args: argparse.Namespace) -> int:
    from ._compare import compare_closures, format_markdown, sgd_overlay
    from ._provenance import versions
    from ._results import write_json

    result = compare_closures(quick=args.quick)
    name = "quick" if args.quick else "full"
    write_json(f"{args.out}/compare-{name}.json", {**result, "versions": versions()})
    write_json(f"{args.out}/compare-overlay.json", sgd_overlay())
    print(json.dumps(result, indent=2) if args.json else format_markdown(result))
    return EXIT_OK


#: Subcommands: name -> (help, argument builder, handler).
COMMANDS: dict[str, tuple[str, Callable, Callable]] = {
    "solve": ("integrate one trajectory to phase IV and report its phase times",
              lambda p: _add_model_arguments(p, ("linear", "meanfield")), _cmd_solve),
    "derive": ("write the derivations as Markdown and LaTeX", _add_derive_arguments,
               _cmd_derive),
    "verify": ("check Theorem 5.5's predictions on a grid and print the verdict table",
               _add_verify_arguments, _cmd_verify),
    "compare": ("exact-softmax SGD against the closures' ODEs: the table of what they miss",
                _add_compare_arguments, _cmd_compare),
    "reproduce": ("the main job: derive, verify on the default grid, write the figures",
                  _add_reproduce_arguments, _cmd_reproduce),
    "sweep": (_sweep_command.HELP, _sweep_command.add_arguments, _sweep_command.run),
    "figures": ("draw the figures (PNG, PDF) from the result files in figures/data",
                lambda p: __import__("reduced_odes._figures", fromlist=["_"]).add_arguments(p),
                lambda a: __import__("reduced_odes._figures", fromlist=["_"]).run(a)),
}


class _Parser(argparse.ArgumentParser):
    """Usage errors as one stderr line and exit status 2, like every other bad input."""

    def error(self, message):
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="reduced-odes",
        description="Derive, integrate and verify the reduced training dynamics of the "
                    "induction-head model.")
    from ._version import __version__
    parser.add_argument("--version", action="version", version=f"reduced-odes {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (help_text, add_arguments, handler) in COMMANDS.items():
        command = sub.add_parser(name, help=help_text, description=help_text)
        add_arguments(command)
        command.set_defaults(handler=handler)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``reduced-odes`` and ``python -m reduced_odes``."""
    parser = build_parser()
    args = parser.parse_args(argv)
    from ._integrate import DomainError

    try:
        return args.handler(args)
    except (ParameterError, DomainError) as exc:
        print(f"reduced-odes {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print(f"reduced-odes {args.command}: interrupted", file=sys.stderr)
        return 130
