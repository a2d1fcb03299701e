"""Wall time of one full trajectory (t = 0 to phase IV, rtol 1e-10), and of starting up.

Run from the repository root::

    python benchmarks/bench_solve.py            # all measurements (about a minute)
    python benchmarks/bench_solve.py --quick    # fewer repetitions
    python benchmarks/bench_solve.py --profile  # also a cProfile of the default path

Measured, in one run:

(a) the package's default path: ``solve`` (direct LSODA driver, compiled RHS and
    Jacobian, warm compile cache), L = 200, alpha = 0.5, w* = 0.3, sigma = 1e-4;
(b) a naive baseline: ``solve_ivp(method="Radau")`` on a ``lambdify``-numpy RHS
    of the derived flow ``derive_flow(closure).reduced_rhs`` in plain w_kq
    coordinates (Phi/Psi from ``NUMERIC_IMPLEMENTATIONS``), no Jacobian;
(c) the same RHS with ``solve_ivp(method="LSODA")``, no Jacobian;
(d) the default path at L = 1e2 and L = 1e7 (ratio: how the cost grows with L);
cold start: a fresh, empty cache in a subprocess (import + derive + compile);
warm start: a subprocess importing the package and loading the cached system.

(b) and (c) integrate over the same interval as (a) (to its t_end: phase IV
reached, then as long again), with the same tolerances, and their end states
are checked against (a).  Times are medians over repetitions.
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
TARGETS = {"a": 10e-3, "b/a": 50.0, "d": 1.3, "cold": 5.0, "warm": 0.5}


def _median_time(fn, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def _verdict(ok: bool) -> str:
    return "meets target" if ok else "MISSES target"


def _naive_rhs(closure: str, L: float, alpha: float, wstar: float):
    """The derived flow in (w_v1, p, w_v2, w_kq), lambdified to numpy: the textbook approach."""
    import sympy as sp

    from reduced_odes._positions import SEQ_LEN
    from reduced_odes.models.induction_head.declaration import ALPHA, WSTAR
    from reduced_odes.models.induction_head.derivation import REDUCED_STATE, derive_flow
    from reduced_odes.models.induction_head.special import NUMERIC_IMPLEMENTATIONS

    flow = derive_flow(closure)
    exprs = flow.reduced_rhs.subs({ALPHA: alpha, WSTAR: wstar, SEQ_LEN: L})
    f = sp.lambdify(REDUCED_STATE, list(exprs), modules=[NUMERIC_IMPLEMENTATIONS, "numpy"])

    def rhs(t, y):
        return f(*y)

    return rhs


def _naive_run(rhs, method: str, y0, t_end: float):
    from scipy.integrate import solve_ivp

    return solve_ivp(rhs, (0.0, t_end), y0, method=method, rtol=1e-10, atol=1e-12)


def _subprocess_seconds(code: str, cache: str, repeat: int) -> float:
    path = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "REDUCED_ODES_CACHE": cache, "PYTHONPATH": os.pathsep.join(path)}
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], env=env, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--profile", action="store_true", help="cProfile the default path")
    parser.add_argument("--closure", default="linear", choices=("linear", "meanfield"))
    args = parser.parse_args(argv)
    repeat = 5 if args.quick else 21
    closure = args.closure

    from reduced_odes import load_system, solve
    from reduced_odes.models.induction_head import ModelParams

    # Warm the compile cache (derive + compile on a first run).
    load_system("induction_head", closure)
    params = ModelParams(**PARAMS)
    p_small, p_large = (ModelParams(**{**PARAMS, "L": L}) for L in (100, 10**7))
    for p in (params, p_small, p_large):
        solve(p, closure)  # warm up imports and the in-process cache
    traj = solve(params, closure)
    t_end = float(traj.t[-1])
    rhs = _naive_rhs(closure, float(params.L), params.alpha, params.wstar)
    y0 = [params.sigma, 0.0, params.sigma, params.sigma**2]
    # Interleaved rounds, so that a load change on the machine hits every quantity alike.
    runs = {
        "a": lambda: solve(params, closure),
        "d100": lambda: solve(p_small, closure),
        "d1e7": lambda: solve(p_large, closure),
        "c": lambda: _naive_run(rhs, "LSODA", y0, t_end),
        "b": lambda: _naive_run(rhs, "Radau", y0, t_end),
    }
    times, results = {k: [] for k in runs}, {}
    for round_ in range(repeat):
        for key, fn in runs.items():
            if key == "b" and round_ >= (2 if args.quick else 5):
                continue  # the slow baseline: fewer repetitions
            start = time.perf_counter()
            results[key] = fn()
            times[key].append(time.perf_counter() - start)
    med = {k: statistics.median(v) for k, v in times.items()}
    best = {k: min(v) for k, v in times.items()}

    t_a = med["a"]
    print(f"setting: closure={closure}, " + ", ".join(f"{k}={v}" for k, v in PARAMS.items())
          + f", rtol=1e-10, atol=1e-12; t_end={t_end:.6g}; python {sys.version.split()[0]}")
    print(f"(a) default path (solve, LSODA, warm cache): median {t_a * 1e3:.2f} ms "
          f"(best {best['a'] * 1e3:.2f}) over {len(times['a'])} runs; {traj.stats.steps} steps, "
          f"nfev {traj.stats.nfev}, njev {traj.stats.njev}  "
          f"[{_verdict(t_a <= TARGETS['a'])}: <= 10 ms]")
    final = traj.state[-1]
    for label, method in (("b", "Radau"), ("c", "LSODA")):
        sol = results[label]
        agree = max(abs(sol.y[i, -1] - final[i]) / max(abs(final[i]), 1e-3) for i in range(4))
        ratio = med[label] / t_a
        target = (f"  [{_verdict(ratio >= TARGETS['b/a'])}: >= 50]" if label == "b" else "")
        print(f"({label}) solve_ivp {method}, lambdify-numpy RHS, no Jacobian: median "
              f"{med[label] * 1e3:.1f} ms over {len(times[label])} runs ({len(sol.t) - 1} steps, "
              f"nfev {sol.nfev}); {label}/a = {ratio:.1f} (best/best "
              f"{best[label] / best['a']:.1f}){target}; end state agrees with (a) to {agree:.1e}")
    for key, L in (("d100", 100), ("d1e7", 10**7)):
        tr = results[key]
        print(f"(d) default path at L={L:g}: median {med[key] * 1e3:.2f} ms "
              f"(best {best[key] * 1e3:.2f}; {tr.stats.steps} steps, t_end {tr.t[-1]:.3g})")
    ratio = med["d1e7"] / med["d100"]
    print(f"(d) ratio t(L=1e7) / t(L=1e2) = {ratio:.2f} (best/best "
          f"{best['d1e7'] / best['d100']:.2f}; steps ratio "
          f"{results['d1e7'].stats.steps / results['d100'].stats.steps:.2f})  "
          f"[{_verdict(ratio <= TARGETS['d'])}: within 1.3x]")

    code_load = f"import reduced_odes; reduced_odes.load_system('induction_head', {closure!r})"
    base = _subprocess_seconds("pass", tempfile.mkdtemp(), 3)
    with tempfile.TemporaryDirectory() as cold_root:
        cold = []
        for i in range(1 if args.quick else 3):
            cache = os.path.join(cold_root, f"cache{i}")  # fresh and empty each time
            cold.append(_subprocess_seconds(code_load, cache, 1))
        t_cold = statistics.median(cold)
        warm = _subprocess_seconds(code_load, os.path.join(cold_root, "cache0"), 5)
        first = _subprocess_seconds(
            code_load + "; from reduced_odes.models.induction_head import ModelParams; "
            f"reduced_odes.solve(ModelParams(), {closure!r})",
            os.path.join(cold_root, "cache0"), 3)
        code_sympy = (code_load + "; import sys; "
                      "assert 'sympy' not in sys.modules, 'warm start imported sympy'")
        _subprocess_seconds(code_sympy, os.path.join(cold_root, "cache0"), 1)
    print(f"cold start (subprocess, empty cache: import + derive + compile): {t_cold:.2f} s  "
          f"[{_verdict(t_cold <= TARGETS['cold'])}: <= 5 s]")
    print(f"warm start (subprocess: import + load from cache; SymPy not imported): {warm:.2f} s "
          f"wall, of which {base:.2f} s is the bare interpreter start (python -c pass)  "
          f"[{_verdict(warm <= TARGETS['warm'])}: <= 0.5 s]")
    print(f"warm start to a first solved trajectory (subprocess, imports SciPy): {first:.2f} s")

    if args.profile:
        import cProfile
        import pstats

        profile = cProfile.Profile()
        profile.enable()
        for _ in range(10):
            solve(params, closure)
        profile.disable()
        print("\nprofile of 10 default-path solves (by internal time):")
        pstats.Stats(profile).sort_stats("tottime").print_stats(12)
    return 0


if __name__ == "__main__":
    sys.exit(main())
