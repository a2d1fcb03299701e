"""The native backend against the pure-Python path, measured in the same run (medians).

Run from the repository root (needs numba, the ``[fast]`` extra)::

    python benchmarks/bench_native.py [--repeat 21] [--skip-compile] [--skip-pure-sweep]

Reports, at the default induction-head setting (L=200, alpha=0.5, w*=0.3,
sigma=1e-4, rtol 1e-10):

* the per-trajectory time of ``solve`` on each backend and their ratio; of the native
  one, the time in the stepping alone, and in it the right-hand sides' (their count times
  one evaluation's cost, measured in a native loop over the run's own step states);
* the same two per-trajectory times (and steps) at the defaults of every registered
  model; and ``two_mixture`` natively with its stop rule compiled in against the same
  rule as a Python function;
* the steps at L = 1e7 over those at L = 1e2, on each backend;
* the first compile: a subprocess with the derivations cached but no machine code;
* the cold start with numba's cache warm (a subprocess: import, load, one
  trajectory), next to numba's own floor measured the same way (import numba,
  load one cached trivial function, call it): the medians of ``--cold-repeat``
  runs of each, interleaved;
* ``reduced-odes sweep`` of ``benchmarks/grid_1000.toml`` on 2 workers, native
  (the median of ``--sweep-repeat`` runs) and pure (one run), from the command line
  as a user runs it.
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PARAMS = dict(L=200, alpha=0.5, wstar=0.3, sigma=1e-4)
_ONE_RUN = ("import sys, time; t0 = time.perf_counter(); sys.path[:0] = [{root!r}]; "
            "from reduced_odes import SolverConfig, solve; "
            "from reduced_odes.models import get_model; m = get_model('induction_head'); "
            "solve(m.make_params({params!r}), solver=SolverConfig(backend='numba'), model=m); "
            "print(time.perf_counter() - t0)")
_FLOOR = ("import time; t0 = time.perf_counter()\n"
          "import numpy as np\nfrom numba import njit\n"
          "@njit(cache=True)\ndef f(x):\n    return x.sum()\n"
          "f(np.ones(3)); print(time.perf_counter() - t0)\n")


def _median(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _env(cache: str, **extra: str) -> dict[str, str]:
    """A subprocess's environment: ``cache`` as the compile cache, and Python's bytecode
    cache on, as Python runs by default (an environment with ``PYTHONDONTWRITEBYTECODE``
    set would compile every module of this package and the twin from source at each
    start: about 0.1 s)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "REDUCED_ODES_CACHE": cache, **extra}


def _seconds(argv: list[str], cache: str) -> float:
    """The last line a subprocess prints, as a float (its own clock)."""
    out = subprocess.run(argv, env=_env(cache), check=True, capture_output=True, text=True)
    return float(out.stdout.strip().splitlines()[-1])


def _wall(argv: list[str], cache: str) -> float:
    env = _env(cache, PYTHONPATH=str(ROOT))
    start = time.perf_counter()
    subprocess.run(argv, env=env, check=True, capture_output=True, text=True)
    return time.perf_counter() - start


def _derivations_only(warm: Path, fresh: Path) -> None:
    """``fresh``: the warm cache's derivations, without any native twin or machine code."""
    for path in warm.glob("*"):
        if path.is_file() and not path.name.startswith("native-"):
            shutil.copy2(path, fresh / path.name)


def _sweep(backend: str, cache: str, out: Path) -> float:
    out.unlink(missing_ok=True)
    return _wall([sys.executable, "-m", "reduced_odes", "sweep", "--grid",
                  str(ROOT / "benchmarks" / "grid_1000.toml"), "--out", str(out),
                  "--workers", "2", "--backend", backend, "--no-progress"], cache)


