"""What finding the model from its parameters costs: ``solve(params, variant, config)``
against ``solve(params, variant, config, model=model)``.

Run from the repository root::

    python benchmarks/bench_lookup.py            # about half a minute (plus a first compile)
    python benchmarks/bench_lookup.py --quick    # fewer rounds

Measured, in one run, on ``deep_linear`` at its defaults (the cheapest trajectory of
the built-in models, so the lookup weighs the most), on the native backend when numba
is installed, else on the pure-Python one:

* both calls, in interleaved rounds (each round times a batch of each, in alternating
  order, so that drifts of the machine fall on both alike); per-call medians over the
  rounds, and their ratio (target: at most 1.05);
* the lookup alone, :func:`~reduced_odes.model_for`, and, for comparison, the listing
  of every registered model (:func:`~reduced_odes.registered_models`, which reads the
  installed packages' entry points), which the lookup used to do on every call.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: The call without ``model=`` may cost at most this much more than the call with it.
TARGET_RATIO = 1.05


def _per_call(fn, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls


def _calls_for(fn, seconds: float) -> int:
    """Calls of ``fn`` that take about ``seconds``."""
    return max(1, round(seconds / _per_call(fn, 20)))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    args = parser.parse_args(argv)
    rounds = 10 if args.quick else 40

    from reduced_odes import SolverConfig, get_model, model_for, registered_models, solve
    from reduced_odes._backend import native_available

    model = get_model("deep_linear")
    params, variant = model.Params(), model.variants[0]
    config = SolverConfig(backend="numba" if native_available() else "python")

    def without():
        return solve(params, variant, config)

    def with_model():
        return solve(params, variant, config, model=model)

    assert without().phases == with_model().phases  # also compiles (or loads) the twin
    calls = _calls_for(with_model, 0.05)
    timings: dict[str, list[float]] = {"without": [], "with": []}
    for i in range(rounds):
        order = (("without", without), ("with", with_model))
        for name, fn in order if i % 2 == 0 else order[::-1]:
            timings[name].append(_per_call(fn, calls))
    t_without, t_with = (statistics.median(timings[k]) for k in ("without", "with"))
    ratio = t_without / t_with
    lookup = _per_call(lambda: model_for(params), 100_000)
    listing = _per_call(registered_models, 50)

    print(f"deep_linear, backend {config.backend}: {rounds} rounds of {calls} calls each")
    print(f"solve(params, variant, config):              median {t_without * 1e6:8.1f} us/call")
    print(f"solve(params, variant, config, model=model): median {t_with * 1e6:8.1f} us/call")
    verdict = "meets target" if ratio <= TARGET_RATIO else "MISSES target"
    print(f"ratio without / with model=: {ratio:.3f} [{verdict}: <= {TARGET_RATIO}]")
    print(f"model_for(params) alone: {lookup * 1e6:.2f} us (a dictionary lookup); listing every "
          f"registered model, as each call did before: {listing * 1e3:.2f} ms")
    return 0 if ratio <= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
