"""Parameters of the soft committee machine learning a teacher by online SGD.

The activation (``erf``, ``relu``, ``linear``) is the model's variant; the sizes
``K`` and ``M`` select the derived system (each pair derives and compiles its
own); ``eta`` and ``noise`` are runtime numbers of that system; the start is the
symmetric, unspecialised point ``Q_ik = q0 [i = k]``, ``R_in = r0`` broken by
``R_ii += asymmetry`` (a network with these overlaps exists: checked).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from reduced_odes.author import (
    ParameterError,
    Parameters,
    integer,
    interval,
    parameter,
    positive,
)

__all__ = ["ACTIVATIONS", "CLOSED_FORM", "CommitteeParams", "PhaseLevels", "initial_overlaps",
           "overlap_state"]

#: The activations with closed-form kernels (the verified variants).
CLOSED_FORM = ("erf", "relu", "linear")
#: The model's variants: the activation of student and teacher alike; the others' kernels
#: are numerical (the engine's Gaussian kernels for smooth activations).
ACTIVATIONS = (*CLOSED_FORM, "tanh", "sigmoid", "gelu", "softplus", "silu")

#: Largest width: every (K, M) derives a system of K(K+1)/2 + K M variables, and the
#: learning-rate term sums (K + M)^2 four-point kernels per student pair.
MAX_UNITS = 5


@dataclass(frozen=True)
class CommitteeParams(Parameters):
    """Sizes, learning rate, output noise and the start of a teacher–student pair.

    Examples
    --------
    >>> CommitteeParams(K=3, M=2).K
    3
    >>> CommitteeParams(K=0)
    Traceback (most recent call last):
    ...
    reduced_odes._params.ParameterError: K=0 must be an integer in [1, 5]
    """

    K: int = parameter(2, integer(1, MAX_UNITS), "student hidden units")
    M: int = parameter(2, integer(1, MAX_UNITS), "teacher hidden units")
    eta: float = parameter(0.0, interval(0, 10, closed="lo"),
                           "learning rate; 0 is the limit eta -> 0, the gradient flow of eps_g "
                           "(time is eta * steps / N)")
    noise: float = parameter(0.0, interval(0, 10, closed="lo"),
                             "standard deviation of the teacher's output noise")
    q0: float = parameter(0.25, positive(10), "initial student norms Q_ii (Q_ik = 0, i != k)")
    r0: float = parameter(0.01, interval(0, 1, closed="lo"),
                          "initial student-teacher overlaps R_in (all equal: unspecialised)")
    asymmetry: float = parameter(1e-3, interval(1e-16, 1, closed="lo"),
                                 "added to R_ii at the start: what breaks the symmetry (below "
                                 "1e-16 it is lost to round-off of the O(1) overlaps, and a "
                                 "ReLU run never escapes the plateau)")

    def check(self) -> None:
        Q, R = initial_overlaps(self)
        # A network realises (Q, R) with T = I iff Q - R R^T is positive semi-definite.
        lowest = float(np.linalg.eigvalsh(Q - R @ R.T).min())
        if lowest < 0:
            raise ParameterError(f"q0={self.q0!r} is too small for r0={self.r0!r} and "
                                 f"asymmetry={self.asymmetry!r}: no network has these overlaps "
                                 f"(Q - R R^T has eigenvalue {lowest:.3g}); allowed: q0 >= the "
                                 f"largest eigenvalue of R R^T")


def initial_overlaps(params: CommitteeParams) -> tuple[np.ndarray, np.ndarray]:
    """``(Q, R)`` at ``t = 0``.

    Examples
    --------
    >>> Q, R = initial_overlaps(CommitteeParams(K=2, M=2, r0=0.01, asymmetry=0.001))
    >>> R.tolist()
    [[0.011, 0.01], [0.01, 0.011]]
    """
    Q = params.q0 * np.eye(params.K)
    R = np.full((params.K, params.M), params.r0)
    for i in range(min(params.K, params.M)):
        R[i, i] += params.asymmetry
    return Q, R


def overlap_state(Q, R) -> dict[str, float]:
    """The overlaps ``Q`` (K x K, symmetric) and ``R`` (K x M) by state name, in the model's
    order: ``Q_i_k`` for ``i <= k`` row by row, then ``R_i_n``; the ``initial`` of
    :func:`~reduced_odes.solve` from given overlaps.

    Examples
    --------
    >>> overlap_state([[0.2, 0.1], [0.1, 0.3]], [[0.01], [0.02]])
    {'Q_1_1': 0.2, 'Q_1_2': 0.1, 'Q_2_2': 0.3, 'R_1_1': 0.01, 'R_2_1': 0.02}
    """
    K, M = np.shape(R)
    state = {f"Q_{i + 1}_{k + 1}": float(Q[i][k]) for i in range(K) for k in range(i, K)}
    state.update({f"R_{i + 1}_{n + 1}": float(R[i][n]) for i in range(K) for n in range(M)})
    return state


@dataclass(frozen=True)
class PhaseLevels(Parameters):
    """Where the phases are read, relative to the plateau ``eps_p`` (the unspecialised fixed
    point's ``eps_g`` at the same ``eta``).

    Examples
    --------
    >>> PhaseLevels().escape
    0.5
    """

    entry: float = parameter(1.0, positive(10),
                             "T_plateau: eps_g <= (1 + entry) eps_p (default: within a factor "
                             "2, where eps_g still falls fast, so the time is well conditioned)")
    escape: float = parameter(0.5, interval(0, 1), "T_escape: eps_g <= escape * eps_p")
    specialised: float = parameter(0.5, interval(0, 1),
                                   "T_spec: the students' specialisation reaches this fraction")
