"""Wall time of a 1000-setting sweep (``benchmarks/grid_1000.toml``), chunked vs one task each.

Run from the repository root::

    python benchmarks/bench_sweep.py [--workers 2] [--limit N]

Both runs use the same settings, workers and code in one process; the
baseline hands each setting to the pool as its own task (``MAX_CHUNK = 1``),
which is what the sweep engine did before it sized chunks from the measured
time per task.  Prints both wall times and their ratio (chunked / baseline),
and checks that both runs give identical results.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _sweep(settings, path: Path, workers: int) -> tuple[float, dict]:
    from reduced_odes._results_file import read_results
    from reduced_odes._sweep import run_sweep
    from reduced_odes._sweep_command import solve_setting

    start = time.perf_counter()
    run_sweep(settings, solve_setting, path, max_workers=workers, progress=False)
    wall = time.perf_counter() - start
    return wall, {r["key"]: r["result"]["phases"] for r in read_results(path)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--limit", type=int, default=None, help="first N settings only")
    args = parser.parse_args()

    import reduced_odes._sweep as sweep
    from reduced_odes._grid import load_grid
    from reduced_odes._sweep_command import solve_setting

    settings = load_grid(ROOT / "benchmarks" / "grid_1000.toml")[:args.limit]
    solve_setting(dict(settings[0]))  # compile cache warm before timing
    with tempfile.TemporaryDirectory() as tmp:
        chunked, first = _sweep(settings, Path(tmp) / "chunked.jsonl", args.workers)
        saved, sweep.MAX_CHUNK = sweep.MAX_CHUNK, 1
        try:
            single, second = _sweep(settings, Path(tmp) / "single.jsonl", args.workers)
        finally:
            sweep.MAX_CHUNK = saved
    assert first == second, "chunked and single-task sweeps disagree"
    print(f"{len(settings)} settings, {args.workers} workers")
    print(f"  one task per setting : {single:7.2f} s")
    print(f"  chunked              : {chunked:7.2f} s")
    print(f"  ratio chunked/single : {chunked / single:7.3f}")


if __name__ == "__main__":
    main()
