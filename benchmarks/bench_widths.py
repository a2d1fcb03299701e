"""What a first committee-machine run costs as the width grows: the cold start (import,
derive, compile, first trajectory) for ``K = M = 2`` against ``K = M = 10``, in one run.

Run from the repository root::

    python benchmarks/bench_widths.py             # a few minutes on a loaded machine
    python benchmarks/bench_widths.py --sizes 2 10 20

Each size runs in a fresh interpreter with an empty compile cache (``REDUCED_ODES_CACHE``
pointing at a new temporary directory), so nothing of a previous size is reused: the
time covers ``import reduced_odes``, the derivation (SymPy), any compile and the first
trajectory of ``solve`` at the model's defaults (erf, ``eta -> 0``, the start broken by
``asymmetry = 1e-3``), on the pure path.  Widths up to ``UNROLLED_UNITS`` (5) run the
unrolled, compiled system (the committed data's path); wider ones the unit sums, whose
kernels are derived once per activation.  Both the wall clock and the CPU time of the
child are reported (the CPU time is what a loaded machine does not inflate), and the
ratio of each to the smallest size's (the target: at most 3 for ``K = M = 10``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The cold start at ``K = M = 10`` may cost at most this multiple of ``K = M = 2``'s.
TARGET_RATIO = 3.0

_CHILD = """
import json, sys
from reduced_odes import SolverConfig, solve
from reduced_odes.models.committee_machine import CommitteeParams
K = int(sys.argv[1])
traj = solve(CommitteeParams(K=K, M=K), "erf", SolverConfig(backend="python"))
print(json.dumps({"T_escape": traj.phases["T_escape"], "steps": traj.stats.steps}))
"""


def cold_start(K: int) -> dict:
    """Wall and CPU seconds of one cold ``solve`` at ``K = M``, in a fresh process."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, REDUCED_ODES_CACHE=cache,
                   PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT),
                                                            os.environ.get("PYTHONPATH")])))
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", _CHILD, str(K)], env=env, check=True,
                             capture_output=True, text=True).stdout
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"K": K, "wall": wall, "cpu": cpu, **json.loads(out.strip().splitlines()[-1])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2, 10])
    sizes = parser.parse_args().sizes
    rows = [cold_start(K) for K in sizes]
    base = rows[0]
    print(f"{'K = M':>6} {'wall s':>8} {'cpu s':>8} {'wall x':>7} {'cpu x':>7} "
          f"{'steps':>6} {'T_escape':>10}")
    for row in rows:
        print(f"{row['K']:>6} {row['wall']:>8.1f} {row['cpu']:>8.1f} "
              f"{row['wall'] / base['wall']:>7.2f} {row['cpu'] / base['cpu']:>7.2f} "
              f"{row['steps']:>6} {row['T_escape']:>10.4f}")
    worst = max(row["cpu"] / base["cpu"] for row in rows if row["K"] <= 10)
    print(f"largest CPU ratio up to K = M = 10: {worst:.2f} (target <= {TARGET_RATIO})")


if __name__ == "__main__":
    main()
