"""Configuration nouns: model parameters, solver settings, phase thresholds.

Every check raises :class:`ParameterError` naming the parameter, its value and
the allowed range (spec section 7).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

__all__ = [
    "CLOSURE_WSTAR_LIMITS",
    "METHODS",
    "ModelParams",
    "ParameterError",
    "PhaseThresholds",
    "SolverConfig",
]

#: Supremum of w_star inside each closure's domain. From the derived domains
#: (``1 - 4 w*^2 > 0`` for linear, ``1 - 2 w*^2 > 0`` for meanfield); a test
#: re-derives them and compares.
CLOSURE_WSTAR_LIMITS = {"linear": 0.5, "meanfield": math.sqrt(0.5)}
METHODS = ("LSODA", "Radau", "BDF")


class ParameterError(ValueError):
    """An input outside its allowed range."""


def _number(name: str, value, allowed: str) -> float:
    """``value`` as a finite float, or a ParameterError naming ``name`` and ``allowed``."""
    if isinstance(value, bool):
        raise ParameterError(f"{name}={value!r} is not a number; allowed: {allowed}")
    if not isinstance(value, int | float):
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise ParameterError(f"{name}={value!r} is not a number; allowed: {allowed}") from None
    if not math.isfinite(value):
        raise ParameterError(f"{name}={value!r} is not finite; allowed: {allowed}")
    return float(value)


def _open_interval(name: str, value, lo: float, hi: float) -> float:
    allowed = f"the open interval ({lo:g}, {hi:g})"
    value = _number(name, value, allowed)
    if not lo < value < hi:
        raise ParameterError(f"{name}={value!r} is outside {allowed}")
    return value


def _positive(name: str, value) -> float:
    value = _number(name, value, "a finite number > 0")
    if value <= 0:
        raise ParameterError(f"{name}={value!r} must be > 0 (a finite number > 0)")
    return value


@dataclass(frozen=True)
class ModelParams:
    """Parameters of the induction-head model and its initialisation.

    Parameters
    ----------
    L : int
        Sequence length, an integer >= 4.
    alpha : float
        Weight of the 4-gram component, in (0, 1).
    wstar : float
        Target query-key weight, > 0 and inside the closure's domain.
    sigma : float
        Initialisation scale: w_v1 = w_v2 = w_k = w_q = sigma, p = 0.

    Examples
    --------
    >>> ModelParams(L=200, alpha=0.5, wstar=0.3, sigma=1e-4).w_kq0
    1e-08
    >>> ModelParams(alpha=1.5)
    Traceback (most recent call last):
    ...
    reduced_odes._params.ParameterError: alpha=1.5 is outside the open interval (0, 1)
    """

    L: int = 200
    alpha: float = 0.5
    wstar: float = 0.3
    sigma: float = 1e-4

    def __post_init__(self):
        length = _number("L", self.L, "an integer >= 4")
        if length != int(length) or length < 4:
            raise ParameterError(f"L={self.L!r} must be an integer >= 4")
        object.__setattr__(self, "L", int(length))
        object.__setattr__(self, "alpha", _open_interval("alpha", self.alpha, 0.0, 1.0))
        object.__setattr__(self, "wstar", _positive("wstar", self.wstar))
        object.__setattr__(self, "sigma", _positive("sigma", self.sigma))

    @property
    def w_kq0(self) -> float:
        """Initial query-key product ``sigma**2`` (may underflow; see ``log_w_kq0``)."""
        return self.sigma**2

    @property
    def log_w_kq0(self) -> float:
        return 2.0 * math.log(self.sigma)

    def check_closure(self, closure: str) -> None:
        """Raise unless ``closure`` is known and ``wstar`` lies in its domain."""
        if closure not in CLOSURE_WSTAR_LIMITS:
            raise ParameterError(f"closure={closure!r}; allowed: {sorted(CLOSURE_WSTAR_LIMITS)}")
        _open_interval(f"wstar (closure {closure})", self.wstar, 0.0,
                       CLOSURE_WSTAR_LIMITS[closure])

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class PhaseThresholds:
    """Fractions defining the phase times (spec section 6 and the `solve --json` schema).

    ``four_gram``: T_I is the first t with L_G4 <= four_gram * L_G4(0);
    ``onset``, ``emergence``, ``converged``: T_II, T_em, T_III are the first t
    with w_kq >= that fraction of w_star.  Each must lie in (0, 1).
    """

    four_gram: float = 0.01
    onset: float = 0.1
    emergence: float = 0.5
    converged: float = 0.9

    def __post_init__(self):
        for name in ("four_gram", "onset", "emergence", "converged"):
            object.__setattr__(self, name, _open_interval(f"threshold {name}",
                                                          getattr(self, name), 0.0, 1.0))
        if not self.onset < self.emergence < self.converged:
            raise ParameterError(
                f"thresholds onset={self.onset}, emergence={self.emergence}, "
                f"converged={self.converged} must be increasing")


@dataclass(frozen=True)
class SolverConfig:
    """Integrator settings.

    Parameters
    ----------
    method : {"LSODA", "Radau", "BDF"}
        Stiff SciPy method; LSODA has the lowest per-step overhead.
    rtol, atol : float
        Tolerances (atol applies to w_v1, p, w_v2 and ln w_kq alike).
    t_end : float or None
        Final time; ``None`` chooses it so that the run reaches phase IV.
    n_output : int
        Number of log-spaced output times after t = 0.
    """

    method: str = "LSODA"
    rtol: float = 1e-10
    atol: float = 1e-12
    t_end: float | None = None
    n_output: int = 400

    def __post_init__(self):
        if self.method not in METHODS:
            raise ParameterError(f"method={self.method!r}; allowed: {', '.join(METHODS)}")
        _open_interval("rtol", self.rtol, 0.0, 1.0)
        _positive("atol", self.atol)
        if self.t_end is not None:
            _positive("t_end", self.t_end)
        if not isinstance(self.n_output, int) or self.n_output < 2:
            raise ParameterError(f"n_output={self.n_output!r} must be an integer >= 2")

    def as_dict(self) -> dict:
        return {"method": self.method, "rtol": self.rtol, "atol": self.atol,
                "t_end": self.t_end, "n_output": self.n_output}
