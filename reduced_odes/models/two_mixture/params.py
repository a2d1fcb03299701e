"""Parameters of the two-mixture model: data, initialisation, protocol and stage thresholds.

Every convention of the model that is not forced by the recovered claims is a
field here, with its default, its allowed range and a help text.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from reduced_odes.author import (
    ParameterError,
    Parameters,
    choice,
    integer,
    interval,
    parameter,
    positive,
)

__all__ = ["LOSSES", "TwoMixtureParams", "initial_theta"]

#: The losses phi(yF) of the model: its variants.
LOSSES = ("square", "logistic")


def initial_theta(kappa: float, sigma_att: float) -> float:
    """The attention-feature margin at initialisation, ``tanh(kappa sigma_att^2 / 2)``.

    Examples
    --------
    >>> round(initial_theta(0.5, 1e-3) / 2.5e-7, 9)
    1.0
    """
    return math.tanh(kappa * sigma_att**2 / 2)


@dataclass(frozen=True)
class TwoMixtureParams(Parameters):
    """Parameters of the symmetric two-headed transformer on the two-mixture task.

    Examples
    --------
    >>> TwoMixtureParams(mu=2).mu
    2.0
    >>> TwoMixtureParams(width=3)
    Traceback (most recent call last):
    ...
    reduced_odes._params.ParameterError: width=3 must be an even integer >= 2 (sign-paired neurons)
    """

    mu: float = parameter(1.0, positive(1e6), "signal strength (value part mu s_j e_j)")
    kappa: float = parameter(0.5, positive(1e6), "correspondence strength (identifier kappa c_k)")
    sigma: float = parameter(1e-2, positive(1.0), "neuron initial scale")
    sigma_att: float = parameter(1e-3, positive(1.0), "attention initial scale q0 = k0")
    init: str = parameter("averaged", choice("averaged", "random"),
                          "sign-paired neuron initialisation (random: the m -> inf moments)")
    protocol: str = parameter("joint", choice("joint", "algorithm1"),
                              "joint flow, or Algorithm 1 (neurons, attention, neurons)")
    train: str = parameter("all", choice("all", "neurons", "attention"),
                           "blocks trained by one flow (Algorithm 1 stages train one block)")
    A1: float = parameter(0.5, positive(), "T1: first t with A >= A1")
    theta2: float = parameter(0.5, interval(0, 1), "T2: first t with theta >= theta2")
    L3: float = parameter(0.005, positive(), "T3: first t with loss <= L3")
    A_I: float = parameter(0.9, interval(0, 1), "Algorithm 1: stage I ends when A >= A_I")
    theta_II: float = parameter(0.9, interval(0, 1),
                                "Algorithm 1: stage II ends when theta >= theta_II")
    stage3_factor: float = parameter(100.0, positive(1e6),
                                     "Algorithm 1: stage III runs this many times stages I and II "
                                     "together (unless the solver's t_end ends it)")
    width: int = parameter(256, integer(2, 10**6), "neurons m of finite-width runs (even)")
    d_att: int = parameter(4, integer(4, 10**4), "attention-space dimension")
    d_val: int = parameter(2, integer(2, 10**4), "value-space dimension")

    def check(self) -> None:
        # The reduction needs sign pairs (neuron r + m/2 = -neuron r).
        if self.width % 2:
            raise ParameterError(f"width={self.width!r} must be an even integer >= 2 "
                                 f"(sign-paired neurons)")
