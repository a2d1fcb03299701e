"""Driver 2: :func:`scipy.integrate.solve_ivp` with terminal events (Radau, BDF; LSODA fallback)."""

from __future__ import annotations

import warnings

import numpy as np

from ._driver import _T_MAX, StepRun, stopped
from ._problem import EVALUATION_ERRORS, Problem
from ._trajectory import DomainError

#: The step budget of SciPy's Radau and BDF: a fifth of LSODA's and the native stepper's
#: (``_driver._MAX_STEPS``, 100,000), for a like cost: a Radau step costs ~0.56 ms against
#: ~15 us for an LSODA step (100,000 Radau steps measured at 56 s of CPU, deep_linear at
#: sigma 1e-100, rtol 1e-13, atol 1e-30, where the steps shrink without failing).  Runs of
#: every model take 1e3 to 5e3 steps.
_MAX_STEPS = 20_000


class IvpStepper:
    """The stepper of :func:`scipy.integrate.solve_ivp`'s stiff methods (``problem.method``):
    Radau and BDF, and LSODA where the direct driver cannot run (see :mod:`reduced_odes._lsoda`).
    """

    #: Failure messages name the method itself.
    label = None

    @staticmethod
    def run(problem: Problem) -> StepRun:
        """Integrate ``problem`` until it settles (or to its ``t_end``)."""
        return _ivp_run(problem)


def _terminal(fn):
    fn.terminal = True
    fn.direction = -1
    return fn


class _StepBudget:
    """A terminal event that ends a run after ``_MAX_STEPS`` steps: ``solve_ivp`` has none,
    and a tolerance below what the flow resolves shrinks its steps without failing.
    ``solve_ivp`` calls an event once at the start of each piece and once at the end of
    each step; past the budget it turns negative after the last step within it, where its
    root then lies."""

    terminal = True
    direction = -1

    def __init__(self) -> None:
        self.calls, self.t_last, self.t_spent = 0, -np.inf, None

    def __call__(self, t: float, y, *args) -> float:
        if self.t_spent is None:
            self.calls += 1
            if self.calls <= _MAX_STEPS:
                self.t_last = t
                return 1.0
            self.t_spent = self.t_last
        return self.t_spent - t


def _ivp_piece(problem: Problem, y0, t0: float, t1: float, converge: bool,
               budget: _StepBudget):
    from scipy.integrate import solve_ivp

    rhs, jac = problem.guarded()
    events = [budget]
    if problem.system.domain_labels:
        events.append(_terminal(lambda t, y, *_: min(problem.margins(y))))
    if converge:
        events.append(_terminal(lambda t, y, *_: problem.settled(t, y)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # LSODA's own excess-work notes
        try:
            return solve_ivp(
                rhs, (t0, t1), y0, method=problem.method, jac=jac, rtol=problem.rtol,
                atol=problem.tolerance(), dense_output=True, args=problem.args,
                events=events or None)
        except EVALUATION_ERRORS as exc:
            raise problem.evaluation_error(t0, y0, exc) from None


def _ivp_run(problem: Problem) -> StepRun:
    pieces, t0, y = [], 0.0, problem.y0
    fixed_end = problem.t_end is not None
    t1 = problem.t_end if fixed_end else problem.horizon
    converge = not fixed_end and problem.settled(0.0, y) > 0
    fixed_end = fixed_end or not converge  # started settled: run to the horizon
    edge = 1 if problem.system.domain_labels else None
    settle = (2 if edge is not None else 1) if converge else None
    budget = _StepBudget()
    while True:
        try:
            sol = _ivp_piece(problem, y, t0, t1, converge, budget)
        except DomainError as exc:
            raise stopped(exc, _joined(pieces), t0) from None
        if sol.status == -1:
            pieces.append(sol)
            raise stopped(DomainError(f"integrator failed at t={sol.t[-1]:g}: {sol.message}; "
                                      f"{problem.label}"),
                          _joined(pieces), float(sol.t[-1]))
        if not np.all(np.isfinite(sol.y)):
            raise stopped(DomainError(f"non-finite state before t={sol.t[-1]:g}; "
                                      f"{problem.label}"),
                          _joined(pieces), t0)
        pieces.append(sol)
        if sol.t_events[0].size:
            raise stopped(DomainError(f"{problem.method} stopped at t={sol.t[-1]:.6g}: more "
                                      f"than {_MAX_STEPS} steps; "
                                      f"{problem.describe(sol.y[:, -1])}"),
                          _joined(pieces), float(sol.t[-1]))
        if edge is not None and sol.t_events[edge].size:
            t_edge = float(sol.t_events[edge][0])
            raise stopped(problem.edge_error(t_edge, sol.y_events[edge][0]), _joined(pieces),
                          t_edge)
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
            raise stopped(DomainError(f"{problem.label} did not settle before t={_T_MAX:g}"),
                          _joined(pieces), t0)
        t1 = min(4 * t1, _T_MAX)
    return _joined(pieces)


def _joined(pieces: list) -> StepRun | None:
    """The pieces' steps as one run (None if none was taken)."""
    from scipy.integrate import OdeSolution

    stepped = [p for p in pieces if p.sol is not None]  # a failed piece may have no output
    if not stepped or sum(p.t.size - 1 for p in stepped) == 0:
        return None
    ts = np.concatenate([stepped[0].sol.ts] + [p.sol.ts[1:] for p in stepped[1:]])
    interpolants = [i for p in stepped for i in p.sol.interpolants]
    dense = OdeSolution(ts, interpolants)
    steps = np.concatenate([stepped[0].t] + [p.t[1:] for p in stepped[1:]])
    y_steps = np.concatenate([stepped[0].y] + [p.y[:, 1:] for p in stepped[1:]], axis=1)
    return StepRun(dense, steps, y_steps, lambda k: interpolants[k],
                nfev=sum(int(p.nfev) for p in pieces), njev=sum(int(p.njev) for p in pieces),
                nlu=sum(int(p.nlu) for p in pieces))
