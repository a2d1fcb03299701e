"""A phase diagram's cost on the native backend against the pure path, in one run.

Run from the repository root::

    python benchmarks/bench_phase_diagram.py                      # 1e5 settings natively
    python benchmarks/bench_phase_diagram.py --settings 400 --pure-settings 100

The committee machine's ``T_escape`` (erf, ``K = M = 2``) over ``eta`` (linear) by the
asymmetry (log), on a square grid of about ``--settings`` settings, runs on the native
backend through the sweep machinery (every worker process; results resumable in a
temporary directory); a sample of ``--pure-settings`` of the same settings runs on the
pure path.  Prints the time per setting of each and their ratio, and the largest
relative difference of the times the two paths give for the shared settings.  Each
path first runs a one-setting grid, so that compiling (and numba's machine code) is not
counted.
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time

import numpy as np

from reduced_odes import Axis, phase_diagram


def _timed(settings: int, backend: str, workers: int | None) -> tuple[float, np.ndarray]:
    side = max(2, round(math.sqrt(settings)))
    x = Axis("eta", 0.05, 1.0, side)
    y = Axis("asymmetry", 1e-10, 1e-4, side, log=True)
    base = {"K": 2, "M": 2, "activation": "erf"}
    with tempfile.TemporaryDirectory() as warm:  # compile and warm the workers' caches
        phase_diagram("committee_machine", Axis("eta", 0.05, 1.0, 2),
                      Axis("asymmetry", 1e-10, 1e-4, 2, log=True), "T_escape", warm,
                      base=base, backend=backend, max_workers=workers, progress=False)
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        data = phase_diagram("committee_machine", x, y, "T_escape", out, base=base,
                             backend=backend, max_workers=workers, progress=True)
        elapsed = time.perf_counter() - start
    values = np.array([[np.nan if v is None else v for v in row] for row in data["values"]])
    return elapsed / side**2, values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settings", type=int, default=100_000)
    parser.add_argument("--pure-settings", type=int, default=400)
    parser.add_argument("--workers", type=int, default=None)
    args = parser.parse_args()
    native, native_values = _timed(args.settings, "numba", args.workers)
    pure, pure_values = _timed(args.pure_settings, "python", args.workers)
    print(f"native: {native * 1e3:.2f} ms per setting ({native * args.settings / 60:.1f} min "
          f"for {args.settings} settings)")
    print(f"pure:   {pure * 1e3:.2f} ms per setting; pure / native = {pure / native:.1f}")
    if args.settings == args.pure_settings:
        worst = np.nanmax(np.abs(native_values / pure_values - 1))
        print(f"largest relative difference of T_escape between the paths: {worst:.2g}")


if __name__ == "__main__":
    main()
