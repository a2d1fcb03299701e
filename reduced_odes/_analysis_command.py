"""The analysis commands: ``fixed-points``, ``continue``, ``scaling`` and ``phase-diagram``.

Each takes the model's parameters as options (added by :mod:`reduced_odes.cli`, with
the variant), and its own options here; the handlers get the parsed arguments and the
model's parameters.  ``--json`` prints one JSON document; otherwise a table.
"""

from __future__ import annotations

import argparse
import functools
import json
import math

from ._analysis_figures import draw_bifurcation_diagram, draw_scaling_fit
from ._cli_options import (
    add_backend_option,
    add_run_options,
    check_run_options,
    run_executor,
    writable,
)
from ._continuation import Continuation, continue_branch
from ._fixed_points import find_fixed_points
from ._io import json_safe
from ._params import ParameterError, Parameters
from ._phase_diagram import Axis, draw_phase_diagram, phase_diagram
from ._results import write_json
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
    "phase-diagram": "a phase time or a final value over two parameters, resumably (the sweep "
                     "machinery), with its data file and heatmap",
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


def _add_diagram_arguments(parser: argparse.ArgumentParser) -> None:
    for axis in ("x", "y"):
        parser.add_argument(f"--{axis}", required=True, metavar="P",
                            help=f"the parameter on the {axis} axis")
        parser.add_argument(f"--{axis}-from", required=True, type=float, metavar="A",
                            help=f"the {axis} axis' first value")
        parser.add_argument(f"--{axis}-to", required=True, type=float, metavar="B",
                            help=f"the {axis} axis' last value")
        parser.add_argument(f"--{axis}-num", type=int, default=10, metavar="N",
                            help=f"values on the {axis} axis (default: 10)")
        parser.add_argument(f"--{axis}-log", action="store_true",
                            help=f"log-spaced {axis} values (default: linear)")
    parser.add_argument("--quantity", required=True, metavar="T",
                        help="a phase, or a series whose final value is mapped")
    parser.add_argument("--out", default="phase_diagram", metavar="DIR",
                        help="results.jsonl (resumed by a rerun), phase_diagram.json and "
                             "phase_diagram.png go here (default: phase_diagram)")
    add_run_options(parser)
    add_backend_option(parser, "numba for large grids when installed, else python")
    parser.add_argument("--no-progress", dest="progress", action="store_false",
                        help="no progress on stderr (default: progress)")
    parser.add_argument("--json", action="store_true",
                        help="print the data document (default: a summary)")


def add_arguments(name: str, parser: argparse.ArgumentParser, model) -> None:
    """The options of the analysis command ``name`` beyond the model's parameters."""
    if name == "phase-diagram":
        _add_diagram_arguments(parser)
        return
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
        parser.add_argument("--figure", metavar="STEM", default=None,
                            help="also write the document to STEM.json and draw the fit to "
                                 "STEM.png (default: none)")
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
        parser.add_argument("--figure", metavar="STEM", default=None,
                            help="also write the document to STEM.json and draw the "
                                 "bifurcation diagram to STEM.png (default: none)")
        parser.add_argument("--observable", default=None, metavar="NAME",
                            help="the figure's vertical axis (default: the first observable)")


def run(name: str, args: argparse.Namespace, params: Parameters) -> int:
    """Run the analysis command ``name``: its JSON document (``--json``) or its table."""
    handler = {"fixed-points": _fixed_points, "continue": _continue, "scaling": _scaling,
               "phase-diagram": _phase_diagram}[name]
    document, table = handler(args, params)
    header = {"model": args.model.name, "params": params.as_dict(),
              args.model.variant_option: args.variant}
    print(json.dumps(json_safe({**header, **document}), indent=2) if args.json
          else "\n".join(table))
    return 0


def _scaling(args: argparse.Namespace, params: Parameters) -> tuple[dict, list[str]]:
    if not 1 <= args.per_decade <= 100:
        raise ParameterError(f"per_decade={args.per_decade}; allowed: 1 to 100")
    if args.figure:
        writable(f"{args.figure}.json", "file", "figure")
    fit = measure_scaling(args.model, params, args.param, args.lo, args.hi, args.phase,
                          variant=args.variant, per_decade=args.per_decade)
    low, high = fit.interval
    table = [f"{args.phase} ~ {fit.law} in {args.param}: exponent {fit.exponent:.6g} "
             f"[{low:.6g}, {high:.6g}], RMS relative residual {fit.residual:.3g}",
             "local slopes d ln T / d ln x: " + ", ".join(f"{v:.4g}" for v in fit.local_slopes),
             *([fit.reason] if not fit.fit_ok else [])]
    document = {"param": args.param, "phase": args.phase, **fit.to_dict()}
    return document, table + _figure(args.figure, document, draw_scaling_fit)


def _figure(stem: str | None, document: dict, draw) -> list[str]:
    """With ``--figure STEM``: the document to ``STEM.json``, drawn to ``STEM.png``."""
    if not stem:
        return []
    write_json(f"{stem}.json", document)
    return [f"-> {p}" for p in draw(f"{stem}.json", stem)]


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
    if args.figure:
        writable(f"{args.figure}.json", "file", "figure")
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
    document = {"param": args.param, "to": args.to,
                "branches": [b.to_dict() for b in branches], "bifurcations": bifurcations}
    draw = functools.partial(draw_bifurcation_diagram, observable=args.observable)
    return document, table + _figure(args.figure, document, draw)


def _phase_diagram(args: argparse.Namespace, params: Parameters) -> tuple[dict, list[str]]:
    out = writable(args.out, "dir")
    check_run_options(args, out / "results.jsonl")
    x, y = (Axis(getattr(args, a), getattr(args, f"{a}_from"), getattr(args, f"{a}_to"),
                 getattr(args, f"{a}_num"), getattr(args, f"{a}_log")) for a in ("x", "y"))
    base = {k: v for k, v in params.as_dict().items() if k not in (x.name, y.name)}
    base[args.model.variant_option] = args.variant
    with run_executor(args) as (executor, workers):
        data = phase_diagram(args.model, x, y, args.quantity, out, base=base,
                             backend=args.backend, executor=executor, max_workers=workers,
                             progress=args.progress)
    figure = draw_phase_diagram(out / "phase_diagram.json", out / "phase_diagram")
    missing = sum(v is None for row in data["values"] for v in row)
    return data, [f"{args.quantity} over {x.name} x {y.name}: {x.num} x {y.num} settings, "
                  f"{missing} without a value -> {out / 'phase_diagram.json'}, "
                  f"{', '.join(map(str, figure))}"]
