"""The analysis commands: ``fixed-points``, ``continue`` and ``scaling``.

Each takes the model's parameters as options (added by :mod:`reduced_odes.cli`, with
the variant), and its own options here; the handlers get the parsed arguments and the
model's parameters.  ``--json`` prints one JSON document; otherwise a table.
"""

from __future__ import annotations

import argparse
import json
import math

from ._continuation import Continuation, continue_branch
from ._fixed_points import find_fixed_points
from ._params import ParameterError, Parameters

__all__ = ["COMMANDS", "add_arguments", "run"]

#: Name -> help of each analysis command.
COMMANDS = {
    "fixed-points": "find the flow's fixed points (Newton from a trajectory's slow stretches, "
                    "the model's symmetric states and --seed) and classify them",
    "continue": "follow every fixed point in one parameter (pseudo-arclength) and report folds "
                "and changes of stability",
}


def _seed(text: str) -> dict[str, float]:
    """``NAME=VALUE,NAME=VALUE`` -> a mapping (argparse turns a ValueError into exit 2)."""
    pairs = [item.split("=", 1) for item in text.split(",") if item.strip()]
    if not pairs or any(len(p) != 2 for p in pairs):
        raise argparse.ArgumentTypeError(f"seed={text!r}: expected NAME=VALUE,NAME=VALUE")
    try:
        return {name.strip(): float(value) for name, value in pairs}
    except ValueError:
        raise argparse.ArgumentTypeError(f"seed={text!r}: a value is not a number") from None


def add_arguments(name: str, parser: argparse.ArgumentParser, model) -> None:
    """The options of the analysis command ``name`` beyond the model's parameters."""
    parser.add_argument("--seed", type=_seed, action="append", default=[],
                        metavar="NAME=V,...",
                        help="a start for Newton, every state (or coordinate) variable by "
                             "name; repeatable (default: none beyond the trajectory's)")
    parser.add_argument("--no-trajectory", action="store_true",
                        help="do not seed from the model's own trajectory (default: do)")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON document (default: a table)")
    if name == "continue":
        parser.add_argument("--param", required=True, metavar="P",
                            help="the parameter to continue in (a continuous, non-structural "
                                 "one); it starts at its option's value")
        parser.add_argument("--to", required=True, type=float, metavar="VALUE",
                            help="the parameter's value to continue to")


def run(name: str, args: argparse.Namespace, params: Parameters) -> int:
    """Run the analysis command ``name``; the exit status."""
    if name == "fixed-points":
        return _fixed_points(args, params)
    return _continue(args, params)


def _header(args: argparse.Namespace, params: Parameters) -> dict:
    return {"model": args.model.name, "params": params.as_dict(),
            args.model.variant_option: args.variant}


def _fixed_points(args: argparse.Namespace, params: Parameters) -> int:
    points = find_fixed_points(args.model, params, args.variant, seeds=args.seed,
                               trajectory=not args.no_trajectory)
    document = {**_header(args, params), "fixed_points": [p.to_dict() for p in points]}
    if args.json:
        print(json.dumps(document, indent=2))
        return 0
    for i, point in enumerate(points):
        print(f"{i}: {point.kind} (unstable dimension {point.unstable_dimension}), "
              f"residual {point.residual:.2g}")
        print("   state:       " + _pairs(point.state))
        print("   observables: " + _pairs(point.observables))
        print("   eigenvalues: " + ", ".join(f"{v:.6g}" for v in point.eigenvalues.real))
    if not points:
        print("no fixed point found")
    return 0


def _pairs(values: dict) -> str:
    return ", ".join(f"{k}={v:.6g}" for k, v in values.items())


def _continue(args: argparse.Namespace, params: Parameters) -> int:
    if not math.isfinite(args.to):
        raise ParameterError(f"to={args.to!r}; allowed: a finite number")
    start = getattr(params, args.param, None)
    c = Continuation(args.model, params, args.param, args.variant, to=args.to)
    points = find_fixed_points(args.model, params, args.variant, seeds=args.seed,
                               trajectory=not args.no_trajectory)
    branches = [continue_branch(c, p.coordinates, float(start), args.to) for p in points]
    bifurcations = sorted(({**b, "branch": i} for i, branch in enumerate(branches)
                           for b in branch.bifurcations), key=lambda b: b["param"])
    document = {**_header(args, params), "param": args.param, "to": args.to,
                "branches": [b.to_dict() for b in branches], "bifurcations": bifurcations}
    if args.json:
        print(json.dumps(document, indent=2))
        return 0
    for i, branch in enumerate(branches):
        print(f"branch {i}: {args.param} {branch.values[0]:.6g} -> {branch.values[-1]:.6g}, "
              f"{len(branch.values)} points, from a {branch.points[0].kind} point")
    for b in bifurcations:
        print(f"{b['kind']} at {args.param}={b['param']:.10g} (branch {b['branch']})")
    return 0
