"""Parameters of the two-mixture model: data, initialisation, protocol and stage thresholds.

Every convention of the model that is not forced by the recovered claims is a
field here, with its default, its allowed range and a help text.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from reduced_odes.author import ParameterError, Parameters, choice, integer, interval, parameter

__all__ = ["LOSSES", "TwoMixtureParams", "initial_theta"]

#: The losses phi(yF) of the model: its variants.
LOSSES = ("square", "logistic")
#: Largest theta level: theta = tanh(ell/2) with a margin ell that grows only like ln t under
#: the logistic loss, which does not reach theta = 0.99 (ell = 5.3) by t = 1e18 at the defaults.
THETA_MAX = 0.95
#: Smallest level of A and theta: from a random start (A(0) = 0) a lower one is crossed at a
#: time near the smallest doubles, where the crossing's root finder cannot converge.
LEVEL_MIN = 1e-12


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

    # The ranges of the scales are where the flow can be stepped: the neuron block's rate is
    # mu, the attention's kappa, and the start is integrated as zeta / sigma^2 and in logs.
    mu: float = parameter(1.0, interval(1e-3, 1e3, closed="lo,hi"),
                          "signal strength (value part mu s_j e_j; the neuron block's rate)")
    kappa: float = parameter(0.5, interval(1e-3, 1e3, closed="lo,hi"),
                             "correspondence strength (identifier kappa c_k; the attention's "
                             "rate)")
    sigma: float = parameter(1e-2, interval(1e-20, 1, closed="lo"),
                             "neuron initial scale (below 1e-20 the neuron block leaves double "
                             "precision before it grows)")
    sigma_att: float = parameter(1e-3, interval(1e-100, 1, closed="lo"),
                                 "attention initial scale q0 = k0")
    init: str = parameter("averaged", choice("averaged", "random"),
                          "sign-paired neuron initialisation (random: the m -> inf moments)")
    protocol: str = parameter("joint", choice("joint", "algorithm1"),
                              "joint flow, or Algorithm 1 (neurons, attention, neurons)")
    train: str = parameter("all", choice("all", "neurons", "attention"),
                           "blocks trained by one flow (Algorithm 1 stages train one block)")
    # The levels are those the flow reaches before the engine's horizon (t = 1e18): under
    # the logistic loss A and the attention margin grow only like ln t, the loss falls like 1/t.
    A1: float = parameter(0.5, interval(LEVEL_MIN, 10, closed="lo,hi"),
                          "T1: first t with A >= A1")
    theta2: float = parameter(0.5, interval(LEVEL_MIN, THETA_MAX, closed="lo,hi"),
                              "T2: first t with theta >= theta2")
    L3: float = parameter(0.005, interval(1e-12, math.inf, closed="lo"),
                          "T3: first t with loss <= L3")
    A_I: float = parameter(0.9, interval(LEVEL_MIN, 1, closed="lo"),
                           "Algorithm 1: stage I ends when A >= A_I")
    theta_II: float = parameter(0.9, interval(LEVEL_MIN, THETA_MAX, closed="lo,hi"),
                                "Algorithm 1: stage II ends when theta >= theta_II")
    stage3_factor: float = parameter(100.0, interval(1e-3, 1e6, closed="lo"),
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
