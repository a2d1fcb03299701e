"""The parameters of the two-layer scalar linear network."""

from __future__ import annotations

from dataclasses import dataclass

from reduced_odes.author import Parameters, interval, parameter

__all__ = ["DeepLinearParams"]


@dataclass(frozen=True)
class DeepLinearParams(Parameters):
    """Parameters of the two-layer scalar linear network.

    Examples
    --------
    >>> DeepLinearParams(s=2, sigma=1e-4).s
    2.0
    """

    s: float = parameter(1.0, interval(1e-12, 1e100, closed="lo"),
                         "target singular value (the time scale is 1/s: below 1e-12 a run "
                         "is not settled by the engine's end, t = 1e18; LSODA cannot start "
                         "at rates ~s beyond ~1e149)")
    sigma: float = parameter(1e-3, interval(1e-100, 1e-1, closed="lo"),
                             "initial scale: a = b = sigma (integrated as ln a, ln b; below "
                             "1e-100 the rise of ab through hundreds of e-folds overshoots in "
                             "one step, where exp(ln a + ln b) overflows)")
