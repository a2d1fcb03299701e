"""What the backends' contract costs, measured in the same run (medians).

Run from the repository root (the native rows need numba, the ``[fast]`` extra)::

    python benchmarks/bench_cross_check.py [--repeat 7]

Reports, at the defaults of every registered model (its first variant):

* the time of ``solve`` with ``SolverConfig(cross_check=True)`` over a plain one, on each
  backend (the check solves again at a hundredth of the tolerances);
* natively, the steps and the time at the native tolerance factor
  (``reduced_odes._native._solve.TIGHTER``, a tenth) over those at the requested
  tolerances themselves;
* the largest estimated relative error of a phase time, and how many phases are marked.
"""

from __future__ import annotations

import argparse
import functools

from bench_native import _median  # this directory's: run as benchmarks/bench_cross_check.py

from reduced_odes import SolverConfig, solve
from reduced_odes._backend import native_available
from reduced_odes._registry import registered_models


def _cross_check_rows(repeat: int) -> None:
    backends = ["python"] + (["numba"] if native_available() else [])
    print("model               backend  plain (s)  checked (s)  ratio  worst estimate  marked")
    for model in registered_models():
        params, variant = model.make_params({}), model.variants[0]
        for backend in backends:
            plain_config = SolverConfig(backend=backend)
            checked_config = SolverConfig(backend=backend, cross_check=True)
            solve(params, variant, checked_config, model=model)  # compiles, loads
            plain = _median(functools.partial(solve, params, variant, plain_config,
                                                   model=model), repeat)
            checked = _median(functools.partial(solve, params, variant, checked_config,
                                                     model=model), repeat)
            result = solve(params, variant, checked_config, model=model)
            estimates = [c["error_estimate"] for c in result.conditioning.values()]
            worst = max((e for e in estimates if e == e), default=float("nan"))
            print(f"{model.name:19s} {backend:8s} {plain:9.4f}  {checked:11.4f}  "
                  f"{checked / plain:5.2f}  {worst:14.2e}  {len(result.ill_conditioned)}")


def _tighter_rows(repeat: int) -> None:
    from reduced_odes._native import _solve

    print("\nmodel               native steps x  time x   (at TIGHTER against at 1)")
    for model in registered_models():
        params, variant = model.make_params({}), model.variants[0]
        config = SolverConfig(backend="numba")
        measured = {}
        for factor in (_solve.TIGHTER, 1.0):
            previous, _solve.TIGHTER = _solve.TIGHTER, factor
            try:
                steps = solve(params, variant, config, model=model).stats.steps
                seconds = _median(functools.partial(solve, params, variant, config,
                                                         model=model), repeat)
            finally:
                _solve.TIGHTER = previous
            measured[factor] = (steps, seconds)
        (steps, seconds), (base_steps, base_seconds) = measured[_solve.TIGHTER], measured[1.0]
        print(f"{model.name:19s} {steps / base_steps:14.2f}  {seconds / base_seconds:6.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    _cross_check_rows(args.repeat)
    if native_available():
        _tighter_rows(args.repeat)


if __name__ == "__main__":
    main()
