"""Results of an integration: the trajectory, its solver statistics, and the domain error."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ._compile import CompiledSystem
from ._params import ModelParams, PhaseThresholds, SolverConfig
from ._provenance import versions

__all__ = ["STATE_NAMES", "DomainError", "SolverStats", "Trajectory"]

STATE_NAMES = ("w_v1", "p", "w_v2", "w_kq")


class DomainError(RuntimeError):
    """A trajectory reached the boundary of its closure's domain."""


@dataclass(frozen=True)
class SolverStats:
    """Cost of one integration, as reported by the integrator."""

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
    dense : callable
        ``dense(t)``: state ``(w_v1, p, w_v2, ln w_kq)`` at ``t`` (shape ``(4,)``
        for a scalar, ``(4, m)`` for ``m`` times), like SciPy's ``OdeSolution``;
        ``dense.ts`` are the accepted steps.
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
    dense: Callable = field(repr=False)
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
