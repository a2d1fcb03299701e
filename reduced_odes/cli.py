"""The ``reduced-odes`` command line.

Exit status: 0 success, 1 a verified claim failed, 2 bad input or a
trajectory that left its closure's domain (one line on stderr, no traceback).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence

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


#: Subcommands: name -> (help, argument builder, handler).  Other modules add theirs.
COMMANDS: dict[str, tuple[str, Callable, Callable]] = {
    "solve": ("integrate one trajectory to phase IV and report its phase times",
              lambda p: _add_model_arguments(p, ("linear", "meanfield")), _cmd_solve),
}


def _register_optional_commands() -> None:
    """Commands defined beside their implementation modules."""
    from . import _commands  # noqa: F401  (registers verify, derive, figures, ...)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
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
    try:
        _register_optional_commands()
    except ImportError:
        pass
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
