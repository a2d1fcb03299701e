"""Parameters of the induction-head model, its closures' domains and its phase thresholds.

Every check raises :class:`~reduced_odes.ParameterError` naming the
parameter, its value and the allowed range (spec section 7).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from reduced_odes.author import ParameterError, Parameters, integer, interval, parameter

__all__ = ["ALPHA_RANGE", "CLOSURE_WSTAR_LIMITS", "L_MAX", "SIGMA_MAX", "WSTAR_MIN", "ModelParams",
           "PhaseThresholds"]

#: Supremum of w_star inside each closure's domain. From the derived domains
#: (``1 - 4 w*^2 > 0`` for linear, ``1 - 2 w*^2 > 0`` for meanfield); a test
#: re-derives them and compares.
CLOSURE_WSTAR_LIMITS = {"linear": 0.5, "meanfield": math.sqrt(0.5)}


#: Largest sequence length: up to it the runs reach phase IV with t * L_G4 within 2e-4 of
#: 1/4 (measured at 1e8, 1e9, 1e10); at 1e12 the 4-gram tail is lost to round-off (1.8%).
L_MAX = 10**10
#: Allowed alpha: the 4-gram is learned at t ~ 1/alpha^2 and the induction head at
#: t ~ L / (1 - alpha)^2, so at the ends of this range (with L = 1e10) a run ends before
#: t = 1e16, where L_G4 ~ 1/(4 t) still has digits left; closer to 0 or 1 it does not.
ALPHA_RANGE = (1e-3, 0.99)
#: Smallest w_star: below it the flow stalls where its O(1) terms cancel to round-off
#: (w_kq ~ 4e-16, measured at w* = 1e-16), and never settles at w*; at w* = 1e-12 runs with
#: L = 1e10 or alpha = 0.99 do not settle either, at 1e-8 every corner of (L, alpha) does.
WSTAR_MIN = 1e-8
#: Largest sigma: w_kq(0) = sigma^2 = 1/4 satisfies every closure's domain conditions
#: (1 - 4 w_kq^2 > 0, 1 - (w_kq + w*)^2 > 0 with w* < 1/2, ...); beyond, a start far from the
#: model's small-initialisation regime may lie outside them.
SIGMA_MAX = 0.5


@dataclass(frozen=True)
class ModelParams(Parameters):
    """Parameters of the induction-head model and its initialisation.

    Parameters
    ----------
    L : int
        Sequence length, an integer in [4, 1e10].
    alpha : float
        Weight of the 4-gram component, in [0.001, 0.99].
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
    reduced_odes._params.ParameterError: alpha=1.5 is outside the interval [0.001, 0.99]
    """

    L: int = parameter(200, integer(4, L_MAX), "sequence length")
    alpha: float = parameter(0.5, interval(*ALPHA_RANGE, closed="lo,hi"),
                             "weight of the 4-gram component")
    wstar: float = parameter(0.3, interval(WSTAR_MIN, CLOSURE_WSTAR_LIMITS["meanfield"],
                                           closed="lo"),
                             "target query-key weight (inside the closure's domain: < 0.5 "
                             "linear, < 0.7071 meanfield, where within ~1e-6 of the edge a run "
                             "may step out of it and says so; below 1e-8 a run need not "
                             "settle: w_kq stalls at round-off of the O(1) terms, ~4e-16)")
    sigma: float = parameter(1e-4, interval(0, SIGMA_MAX, closed="hi"),
                             "initialisation scale (w_kq(0) = sigma^2 must lie inside every "
                             "closure's domain: sigma <= 0.5 does, for every allowed w*)")

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
        interval(0, CLOSURE_WSTAR_LIMITS[closure]).check(f"wstar (closure {closure})",
                                                          self.wstar)


@dataclass(frozen=True)
class PhaseThresholds(Parameters):
    """Fractions defining the phase times (spec section 6 and the `solve --json` schema).

    ``four_gram``: T_I is the first t with L_G4 <= four_gram * L_G4(0);
    ``onset``, ``emergence``, ``converged``: T_II, T_em, T_III are the first t
    with w_kq >= that fraction of w_star.  Each must lie in (0, 1).

    Examples
    --------
    >>> PhaseThresholds(emergence=0.6).as_dict()
    {'four_gram': 0.01, 'onset': 0.1, 'emergence': 0.6, 'converged': 0.9}
    >>> try:
    ...     PhaseThresholds(onset=0.7)
    ... except ParameterError as error:
    ...     print(error)
    thresholds onset=0.7, emergence=0.5, converged=0.9 must be increasing
    """

    four_gram: float = parameter(0.01, interval(0, 1), "T_I: L_G4 fraction of its start")
    onset: float = parameter(0.1, interval(0, 1), "T_II: w_kq fraction of w*")
    emergence: float = parameter(0.5, interval(0, 1), "T_em: w_kq fraction of w*")
    converged: float = parameter(0.9, interval(0, 1), "T_III: w_kq fraction of w*")

    def check(self) -> None:
        if not self.onset < self.emergence < self.converged:
            raise ParameterError(
                f"thresholds onset={self.onset}, emergence={self.emergence}, "
                f"converged={self.converged} must be increasing")
