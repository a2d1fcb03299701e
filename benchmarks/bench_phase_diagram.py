"""A phase diagram's cost on the native backend against the pure path, in one run.

Run from the repository root::

    python benchmarks/bench_phase_diagram.py                       # 1e5 settings natively
    python benchmarks/bench_phase_diagram.py --settings 2500 --pure-settings 100

The committee machine's ``T_escape`` (erf, ``K = M = 2``) over ``eta`` (linear) by the
asymmetry (log), on a square grid of about ``--settings`` settings, runs on the native
backend through the sweep machinery (results resumable in a temporary directory); a
sample of ``--pure-settings`` settings spread over the same ranges runs on the pure path,
and the same sample as whole native solves (:func:`reduced_odes.solve`, what a phase
diagram ran per setting before :func:`~reduced_odes._native._phase_times.phase_time`).

Each path runs in this process (one worker thread), so its CPU time per setting is
measured (``time.process_time``: all of the process's threads, the sweep's writing of the
results file included) whatever else the machine runs; the time of ``--settings``
settings on ``--cores`` cores is extrapolated from it (the sweep's workers are
independent processes, one per core).  ``--workers N`` runs the native grid on a pool of
``N`` processes instead and prints its wall time.  Each path first runs a one-setting grid,
so that compiling (and numba's machine code) is not counted.
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from reduced_odes import Axis, Setting, phase_diagram, solve

BASE = {"K": 2, "M": 2, "activation": "erf"}


def _axes(settings: int) -> tuple[Axis, Axis]:
    side = max(2, round(math.sqrt(settings)))
    return (Axis("eta", 0.05, 1.0, side), Axis("asymmetry", 1e-10, 1e-4, side, log=True))


def _grid(settings: int, backend: str, workers: int | None) -> tuple[float, float, np.ndarray]:
    """CPU and wall seconds per setting of the phase diagram on ``backend``, and its values."""
    x, y = _axes(settings)
    if backend == "numba":  # as a long job steps: on the integrator for the legs' size (a
        from reduced_odes._native import _twin  # process binds it after SPECIALISE_AFTER
        # runs of a twin; here from the first, so that the warm-up compiles it)

        _twin.SPECIALISE_AFTER = 1
    with tempfile.TemporaryDirectory() as warm:  # compile and warm the caches
        phase_diagram("committee_machine", *_axes(4), "T_escape", warm, base=BASE,
                      backend=backend, max_workers=1, progress=False)
    with tempfile.TemporaryDirectory() as out, ThreadPoolExecutor(1) as pool:
        cpu, wall = time.process_time(), time.perf_counter()
        data = phase_diagram("committee_machine", x, y, "T_escape", out, base=BASE,
                             backend=backend, progress=False,
                             **({"max_workers": workers} if workers else {"executor": pool}))
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    values = np.array([[np.nan if v is None else v for v in row] for row in data["values"]])
    return cpu / values.size, wall / values.size, values


def _whole_solves(settings: int) -> tuple[float, np.ndarray]:
    """CPU seconds per setting of whole native solves of the grid's settings, and values."""
    x, y = _axes(settings)
    mappings = [{"model": "committee_machine", **BASE, "backend": "numba", "eta": float(a),
                 "asymmetry": float(b)} for b in y.values() for a in x.values()]
    solve(Setting.from_mapping(mappings[0]))
    cpu = time.process_time()
    times = [solve(Setting.from_mapping(m)).phases["T_escape"] for m in mappings]
    return (time.process_time() - cpu) / len(mappings), np.array(times).reshape(y.num, x.num)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settings", type=int, default=100_000)
    parser.add_argument("--pure-settings", type=int, default=100)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--workers", type=int, default=None)
    args = parser.parse_args()
    native, wall, _ = _grid(args.settings, "numba", args.workers)
    sample, sample_values = _grid(args.pure_settings, "numba", None)[::2]
    whole, whole_values = _whole_solves(args.pure_settings)
    pure, _, pure_values = _grid(args.pure_settings, "python", None)
    minutes = native * 1e5 / args.cores / 60
    print(f"native phase diagram: {native * 1e3:.2f} ms CPU per setting over "
          f"{args.settings} settings; 1e5 settings on {args.cores} cores: {minutes:.1f} min")
    if args.workers:
        print(f"  on {args.workers} workers: {wall * 1e3:.2f} ms wall per setting")
    print(f"whole native solves:  {whole * 1e3:.2f} ms CPU per setting "
          f"({args.pure_settings} settings)")
    print(f"pure path:            {pure * 1e3:.2f} ms CPU per setting "
          f"({args.pure_settings} settings); pure / native = {pure / native:.1f}")
    print(f"T_escape: native phase diagram == whole native solves: "
          f"{bool(np.array_equal(sample_values, whole_values, equal_nan=True))}; largest "
          f"relative difference from the pure path: "
          f"{np.nanmax(np.abs(sample_values / pure_values - 1)):.2g}")


if __name__ == "__main__":
    main()
