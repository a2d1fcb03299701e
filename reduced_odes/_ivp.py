"""Driver 2: :func:`scipy.integrate.solve_ivp` with terminal events (Radau, BDF; LSODA fallback)."""

from __future__ import annotations

import warnings

import numpy as np

from ._driver import _EVALUATION_ERRORS, _T_MAX, Problem, _Run
from ._trajectory import DomainError


def _terminal(fn):
    fn.terminal = True
    fn.direction = -1
    return fn


def _ivp_piece(problem: Problem, y0, t0: float, t1: float, converge: bool):
    from scipy.integrate import solve_ivp

    rhs, jac = problem.guarded()
    events = []
    if problem.system.domain_labels:
        events.append(_terminal(lambda t, y, *_: min(problem.margins(y))))
    if converge:
        events.append(_terminal(lambda t, y, *_: problem.settled(t, y)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # LSODA's own excess-work notes
        try:
            return solve_ivp(
                rhs, (t0, t1), y0, method=problem.method, jac=jac, rtol=problem.rtol,
                atol=problem.atol, dense_output=True, args=problem.args, events=events or None)
        except _EVALUATION_ERRORS as exc:
            raise problem.evaluation_error(t0, y0, exc) from None


def _ivp_run(problem: Problem) -> _Run:
    from scipy.integrate import OdeSolution

    pieces, t0, y = [], 0.0, problem.y0
    fixed_end = problem.t_end is not None
    t1 = problem.t_end if fixed_end else problem.horizon
    converge = not fixed_end and problem.settled(0.0, y) > 0
    fixed_end = fixed_end or not converge  # started settled: run to the horizon
    edge = 0 if problem.system.domain_labels else None
    settle = (1 if edge is not None else 0) if converge else None
    while True:
        sol = _ivp_piece(problem, y, t0, t1, converge)
        pieces.append(sol)
        if sol.status == -1:
            raise DomainError(f"integrator failed at t={sol.t[-1]:g}: {sol.message}")
        if not np.all(np.isfinite(sol.y)):
            raise DomainError(f"non-finite state before t={sol.t[-1]:g}")
        if edge is not None and sol.t_events[edge].size:
            raise problem.edge_error(sol.t_events[edge][0], sol.y_events[edge][0])
        t0, y = sol.t[-1], sol.y[:, -1]
        if fixed_end and t0 >= t1:
            break
        if converge and sol.t_events[settle].size:
            converge, fixed_end = False, True
            t1 = t0 * (1 + problem.tail)
            if t1 <= t0:  # no tail: the run ends where it settled
                break
            continue
        if t1 >= _T_MAX:
            raise DomainError(f"{problem.label} did not settle before t={_T_MAX:g}")
        t1 = min(4 * t1, _T_MAX)
    ts = np.concatenate([pieces[0].sol.ts] + [p.sol.ts[1:] for p in pieces[1:]])
    interpolants = [i for p in pieces for i in p.sol.interpolants]
    dense = OdeSolution(ts, interpolants)
    steps = np.concatenate([pieces[0].t] + [p.t[1:] for p in pieces[1:]])
    y_steps = np.concatenate([pieces[0].y] + [p.y[:, 1:] for p in pieces[1:]], axis=1)
    return _Run(dense, steps, y_steps, lambda k: interpolants[k],
                nfev=sum(int(p.nfev) for p in pieces), njev=sum(int(p.njev) for p in pieces),
                nlu=sum(int(p.nlu) for p in pieces))
