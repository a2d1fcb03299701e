"""The native backend against the pure-Python path, measured in the same run (medians).

Run from the repository root (needs numba, the ``[fast]`` extra)::

    python benchmarks/bench_native.py [--repeat 21]

Reports, at the default induction-head setting (L=200, alpha=0.5, w*=0.3,
sigma=1e-4, rtol 1e-10): the per-trajectory time of ``solve`` on each path and
their ratio; the native steps at L = 1e7 over those at L = 1e2; the first
compile (a fresh cache, in a subprocess) and the cold start with numba's cache
warm (a subprocess: import, load, one trajectory).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PARAMS = dict(L=200, alpha=0.5, wstar=0.3, sigma=1e-4)
_ONE_RUN = ("import sys, time; t0 = time.perf_counter(); sys.path[:0] = [{root!r}]; "
            "from reduced_odes import SolverConfig, solve; "
            "from reduced_odes.models import get_model; m = get_model('induction_head'); "
            "solve(m.make_params({params!r}), solver=SolverConfig(backend='numba'), model=m); "
            "print(time.perf_counter() - t0)")


def _median(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _subprocess_seconds(cache: str) -> float:
    env = dict(os.environ, REDUCED_ODES_CACHE=cache)
    code = _ONE_RUN.format(root=str(ROOT), params=PARAMS)
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True,
                         text=True)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=21)
    parser.add_argument("--skip-compile", action="store_true", help="no fresh-cache compile")
    options = parser.parse_args()
    from reduced_odes import SolverConfig, solve
    from reduced_odes.models import get_model

    model = get_model("induction_head")
    params = model.make_params(PARAMS)
    native_config = SolverConfig(backend="numba")
    solve(params, solver=native_config, model=model)  # compile or load once
    native = _median(lambda: solve(params, solver=native_config, model=model), options.repeat)
    pure = _median(lambda: solve(params, model=model), options.repeat)
    steps = [solve(model.make_params({**PARAMS, "L": L}), solver=native_config,
                   model=model).stats.steps for L in (1e2, 1e7)]
    print(f"per trajectory: native {native * 1e3:.3f} ms, pure {pure * 1e3:.2f} ms, "
          f"ratio {pure / native:.1f}x (target <= 1 ms and >= 15x)")
    print(f"native steps L=1e7 / L=1e2: {steps[1]} / {steps[0]} = {steps[1] / steps[0]:.3f} "
          f"(target <= 1.15)")
    warm = str(Path(os.environ.get("REDUCED_ODES_CACHE", Path.home() / ".cache/reduced-odes")))
    if not options.skip_compile:
        with tempfile.TemporaryDirectory() as fresh:
            print(f"first compile (fresh cache, incl. start-up): "
                  f"{_subprocess_seconds(fresh):.1f} s (target <= 20 s)")
    print(f"cold start, numba cache warm (import + load + one trajectory): "
          f"{_subprocess_seconds(warm):.2f} s (target <= 1 s)")


if __name__ == "__main__":
    main()
