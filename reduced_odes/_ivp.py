"""Driver 2: :func:`scipy.integrate.solve_ivp` with terminal events (Radau, BDF; LSODA fallback)."""

from __future__ import annotations

import math
import warnings

import numpy as np

from ._compile import CompiledSystem
from ._driver import (
    _EVALUATION_ERRORS,
    _NEAR_FIXED_POINT,
    _T_MAX,
    _TAIL_FACTOR,
    _edge_error,
    _evaluation_error,
    _guarded,
    _Run,
)
from ._params import ModelParams
from ._trajectory import DomainError


def _domain_event(system: CompiledSystem, args: tuple):
    def event(t, y, *_):
        return min(system.margins(y, *args))

    event.terminal = True
    event.direction = -1
    return event


def _converged_event(params: ModelParams):
    target = math.log(params.wstar)

    def event(t, y, *_):
        return abs(y[3] - target) - _NEAR_FIXED_POINT

    event.terminal = True
    event.direction = -1
    return event


def _ivp_piece(system, params, closure, solver, y0, t0, t1, converge: bool):
    from scipy.integrate import solve_ivp

    args = (params.alpha, params.wstar, float(params.L))
    rhs, jac = _guarded(system)
    events = [_domain_event(system, args)]
    if converge:
        events.append(_converged_event(params))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # LSODA's own excess-work notes
        try:
            return solve_ivp(
                rhs, (t0, t1), y0, method=solver.method, jac=jac,
                rtol=solver.rtol, atol=solver.atol, dense_output=True, args=args,
                events=events)
        except _EVALUATION_ERRORS as exc:
            raise _evaluation_error(system, closure, params, t0, y0, exc) from None


def _ivp_run(system, params, closure, solver, y0, t_horizon) -> _Run:
    from scipy.integrate import OdeSolution

    pieces, t0, y = [], 0.0, y0
    fixed_end = solver.t_end is not None
    t1 = solver.t_end if fixed_end else t_horizon
    converge = not fixed_end and abs(y0[3] - math.log(params.wstar)) > _NEAR_FIXED_POINT
    fixed_end = fixed_end or not converge  # started at the fixed point: run to t_horizon
    while True:
        sol = _ivp_piece(system, params, closure, solver, y, t0, t1, converge)
        pieces.append(sol)
        if sol.status == -1:
            raise DomainError(f"integrator failed at t={sol.t[-1]:g}: {sol.message}")
        if not np.all(np.isfinite(sol.y)):
            raise DomainError(f"non-finite state before t={sol.t[-1]:g}")
        if sol.t_events[0].size:
            raise _edge_error(system, closure, params, sol.t_events[0][0], sol.y_events[0][0])
        t0, y = sol.t[-1], sol.y[:, -1]
        if fixed_end and t0 >= t1:
            break
        if converge and sol.t_events[1].size:
            converge, fixed_end = False, True
            t1 = t0 * (1 + _TAIL_FACTOR)
            continue
        if t1 >= _T_MAX:
            raise DomainError(f"no emergence before t={_T_MAX:g}")
        t1 = min(4 * t1, _T_MAX)
    ts = np.concatenate([pieces[0].sol.ts] + [p.sol.ts[1:] for p in pieces[1:]])
    interpolants = [i for p in pieces for i in p.sol.interpolants]
    dense = OdeSolution(ts, interpolants)
    steps = np.concatenate([pieces[0].t] + [p.t[1:] for p in pieces[1:]])
    y_steps = np.concatenate([pieces[0].y] + [p.y[:, 1:] for p in pieces[1:]], axis=1)
    return _Run(dense, steps, y_steps, lambda k: interpolants[k],
                nfev=sum(int(p.nfev) for p in pieces), njev=sum(int(p.njev) for p in pieces),
                nlu=sum(int(p.nlu) for p in pieces))
