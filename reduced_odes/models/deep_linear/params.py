"""The parameters of the two-layer scalar linear network."""

from __future__ import annotations

from dataclasses import dataclass

from reduced_odes.author import Parameters, parameter, positive

__all__ = ["DeepLinearParams"]


@dataclass(frozen=True)
class DeepLinearParams(Parameters):
    """Parameters of the two-layer scalar linear network.

    Examples
    --------
    >>> DeepLinearParams(s=2, sigma=1e-4).s
    2.0
    """

    s: float = parameter(1.0, positive(1e150), "target singular value")
    sigma: float = parameter(1e-3, positive(1e-1), "initial scale: a = b = sigma")
