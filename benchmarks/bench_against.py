"""Per-trajectory time of this tree against another revision, measured in the same run.

Run from the repository root::

    python benchmarks/bench_against.py --against f3a9066      # any git revision

Both trees are timed in interleaved subprocesses (each warms its own compile
cache first, then solves the default induction-head setting ``--solves`` times
and reports the median), so that a load change on the shared machine hits both
alike.  Prints the medians and the ratio this / other, with the phase times of
both (which must agree).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Runs in the tree under test; works with the API before and after the model registry.
_SNIPPET = """
import json, statistics, time
from reduced_odes import solve
try:
    from reduced_odes.models.induction_head import ModelParams
except ImportError:
    from reduced_odes import ModelParams
params = ModelParams(L=200, alpha=0.5, wstar=0.3, sigma=1e-4)
traj = solve(params, "linear")
times = []
for _ in range({solves}):
    start = time.perf_counter()
    solve(params, "linear")
    times.append(time.perf_counter() - start)
print(json.dumps({{"median": statistics.median(times), "phases": traj.phases}}))
"""


def _export(revision: str, target: Path) -> None:
    archive = subprocess.run(["git", "archive", revision], cwd=ROOT, check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)


def _time(tree: Path, cache: str, solves: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree), "REDUCED_ODES_CACHE": cache}
    done = subprocess.run([sys.executable, "-c", _SNIPPET.format(solves=solves)], env=env,
                          cwd=tree, check=True, capture_output=True, text=True)
    return json.loads(done.stdout)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", required=True, help="git revision to compare with")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    parser.add_argument("--solves", type=int, default=20, help="solves per round (default 20)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        other = Path(scratch) / "other"
        other.mkdir()
        _export(args.against, other)
        caches = {name: tempfile.mkdtemp(dir=scratch) for name in ("this", "other")}
        results = {"this": [], "other": []}
        for _ in range(args.rounds):
            for name, tree in (("this", ROOT), ("other", other)):
                results[name].append(_time(tree, caches[name], args.solves))
    medians = {k: statistics.median(r["median"] for r in v) for k, v in results.items()}
    phases = {k: v[0]["phases"] for k, v in results.items()}
    worst = max(abs(phases["this"][p] / phases["other"][p] - 1) for p in phases["other"])
    print(f"per trajectory (L=200, alpha=0.5, w*=0.3, sigma=1e-4, linear; median of "
          f"{args.rounds} rounds x {args.solves} solves):")
    print(f"  this tree: {medians['this'] * 1e3:.2f} ms")
    print(f"  {args.against}: {medians['other'] * 1e3:.2f} ms")
    print(f"  ratio this / {args.against} = {medians['this'] / medians['other']:.3f}; "
          f"phase times agree to {worst:.1e} (relative)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
