"""Why the pure path integrates the whole induction-head system in ``t``: the 4-gram block
``(w_v1, p)`` alone, in ``t`` and in its log time ``s = ln(1 + t/t0)``, on SciPy's stiff
integrators, at L = 1e2 and L = 1e7.

Run from the repository root (pure Python; numba is not needed)::

    python benchmarks/bench_pure_blocks.py

For each integrator it prints the accepted steps, the right-hand sides, the wall time
and the end state's largest relative difference from LSODA in ``t``, over the interval
that ``solve`` integrates at the default setting (L varied: alpha = 0.5, w* = 0.3,
sigma = 1e-4, rtol 1e-10, atol 1e-12).  The rows:

* LSODA, stepped as the pure path steps it, in ``t`` and in ``s``;
* LSODA in ``s`` with its Adams order capped (``max_order_ns``): LSODA switches to its
  BDF branch only when it judges the problem stiff, and a lower Adams order only costs
  more steps;
* SciPy's BDF (``solve_ivp``, pure Python) and VODE's BDF (Fortran), in ``s``.

The whole system's steps on the pure path (``solve``) are printed for comparison.
"""

from __future__ import annotations

import math
import sys
import time
import warnings
from functools import partial
from pathlib import Path

import numpy as np
from scipy.integrate import ode, solve_ivp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _block_flow(system, args, block: int):
    """The block's flow and Jacobian (Python, from the generated module) in ``t``."""
    from reduced_odes._compile import _load_module

    module = _load_module(system.path)
    rhs, jac = getattr(module, f"rhs_block{block}"), getattr(module, f"jac_block{block}")
    return (lambda t, y: np.array(rhs(t, y, *args)),
            lambda t, y: np.array(jac(t, y, *args)))


def _in_log_time(rhs, jac, t0: float):
    """The same flow in ``s = ln(1 + t/t0)``: ``dy/ds = (t0 + t) dy/dt``."""
    def rhs_s(s, y):
        t = t0 * math.expm1(s)
        return rhs(t, y) * (t0 + t)

    def jac_s(s, y):
        t = t0 * math.expm1(s)
        return jac(t, y) * (t0 + t)

    return rhs_s, jac_s


def _stepped(integrator: str, rhs, jac, y0, end: float, **options) -> tuple:
    """SciPy's ``ode`` stepped one accepted step per call (itask 5), as the pure path
    steps LSODA: ``(steps, nfev, end state)``."""
    solver = ode(rhs, jac)
    solver.set_integrator(integrator, rtol=1e-10, atol=1e-12, nsteps=10**6, **options)
    solver.set_initial_value(np.array(y0, dtype=float), 0.0)
    inner = solver._integrator
    inner.call_args[2], inner.rwork[0] = 5, end
    y, s, steps = solver._y, 0.0, 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        while s < end:
            y, s = inner.run(rhs, jac, y, s, end, (), ())
            steps += 1
            if not inner.success:
                return steps, int(inner.iwork[11]), None
    return steps, int(inner.iwork[11]), y.copy()


def _bdf(rhs, jac, y0, end: float) -> tuple:
    run = solve_ivp(rhs, (0.0, end), y0, method="BDF", jac=jac, rtol=1e-10, atol=1e-12)
    return run.t.size - 1, run.nfev, run.y[:, -1] if run.success else None


def _rows(rhs, jac, t0: float, y0, end: float) -> list:
    """``(label, run)`` for each integrator compared; ``run()`` gives ``_stepped``'s triple."""
    rhs_s, jac_s = _in_log_time(rhs, jac, t0)
    s_end = math.log1p(end / t0)
    in_s = (rhs_s, jac_s, y0, s_end)
    return [("LSODA in t", partial(_stepped, "lsoda", rhs, jac, y0, end)),
            ("LSODA in s", partial(_stepped, "lsoda", *in_s)),
            *((f"LSODA in s, Adams order <= {order}",
               partial(_stepped, "lsoda", *in_s, max_order_ns=order)) for order in (5, 2)),
            ("SciPy BDF in s", partial(_bdf, *in_s)),
            ("VODE BDF in s", partial(_stepped, "vode", *in_s, method="bdf",
                                      with_jacobian=True))]


def main() -> None:
    from reduced_odes import solve
    from reduced_odes._compile import load_system
    from reduced_odes.models import get_model

    model = get_model("induction_head")
    system = load_system(model, "linear")
    block, t0 = 0, system.log_times[0]
    index = list(system.blocks[block])
    names = [system.coordinate_names[i] for i in index]
    print(f"block {tuple(names)}, log time t0 = {t0:g}")
    for L in (1e2, 1e7):
        params = model.make_params({"L": L})  # the rest at their defaults
        whole = solve(params, model=model)
        end, y0 = float(whole.t[-1]), [float(whole.series[n][0]) for n in names]
        rhs, jac = _block_flow(system, model.parameter_values(params, "linear"), block)
        rows = _rows(rhs, jac, t0, y0, end)
        print(f"L = {L:g}: the whole system on the pure path, {whole.stats.steps} steps "
              f"(t_end = {end:.6g})")
        reference = None
        for label, run in rows:
            start = time.perf_counter()
            steps, nfev, y_end = run()
            seconds = time.perf_counter() - start
            reference = y_end if reference is None else reference
            if y_end is None:
                agreement = "failed before the end"
            else:
                agreement = f"end state within {np.max(np.abs(y_end / reference - 1)):.1e}"
            print(f"  {label:32s} {steps:6d} steps {nfev:7d} rhs {seconds * 1e3:8.1f} ms  "
                  f"{agreement}")


if __name__ == "__main__":
    main()
