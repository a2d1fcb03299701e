"""Parameters and phase thresholds of the two-stage feature model.

Every default is a convention of the reconstruction (see the package
docstring); each is a parameter so that none is a hidden constant.  The
activation is the model's variant (``--activation relu|linear``), because it
changes the derived loss; everything else is a number of the compiled flow.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from reduced_odes.author import ParameterError, Parameters, flag, integer, interval, parameter

__all__ = ["ACTIVATIONS", "TwoStageParams", "TwoStageThresholds"]

#: The variants: the activation of the attention scores.
ACTIVATIONS = ("relu", "linear")


@dataclass(frozen=True)
class TwoStageParams(Parameters):
    """Data, model and initialisation of the two-stage feature model.

    Parameters
    ----------
    gamma, mu : float
        Norms of the syntactic (P) and semantic (Q) tokens.
    pi_P : float
        Probability that a token is syntactic; ``pi_Q = 1 - pi_P``.
    N : int
        Number of context tokens per prompt.
    d_P, d_Q : int
        Dimensions of the syntactic and semantic subspaces.
    sigma : float
        Initial scale: ``W_K = W_Q = sigma I``.
    v0 : float
        Initial value weight.
    train_value : bool
        Train the value weight ``v`` (else ``v = v0`` for all time).

    Examples
    --------
    >>> p = TwoStageParams()
    >>> (p.d_P, p.d_Q, p.pi_Q)
    (2, 8, 0.5)
    >>> TwoStageParams(d_Q=1)
    Traceback (most recent call last):
    ...
    reduced_odes._params.ParameterError: d_Q=1 must be an integer in [2, 10000]
    """

    # The ranges are where the flow settles within the engine's step budget: the blocks'
    # time scales go as d / (pi^2 scale^2 v0) and their optima as scale^2, so far outside
    # O(1) token norms, probabilities, sizes and v0 a run ends before it settles.
    gamma: float = parameter(1.0, interval(0.1, 10, closed="lo,hi"),
                             "norm of a syntactic (P) token (the P block's rate goes as gamma^2)")
    mu: float = parameter(1.0, interval(0.1, 10, closed="lo,hi"),
                          "norm of a semantic (Q) token (the Q block's rate goes as mu^2)")
    pi_P: float = parameter(0.5, interval(0.05, 0.95, closed="lo,hi"),
                            "probability of a syntactic token (a block's rate goes as its "
                            "probability squared)")
    N: int = parameter(32, integer(1, 10**6), "context tokens per prompt (beyond 1e6 the 1/N "
                                              "variance term is below round-off)")
    d_P: int = parameter(2, integer(1, 10**4), "dimension of the syntactic subspace")
    d_Q: int = parameter(8, integer(2, 10**4), "dimension of the semantic subspace")
    sigma: float = parameter(1e-2, interval(1e-300, 1, closed="lo,hi"),
                             "initial scale: W_K = W_Q = sigma I (integrated as ln sigma; "
                             "the model is one of small initialisation)")
    v0: float = parameter(1.0, interval(1e-3, 1e3, closed="lo,hi"),
                          "initial value weight v(0) (the time scales go as 1/v0)")
    train_value: bool = parameter(True, flag(), "train the value weight v")

    def check(self) -> None:
        # v^2 - d_P a - d_Q b is conserved; below this bound v could reach 0.
        bound = (self.d_P + self.d_Q) * self.sigma**2
        if self.train_value and not self.v0**2 > bound:
            raise ParameterError(
                f"v0={self.v0!r} with train_value=True must satisfy v0^2 > (d_P + d_Q) sigma^2 "
                f"= {bound:.6g} (sigma={self.sigma!r}, d_P={self.d_P}, d_Q={self.d_Q})")

    @property
    def pi_Q(self) -> float:
        """Probability of a semantic token."""
        return 1.0 - self.pi_P

    @property
    def ell(self) -> float:
        """``ln(1/sigma^2)``, computed without forming ``sigma^2`` (no underflow)."""
        return -2.0 * math.log(self.sigma)


@dataclass(frozen=True)
class TwoStageThresholds(Parameters):
    """Levels of the phase times, as fractions ``theta`` of ``A*`` and ``B*``.

    ``T_P`` and ``T_Q`` use ``theta``; ``T_P@x`` and ``T_Q@x`` use each of
    ``low``, ``high`` and ``saturation``.

    Examples
    --------
    >>> TwoStageThresholds().saturation
    0.99
    >>> TwoStageThresholds(theta=1.0)
    Traceback (most recent call last):
    ...
    reduced_odes._params.ParameterError: theta=1.0 is outside the open interval (0, 1)
    """

    theta: float = parameter(0.5, interval(0, 1), "level of T_P and T_Q (fraction of A*, B*)")
    low: float = parameter(0.1, interval(0, 1), "low level (start of Stage II: T_Q@low)")
    high: float = parameter(0.9, interval(0, 1), "high level")
    saturation: float = parameter(0.99, interval(0, 1), "saturation level (end of Stage I)")

    def levels(self) -> tuple[float, ...]:
        """The levels of the ``@`` phases, in order."""
        return (self.low, self.high, self.saturation)
