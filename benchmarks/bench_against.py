"""Per-trajectory time of this tree against another revision, measured in the same run.

Run from the repository root::

    python benchmarks/bench_against.py --against 6492d5c            # every model, pure path
    python benchmarks/bench_against.py --against 6492d5c --backend numba

Both trees are timed in interleaved subprocesses (each warms its own compile
cache first, then solves every model's every variant at its defaults ``--solves``
times and reports the medians), so that a load change on the shared machine hits
both alike.  Prints, for each model and variant that both trees have, the medians
and the ratio this / other, with the phase times of both (which must agree); and
the warm start of each tree (a fresh interpreter: import, load the cached system,
one solve), as the median of the rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Runs in the tree under test: every registered model's variants at their defaults.
_SNIPPET = """
import json, math, statistics, time
from reduced_odes import SolverConfig, solve
from reduced_odes.models import registered_models
out = {{}}
for model in registered_models():
    for variant in model.variants:
        params, config = model.make_params({{}}), SolverConfig(backend={backend!r})
        try:
            traj = solve(params, variant, config, model=model)
        except Exception as exc:  # a variant whose defaults do not run: reported, not timed
            out[f"{{model.name}}/{{variant}}"] = {{"error": str(exc)}}
            continue
        times = []
        for _ in range({solves}):
            start = time.perf_counter()
            solve(params, variant, config, model=model)
            times.append(time.perf_counter() - start)
        phases = {{k: v for k, v in traj.phases.items() if math.isfinite(v)}}
        out[f"{{model.name}}/{{variant}}"] = {{"median": statistics.median(times),
                                               "phases": phases}}
print(json.dumps(out))
"""
_WARM = ("from reduced_odes import solve; from reduced_odes.models.deep_linear import "
         "DeepLinearParams; solve(DeepLinearParams())")


def _export(revision: str, target: Path) -> None:
    archive = subprocess.run(["git", "archive", revision], cwd=ROOT, check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)


def _env(tree: Path, cache: str) -> dict:
    return {**os.environ, "PYTHONPATH": str(tree), "REDUCED_ODES_CACHE": cache}


def _time(tree: Path, cache: str, solves: int, backend: str) -> dict:
    done = subprocess.run([sys.executable, "-c", _SNIPPET.format(solves=solves,
                                                                   backend=backend)],
                          env=_env(tree, cache), cwd=tree, check=True, capture_output=True,
                          text=True)
    return json.loads(done.stdout)


def _warm_start(tree: Path, cache: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", _WARM], env=_env(tree, cache), cwd=tree, check=True,
                   capture_output=True)
    return time.perf_counter() - start


def _agreement(this: dict, other: dict) -> float:
    shared = set(this) & set(other)
    return max((abs(this[p] / other[p] - 1) for p in shared if other[p]), default=0.0)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", required=True, help="git revision to compare with")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    parser.add_argument("--solves", type=int, default=10,
                        help="solves per model, variant and round (default 10)")
    parser.add_argument("--backend", choices=("python", "numba"), default="python",
                        help="backend of the solves (default: python)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        other = Path(scratch) / "other"
        other.mkdir()
        _export(args.against, other)
        trees = {"this": ROOT, "other": other}
        caches = {name: tempfile.mkdtemp(dir=scratch) for name in trees}
        runs = {name: [] for name in trees}
        warm = {name: [] for name in trees}
        for _ in range(args.rounds):
            for name, tree in trees.items():
                runs[name].append(_time(tree, caches[name], args.solves, args.backend))
                warm[name].append(_warm_start(tree, caches[name]))
    print(f"per trajectory at each model's defaults, backend {args.backend} (median of "
          f"{args.rounds} rounds x {args.solves} solves); this tree against {args.against}:")
    print(f"  {'model/variant':34} {'this':>10} {'other':>10} {'ratio':>7}  phases agree to")
    ratios = []
    for key in sorted(set(runs["this"][0]) & set(runs["other"][0])):
        if "error" in runs["this"][0][key] or "error" in runs["other"][0][key]:
            print(f"  {key:34} not timed: {runs['this'][0][key].get('error') or 'ok'} / "
                  f"{runs['other'][0][key].get('error') or 'ok'}")
            continue
        this, that = (statistics.median(r[key]["median"] for r in runs[n])
                      for n in ("this", "other"))
        ratios.append(this / that)
        agree = _agreement(runs["this"][0][key]["phases"], runs["other"][0][key]["phases"])
        print(f"  {key:34} {this * 1e3:8.2f}ms {that * 1e3:8.2f}ms {this / that:7.3f}  "
              f"{agree:.1e}")
    only = sorted(set(runs["this"][0]) ^ set(runs["other"][0]))
    if only:
        print(f"  in one tree only: {', '.join(only)}")
    print(f"  geometric mean of the ratios: {statistics.geometric_mean(ratios):.3f}")
    w_this, w_other = (statistics.median(warm[n]) for n in ("this", "other"))
    print(f"warm start (fresh interpreter, cached system, one deep_linear solve): "
          f"{w_this:.3f} s against {w_other:.3f} s, ratio {w_this / w_other:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
