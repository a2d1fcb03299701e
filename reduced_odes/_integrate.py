"""The one verb: integrate the reduced induction-head flow from t = 0 to phase IV."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy.integrate import OdeSolution, solve_ivp

from ._compile import CompiledSystem, load_system
from ._params import ModelParams, ParameterError, PhaseThresholds, SolverConfig
from ._phases import first_crossing
from ._provenance import versions

__all__ = ["DomainError", "SolverStats", "Trajectory", "solve", "STATE_NAMES"]

STATE_NAMES = ("w_v1", "p", "w_v2", "w_kq")

#: Phase IV is taken as reached once w_kq is within this relative distance of
#: w_star and the four-gram tail has settled; the run then continues for
#: ``_TAIL_FACTOR`` times the elapsed time so that the exponential decay of
#: L_IH and the algebraic tail t * L_G4 -> 1/4 are both resolved.
_NEAR_FIXED_POINT = 1e-6
_TAIL_FACTOR = 1.0
#: Largest horizon tried before giving up (far beyond any O(L ln(1/sigma)) plateau).
_T_MAX = 1e18


class DomainError(RuntimeError):
    """A trajectory reached the boundary of its closure's domain."""


@dataclass(frozen=True)
class SolverStats:
    """Cost of one integration, as reported by SciPy."""

    method: str
    rtol: float
    atol: float
    nfev: int
    njev: int
    nlu: int
    steps: int

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Trajectory:
    """A solved trajectory on a log-spaced grid, with its dense output.

    Attributes
    ----------
    t : ndarray, shape (n,)
        Output times: 0, then log-spaced up to the end of the run.
    state : ndarray, shape (n, 4)
        Columns ``w_v1, p, w_v2, w_kq``.
    log_w_kq : ndarray, shape (n,)
        ``ln w_kq``, the integration coordinate (finite even where w_kq underflows).
    loss_g4, loss_ih : ndarray, shape (n,)
        The partial losses along the trajectory.
    phases : dict
        ``T_I, T_II, T_em, T_III`` located by root-finding on the dense output.
    stats : SolverStats
    """

    params: ModelParams
    closure: str
    solver: SolverConfig
    thresholds: PhaseThresholds
    t: np.ndarray
    state: np.ndarray
    log_w_kq: np.ndarray
    loss_g4: np.ndarray
    loss_ih: np.ndarray
    phases: dict[str, float]
    stats: SolverStats
    dense: OdeSolution = field(repr=False)
    system: CompiledSystem = field(repr=False)

    def at(self, times) -> np.ndarray:
        """State ``(w_v1, p, w_v2, ln w_kq)`` at arbitrary times from the dense output."""
        return self.dense(times)

    def losses_at(self, times) -> tuple[np.ndarray, np.ndarray]:
        """``(L_G4, L_IH)`` at arbitrary times."""
        states = np.atleast_2d(self.dense(np.atleast_1d(times)).T)
        values = np.array([self.system.observables(y, *self._args)[:2] for y in states])
        return values[:, 0], values[:, 1]

    @property
    def _args(self) -> tuple:
        return (self.params.alpha, self.params.wstar, float(self.params.L))

    @property
    def final(self) -> dict:
        """State and losses at the end of the run."""
        final = dict(zip(STATE_NAMES, (float(v) for v in self.state[-1]), strict=True))
        final.update(t=float(self.t[-1]), log_w_kq=float(self.log_w_kq[-1]),
                     L_G4=float(self.loss_g4[-1]), L_IH=float(self.loss_ih[-1]))
        return final

    def to_dict(self) -> dict:
        """The stable JSON schema of ``reduced-odes solve --json``."""
        return {
            "params": self.params.as_dict(),
            "closure": self.closure,
            "phases": {k: _json_float(v) for k, v in self.phases.items()},
            "final": self.final,
            "solver": {**self.stats.as_dict(), "t_end": float(self.t[-1])},
            "thresholds": self.thresholds.__dict__,
            "versions": versions(),
        }


def _json_float(value: float) -> float | None:
    return None if not math.isfinite(value) else float(value)


def _domain_event(system: CompiledSystem, args: tuple):
    def event(t, y, *_):
        return min(system.observables(y, *args)[2:])

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


def _integrate(system, params, solver, y0, t0, t1):
    args = (params.alpha, params.wstar, float(params.L))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # LSODA's own excess-work notes
        try:
            return solve_ivp(
                system.rhs, (t0, t1), y0, method=solver.method, jac=system.jac,
                rtol=solver.rtol, atol=solver.atol, dense_output=True, args=args,
                events=[_domain_event(system, args), _converged_event(params)],
            )
        except (ValueError, OverflowError, ZeroDivisionError) as exc:
            raise DomainError(
                f"closure {system.closure!r} could not be evaluated ({exc}) while integrating "
                f"from t={t0:g} with L={params.L}, alpha={params.alpha}, wstar={params.wstar}"
            ) from None


