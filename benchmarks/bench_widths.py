"""What a first committee-machine run costs as the width grows: the cold start (import,
derive, compile, first trajectory) for ``K = M = 2`` against ``K = M = 10``, in one run.

Run from the repository root::

    python benchmarks/bench_widths.py             # a few minutes on a loaded machine
    python benchmarks/bench_widths.py --sizes 2 10 20
    python benchmarks/bench_widths.py --backends python numba

Each size runs in a fresh interpreter with an empty ``HOME`` (a new temporary directory;
``REDUCED_ODES_CACHE``, ``XDG_CACHE_HOME`` and ``NUMBA_CACHE_DIR`` unset), so nothing of a
previous size is reused, neither derived systems nor numba's machine code: the time
covers ``import reduced_odes``, the derivation (SymPy), any compile and the first
trajectory of ``solve`` at the model's defaults (erf, ``eta -> 0``, the start broken by
``asymmetry = 1e-3``), on each backend asked for.  Widths up to ``UNROLLED_UNITS`` (5) run
the unrolled, compiled system (the committed data's path; natively, its numba twin with
the native BDF); wider ones the unit sums, whose kernels are derived once per activation
(natively, their numba loops, compiled once per activation).  Both the wall clock and the
CPU time of the child are reported (the CPU time is what a loaded machine does not inflate), and the
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
K, backend = int(sys.argv[1]), sys.argv[2]
traj = solve(CommitteeParams(K=K, M=K), "erf", SolverConfig(backend=backend))
assert traj.fallback_reason is None, traj.fallback_reason
print(json.dumps({"T_escape": traj.phases["T_escape"], "steps": traj.stats.steps}))
"""


def cold_start(K: int, backend: str) -> dict:
    """Wall and CPU seconds of one cold ``solve`` at ``K = M``, in a fresh process."""
    with tempfile.TemporaryDirectory() as home:
        env = {k: v for k, v in os.environ.items()
               if k not in ("REDUCED_ODES_CACHE", "XDG_CACHE_HOME", "NUMBA_CACHE_DIR")}
        env.update(HOME=home, PYTHONPATH=os.pathsep.join(filter(None, [
            str(ROOT), os.environ.get("PYTHONPATH")])))
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", _CHILD, str(K), backend], env=env,
                             check=True,
                             capture_output=True, text=True).stdout
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"K": K, "backend": backend, "wall": wall, "cpu": cpu,
            **json.loads(out.strip().splitlines()[-1])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2, 10])
    parser.add_argument("--backends", nargs="+", default=["python", "numba"])
    arguments = parser.parse_args()
    print(f"{'backend':>8} {'K = M':>6} {'wall s':>8} {'cpu s':>8} {'wall x':>7} {'cpu x':>7} "
          f"{'steps':>6} {'T_escape':>10}")
    for backend in arguments.backends:
        rows = [cold_start(K, backend) for K in arguments.sizes]
        base = rows[0]
        for row in rows:
            print(f"{backend:>8} {row['K']:>6} {row['wall']:>8.1f} {row['cpu']:>8.1f} "
                  f"{row['wall'] / base['wall']:>7.2f} {row['cpu'] / base['cpu']:>7.2f} "
                  f"{row['steps']:>6} {row['T_escape']:>10.4f}", flush=True)
        worst = max(row["cpu"] / base["cpu"] for row in rows if row["K"] <= 10)
        print(f"{backend}: largest CPU ratio up to K = M = 10: {worst:.2f} "
              f"(target <= {TARGET_RATIO})", flush=True)


if __name__ == "__main__":
    main()
