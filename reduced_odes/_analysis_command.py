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
from ._io import json_safe
from ._params import ParameterError, Parameters
from ._scaling import measure_scaling

__all__ = ["COMMANDS", "add_arguments", "run"]

#: Name -> help of each analysis command.
COMMANDS = {
    "fixed-points": "find the flow's fixed points (Newton from a trajectory's slow stretches, "
                    "the model's symmetric states and --seed) and classify them",
    "continue": "follow every fixed point in one parameter (pseudo-arclength) and report folds "
                "and changes of stability",
    "scaling": "a phase time over decades of one parameter, fitted to a power, a logarithm or "
               "a power times a logarithm, with the exponent's interval and local slopes",
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
    if name == "scaling":
        parser.add_argument("--param", required=True, metavar="P",
                            help="the parameter swept over decades")
        parser.add_argument("--from", dest="lo", required=True, type=float, metavar="A",
                            help="the parameter's first value (> 0)")
        parser.add_argument("--to", dest="hi", required=True, type=float, metavar="B",
                            help="the parameter's last value (> A)")
        parser.add_argument("--phase", required=True, metavar="T",
                            help="the phase whose time is fitted: " + ", ".join(
                                model.phase_order))
        parser.add_argument("--per-decade", type=int, default=2, metavar="N",
                            help="values per decade (default: 2)")
        parser.add_argument("--json", action="store_true",
                            help="print one JSON document (default: a table)")
        return
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
    """Run the analysis command ``name``: its JSON document (``--json``) or its table."""
    handler = {"fixed-points": _fixed_points, "continue": _continue, "scaling": _scaling}[name]
    document, table = handler(args, params)
    header = {"model": args.model.name, "params": params.as_dict(),
              args.model.variant_option: args.variant}
    print(json.dumps(json_safe({**header, **document}), indent=2) if args.json
          else "\n".join(table))
    return 0


def _scaling(args: argparse.Namespace, params: Parameters) -> tuple[dict, list[str]]:
    if not 1 <= args.per_decade <= 100:
        raise ParameterError(f"per_decade={args.per_decade}; allowed: 1 to 100")
    fit = measure_scaling(args.model, params, args.param, args.lo, args.hi, args.phase,
                          variant=args.variant, per_decade=args.per_decade)
    low, high = fit.interval
    table = [f"{args.phase} ~ {fit.law} in {args.param}: exponent {fit.exponent:.6g} "
             f"[{low:.6g}, {high:.6g}], RMS relative residual {fit.residual:.3g}",
             "local slopes d ln T / d ln x: " + ", ".join(f"{v:.4g}" for v in fit.local_slopes),
             *([fit.reason] if not fit.fit_ok else [])]
    return {"param": args.param, "phase": args.phase, **fit.to_dict()}, table


def _found(args: argparse.Namespace, params: Parameters):
    return find_fixed_points(args.model, params, args.variant, seeds=args.seed,
                             trajectory=not args.no_trajectory)


def _fixed_points(args: argparse.Namespace, params: Parameters) -> tuple[dict, list[str]]:
    points = _found(args, params)
    table = []
    for i, point in enumerate(points):
        table += [f"{i}: {point.kind} (unstable dimension {point.unstable_dimension}), "
                  f"residual {point.residual:.2g}",
                  "   state:       " + _pairs(point.state),
                  "   observables: " + _pairs(point.observables),
                  "   eigenvalues: " + ", ".join(f"{v:.6g}" for v in point.eigenvalues.real)]
    return {"fixed_points": [p.to_dict() for p in points]}, table or ["no fixed point found"]


def _pairs(values: dict) -> str:
    return ", ".join(f"{k}={v:.6g}" for k, v in values.items())


def _continue(args: argparse.Namespace, params: Parameters) -> tuple[dict, list[str]]:
    if not math.isfinite(args.to):
        raise ParameterError(f"to={args.to!r}; allowed: a finite number")
    c = Continuation(args.model, params, args.param, args.variant, to=args.to)
    start = float(getattr(params, args.param))
    branches = [continue_branch(c, p.coordinates, start, args.to) for p in _found(args, params)]
    bifurcations = sorted(({**b, "branch": i} for i, branch in enumerate(branches)
                           for b in branch.bifurcations), key=lambda b: b["param"])
    table = [f"branch {i}: {args.param} {b.values[0]:.6g} -> {b.values[-1]:.6g}, "
             f"{len(b.values)} points, from a {b.points[0].kind} point"
             for i, b in enumerate(branches)]
    table += [f"{b['kind']} at {args.param}={b['param']:.10g} (branch {b['branch']})"
              for b in bifurcations]
    return {"param": args.param, "to": args.to, "branches": [b.to_dict() for b in branches],
            "bifurcations": bifurcations}, table