def solve(params: ModelParams, closure: str = "linear", solver: SolverConfig | None = None,
          thresholds: PhaseThresholds | None = None) -> Trajectory:
    """Integrate the Stage-II gradient flow from initialisation to phase IV.

    Parameters
    ----------
    params : ModelParams
        Model parameters and initialisation scale.
    closure : {"linear", "meanfield"}
        Softmax closure.
    solver : SolverConfig, optional
        Method and tolerances (default LSODA, rtol 1e-10, atol 1e-12).  With
        ``t_end=None`` the run continues past emergence until ``w_kq`` is
        within 1e-6 (relative) of ``w_star``, and then as long again.
    thresholds : PhaseThresholds, optional
        Definitions of the phase times.

    Returns
    -------
    Trajectory

    Raises
    ------
    ParameterError
        Bad input, naming the parameter, its value and the allowed range.
    DomainError
        The trajectory reached the boundary of the closure's domain.

    Examples
    --------
    >>> traj = solve(ModelParams(L=200, alpha=0.5, wstar=0.3, sigma=1e-4))
    >>> traj.phases["T_I"] < traj.phases["T_II"] < traj.phases["T_em"] < traj.phases["T_III"]
    True
    """
    solver = solver or SolverConfig()
    thresholds = thresholds or PhaseThresholds()
    if not isinstance(params, ModelParams):
        raise ParameterError(f"params={params!r} must be a ModelParams")
    params.check_closure(closure)
    system = load_system(closure)
    y0 = np.array([params.sigma, 0.0, params.sigma, params.log_w_kq0])
    pieces, t0, y, events_seen = [], 0.0, y0, False
    t1 = solver.t_end or 1e3 * params.L / params.alpha**2
    while True:
        sol = _integrate(system, params, solver, y, t0, t1)
        pieces.append(sol)
        if sol.status == -1:
            raise DomainError(f"integrator failed at t={sol.t[-1]:g}: {sol.message}")
        if sol.t_events[0].size:
            t_edge, y_edge = sol.t_events[0][0], sol.y_events[0][0]
            raise DomainError(
                f"trajectory reached the boundary of the {closure!r} domain at t={t_edge:.6g}: "
                f"{_violated(system, y_edge, params)}; state (w_v1, p, w_v2, w_kq) = "
                f"({y_edge[0]:.6g}, {y_edge[1]:.6g}, {y_edge[2]:.6g}, {math.exp(y_edge[3]):.6g})")
        t0, y = sol.t[-1], sol.y[:, -1]
        if solver.t_end is not None and t0 >= solver.t_end:
            break
        if sol.t_events[1].size and not events_seen:
            events_seen = True
            t1 = t0 * (1 + _TAIL_FACTOR)
            continue
        if events_seen:
            break
        if t1 >= _T_MAX:
            raise DomainError(f"no emergence before t={_T_MAX:g}")
        t1 = min(4 * t1, _T_MAX)
    return _assemble(system, params, closure, solver, thresholds, pieces)


def _violated(system, y, params) -> str:
    margins = system.observables(y, params.alpha, params.wstar, float(params.L))[2:]
    worst = int(np.argmin(margins))
    return f"condition {system.domain_labels[worst]} fails (margin {margins[worst]:.3g})"


def _merge(pieces) -> tuple[OdeSolution, np.ndarray]:
    ts = np.concatenate([pieces[0].sol.ts] + [p.sol.ts[1:] for p in pieces[1:]])
    interpolants = [i for p in pieces for i in p.sol.interpolants]
    steps = np.concatenate([pieces[0].t] + [p.t[1:] for p in pieces[1:]])
    return OdeSolution(ts, interpolants), steps


def _assemble(system, params, closure, solver, thresholds, pieces) -> Trajectory:
    dense, steps = _merge(pieces)
    args = (params.alpha, params.wstar, float(params.L))
    t_end = float(steps[-1])
    t = np.concatenate([[0.0], np.geomspace(min(1e-3, t_end / 10), t_end, solver.n_output)])
    y = dense(t)
    y[:, 0] = pieces[0].y[:, 0]
    observables = np.array([system.observables(col, *args)[:2] for col in y.T])
    state = y.T.copy()
    state[:, 3] = np.exp(y[3])
    phases = _phase_times(system, dense, steps, params, thresholds, args)
    stats = SolverStats(
        solver.method, solver.rtol, solver.atol,
        nfev=sum(int(p.nfev) for p in pieces), njev=sum(int(p.njev) for p in pieces),
        nlu=sum(int(p.nlu) for p in pieces), steps=len(steps) - 1)
    return Trajectory(params, closure, solver, thresholds, t, state, y[3].copy(),
                      observables[:, 0], observables[:, 1], phases, stats, dense, system)


def _phase_times(system, dense, steps, params, thresholds, args) -> dict[str, float]:
    y_steps = dense(steps)
    g4_0 = system.observables(y_steps[:, 0], *args)[0]
    g4_level = thresholds.four_gram * g4_0

    def g4_reached(t):
        return g4_level - system.observables(dense(t), *args)[0]

    g4_values = g4_level - np.array([system.observables(c, *args)[0] for c in y_steps.T])
    phases = {"T_I": first_crossing(g4_reached, steps, g4_values)}
    for name, fraction in (("T_II", thresholds.onset), ("T_em", thresholds.emergence),
                           ("T_III", thresholds.converged)):
        level = math.log(fraction * params.wstar)
        phases[name] = first_crossing(lambda t, lv=level: dense(t)[3] - lv, steps,
                                      y_steps[3] - level)
    return phases