def _stepping(solve_once, repeat: int) -> tuple[float, list]:
    """The median time one native trajectory spends in the twin's ``advance`` (the stepping
    alone), and the legs of its last run."""
    from reduced_odes._native import _solve

    legs, spent = [], [0.0]
    made = _solve._Leg.__init__

    def record(leg, *args, **kwargs):
        made(leg, *args, **kwargs)
        legs.append(leg)

    _solve._Leg.__init__ = record
    try:
        solve_once()
        per_run, twin = len(legs), legs[0].twin
        native = twin.advance

        def timed(*args):
            start = time.perf_counter()
            status = native(*args)
            spent[0] += time.perf_counter() - start
            return status

        twin.advance, times = timed, []
        try:
            for _ in range(repeat):
                spent[0] = 0.0
                solve_once()
                times.append(spent[0])
        finally:
            twin.advance = native
    finally:
        _solve._Leg.__init__ = made
    return statistics.median(times), legs[-per_run:]


def _rhs_time(legs: list) -> tuple[float, int]:
    """The time the legs' right-hand sides take at their count (one evaluation's cost from a
    native loop over each leg's recorded states), and that count."""
    import numba

    @numba.njit
    def loop(block_rhs, states, args, block, out, rounds):
        for _ in range(rounds):
            for k in range(states.shape[0]):
                block_rhs(0.0, states[k], args, out, block)

    total, count = 0.0, 0
    for leg in legs:
        twin, r = leg.twin, leg.record
        states, out = np.ascontiguousarray(r.ds[:r.count, 0]), np.empty(leg.index.size)
        block, rounds = int(leg.iws[twin.I_BLOCK]), 200
        loop(twin.block_rhs, states, leg.args, block, out, 1)  # compile
        start = time.perf_counter()
        loop(twin.block_rhs, states, leg.args, block, out, rounds)
        calls = int(leg.iws[twin.I_NFEV])
        total += (time.perf_counter() - start) / (rounds * r.count) * calls
        count += calls
    return total, count


def _every_model(repeat: int) -> None:
    """Per trajectory, natively and on the pure path, at every registered model's defaults."""
    from reduced_odes import SolverConfig, solve
    from reduced_odes._registry import registered_models

    native_config = SolverConfig(backend="numba")
    for model in registered_models():
        params = model.make_params({})
        for variant in model.variants:
            native_run = functools.partial(solve, params, variant, native_config, model=model)
            pure_run = functools.partial(solve, params, variant, model=model)
            steps = native_run().stats.steps, pure_run().stats.steps  # compile or load once
            native, pure = _median(native_run, repeat), _median(pure_run, repeat)
            print(f"  {model.name} ({variant}): native {native * 1e3:.2f} ms ({steps[0]} "
                  f"steps), pure {pure * 1e3:.1f} ms ({steps[1]} steps), ratio "
                  f"{pure / native:.1f}x")


