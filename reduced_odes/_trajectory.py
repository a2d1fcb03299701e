"""Results of an integration: the trajectory, its solver statistics, and the domain error."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._params import Parameters, SolverConfig
from ._provenance import versions

__all__ = ["DomainError", "SolverStats", "Trajectory"]


class DomainError(RuntimeError):
    """A trajectory reached the boundary of its model's domain, or could not be integrated."""


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
    model, variant : str
        The model's name and variant.
    params : Parameters
        The model's parameters.
    t : ndarray, shape (n,)
        Output times: 0, then log-spaced up to the end of the run.
    series : dict of str -> ndarray, shape (n,)
        Every integration coordinate, state variable and observable by name
        (e.g. ``w_kq``, ``log_w_kq``, ``L_G4``).
    phases : dict
        Phase times, located by root-finding on the dense output (NaN: not reached).
    unreached : dict
        For each phase not reached, the reason (``solve --json``: ``phase_outcomes``).
    stats : SolverStats
    dense : callable
        ``dense(t)``: the integration coordinates at ``t`` (shape ``(k,)`` for a
        scalar, ``(k, m)`` for ``m`` times), like SciPy's ``OdeSolution``.
    """

    model: str
    variant: str
    variant_option: str
    params: Parameters
    solver: SolverConfig
    thresholds: Parameters | None
    t: np.ndarray
    series: dict[str, np.ndarray]
    phases: dict[str, float]
    stats: SolverStats
    dense: Callable = field(repr=False)
    system: Any = field(repr=False)
    #: Phase name -> why it has no time (only the phases not reached).
    unreached: dict[str, str] = field(default_factory=dict)
    #: The model's parameter values, as the compiled system takes them.
    system_args: tuple[float, ...] = ()

    @property
    def state(self) -> np.ndarray:
        """The state variables as columns, shape ``(n, k)``, in the model's order."""
        return np.column_stack([self.series[name] for name in self.system.state_names])

    def at(self, times) -> np.ndarray:
        """Integration coordinates at arbitrary times, from the dense output."""
        return self.dense(times)

    def observables_at(self, times) -> dict[str, np.ndarray]:
        """Every observable at arbitrary times, from the dense output."""
        args = self.system_args
        states = np.atleast_2d(self.dense(np.atleast_1d(times)).T)
        names = self.system.observable_names
        values = np.array([self.system.observables(y, *args)[:len(names)] for y in states])
        return {name: values[:, i] for i, name in enumerate(names)}

    @property
    def final(self) -> dict:
        """Every series at the end of the run: state, ``t``, coordinates, observables."""
        names = list(self.system.state_names) + ["t"]
        names += [n for n in self.system.coordinate_names if n not in names]
        names += list(self.system.observable_names)
        return {name: (float(self.t[-1]) if name == "t" else float(self.series[name][-1]))
                for name in names}

    def to_dict(self) -> dict:
        """The stable JSON schema of ``reduced-odes solve --json``."""
        document = {
            "model": self.model,
            "params": self.params.as_dict(),
            self.variant_option: self.variant,
            "phases": {k: _json_float(v) for k, v in self.phases.items()},
            "phase_outcomes": {k: {"reached": k not in self.unreached,
                                   "reason": self.unreached.get(k)} for k in self.phases},
            "final": {k: _json_float(v) for k, v in self.final.items()},
            "solver": {**self.stats.as_dict(), "backend": self.solver.backend,
                       "t_end": float(self.t[-1])},
            "versions": versions(),
        }
        if self.thresholds is not None:
            document["thresholds"] = self.thresholds.as_dict()
        return document


def _json_float(value: float) -> float | None:
    return None if not math.isfinite(value) else float(value)