def _python_rule(repeat: int) -> None:
    """``two_mixture`` natively with its stop rule compiled in, and with the same rule as a
    Python function (called between chunks of native steps, once per step)."""
    from reduced_odes import SolverConfig, solve
    from reduced_odes._compile import load_system
    from reduced_odes.models import get_model

    model, variant = get_model("two_mixture"), "square"
    params, config = model.make_params({}), SolverConfig(backend="numba")
    run = functools.partial(solve, params, variant, config, model=model)
    run()
    compiled = _median(run, repeat)
    rule = model.settled(params, variant)
    system = load_system(model, variant)
    as_function = rule.function(system.coordinate_names, system.observable_names,
                                system.observables, model.parameter_values(params, variant))
    model.settled = lambda params, variant: as_function
    try:
        run()  # its own twin (no rule compiled in): compiled or loaded once
        python = _median(run, repeat)
    finally:
        del model.settled
    print(f"two_mixture (square) natively, its stop rule compiled in: {compiled * 1e3:.2f} ms; "
          f"the same rule as a Python function: {python * 1e3:.2f} ms ({python / compiled:.1f}x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=21)
    parser.add_argument("--skip-compile", action="store_true", help="no first-compile run")
    parser.add_argument("--cold-repeat", type=int, default=5,
                        help="cold starts (and numba floors) to take the median of")
    parser.add_argument("--sweep-repeat", type=int, default=5,
                        help="native sweeps to take the median of (default 5)")
    parser.add_argument("--skip-pure-sweep", action="store_true",
                        help="no pure-Python sweep (it takes about a minute)")
    options = parser.parse_args()
    from reduced_odes import SolverConfig, solve
    from reduced_odes._native import _twin

    # Stepping as a long job steps: on the integrator for the legs' size, which a process
    # binds after SPECIALISE_AFTER runs of a twin; here from the first run.
    _twin.SPECIALISE_AFTER = 1
    from reduced_odes._compile import cache_dir
    from reduced_odes.models import get_model

    model = get_model("induction_head")
    params = model.make_params(PARAMS)
    native_config = SolverConfig(backend="numba")
    solve(params, solver=native_config, model=model)  # compile or load once
    native = _median(lambda: solve(params, solver=native_config, model=model), options.repeat)
    pure = _median(lambda: solve(params, model=model), options.repeat)
    print(f"per trajectory: native {native * 1e3:.2f} ms, pure {pure * 1e3:.1f} ms, "
          f"ratio {pure / native:.1f}x (target <= 1 ms and >= 15x)")
    stepping, legs = _stepping(lambda: solve(params, solver=native_config, model=model),
                               options.repeat)
    rhs, nfev = _rhs_time(legs)
    print(f"  of which native stepping {stepping * 1e3:.2f} ms, and in it {nfev} right-hand "
          f"sides {rhs * 1e3:.2f} ms")
    print("per trajectory at each model's defaults:")
    _every_model(options.repeat)
    _python_rule(options.repeat)
    for label, config in (("native", native_config), ("pure", SolverConfig())):
        steps = [solve(model.make_params({**PARAMS, "L": L}), solver=config,
                       model=model).stats.steps for L in (1e2, 1e7)]
        print(f"{label} steps L=1e7 / L=1e2: {steps[1]} / {steps[0]} = "
              f"{steps[1] / steps[0]:.3f} (target <= {1.15 if label == 'native' else 1.3})")
    warm = cache_dir()
    one_run = [sys.executable, "-c", _ONE_RUN.format(root=str(ROOT), params=PARAMS)]
    if not options.skip_compile:
        with tempfile.TemporaryDirectory() as fresh:
            _derivations_only(warm, Path(fresh))
            print(f"first compile (import, compile, one trajectory): "
                  f"{_seconds(one_run, fresh):.1f} s (target <= 20 s)")
    with tempfile.TemporaryDirectory() as floor_dir:
        script = Path(floor_dir) / "floor.py"
        script.write_text(_FLOOR)
        floor_run = [sys.executable, str(script)]
        for argv in (floor_run, one_run):  # numba's cache and Python's bytecode, written once
            _seconds(argv, str(warm))
        pairs = [(_seconds(floor_run, str(warm)), _seconds(one_run, str(warm)))
                 for _ in range(options.cold_repeat)]  # interleaved: the same machine load
    floors, colds = zip(*pairs, strict=True)
    print(f"cold start, numba cache warm (import + load + one trajectory): "
          f"{statistics.median(colds):.2f} s (target <= 1 s); numba's own floor (import, one "
          f"cached function): {statistics.median(floors):.2f} s (medians of "
          f"{options.cold_repeat}, interleaved)")
    with tempfile.TemporaryDirectory() as tmp:
        runs = [_sweep("numba", str(warm), Path(tmp) / "native.jsonl")
                for _ in range(options.sweep_repeat)]
        native_sweep = statistics.median(runs)
        line = (f"sweep of grid_1000.toml, 2 workers: native {native_sweep:.2f} s (median of "
                f"{len(runs)}, {min(runs):.2f} to {max(runs):.2f}; target <= 3 s)")
        if not options.skip_pure_sweep:
            pure_sweep = _sweep("python", str(warm), Path(tmp) / "pure.jsonl")
            line += f", pure {pure_sweep:.1f} s, ratio {pure_sweep / native_sweep:.1f}x"
        print(line)


if __name__ == "__main__":
    main()
