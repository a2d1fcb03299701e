"""Parameters of the soft committee machine learning a teacher by online SGD.

The activation (``erf``, ``relu``, ``linear``; numerical: ``tanh``, ...) is the variant; the
sizes ``K`` and ``M`` select the system (up to ``UNROLLED_UNITS`` each pair derives and
compiles its own; beyond, the unit sums serve every width from the same kernels);
``eta`` and ``noise`` are runtime numbers of that system; the start is the symmetric,
unspecialised point ``Q_ik = q0 [i = k]``, ``R_in = r0`` broken by ``R_ii += asymmetry``
(a network with these overlaps exists: checked).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from reduced_odes.author import (
    ParameterError,
    Parameters,
    flag,
    integer,
    interval,
    parameter,
    positive,
)

__all__ = ["ACTIVATIONS", "CLOSED_FORM", "MAX_UNITS", "RELU_ETA_UNITS", "UNROLLED_UNITS",
           "CommitteeParams", "PhaseLevels", "READOUT", "check_realisable", "initial_overlaps",
           "overlap_state", "recorded"]

#: The activations with closed-form kernels (the verified variants).
CLOSED_FORM = ("erf", "relu", "linear")
#: The model's variants: the activation of student and teacher alike; the others' kernels
#: are numerical (the engine's Gaussian kernels for smooth activations).
ACTIVATIONS = (*CLOSED_FORM, "tanh", "sigmoid", "gelu", "softplus", "silu")

#: Largest K + M for ReLU with the learning-rate term: beyond, its four-point (orthant)
#: kernels cost ~63 ms a rates evaluation at K = 3, M = 2, and a solve takes over 20 minutes.
RELU_ETA_UNITS = 4
#: Widths up to this (K and M) run the unrolled system, derived and compiled per (K, M) (the
#: committed data's runs); wider ones the unit sums, built from kernels derived once.
UNROLLED_UNITS = 5
#: Largest width.  The state has K(K+1)/2 + K M variables and the Jacobian is dense; the
#: learning-rate term sums (K + M)^2 four-point kernels per student pair, so its cost per
#: evaluation grows as K^2 (K + M)^2 / 4 (docs/performance.md).
MAX_UNITS = 40


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
    reduced_odes._params.ParameterError: K=0 must be an integer in [1, 40]
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

    second_layer: bool = parameter(False, flag(),
                                   "train the student's read-out weights v_i too (Goldt et al. "
                                   "2019); off: v_i = 1, the soft committee machine")
    v_rate: float = parameter(1.0, interval(0, 10, closed="lo"),
                              "with second_layer: the read-out's learning rate relative to "
                              "eta (eta_v / eta; its step is eta_v/N; 0: fixed at v0)")
    v_star: float = parameter(1.0, interval(-10, 10),
                              "with second_layer: the teacher's read-out weight (every unit)")
    v0: float = parameter(1.0, interval(-10, 10),
                          "with second_layer: the student's read-out weights v_i at t = 0")

    def check(self) -> None:
        Q, R = initial_overlaps(self)
        # A network realises (Q, R) with T = I iff Q - R R^T is positive semi-definite.
        lowest = float(np.linalg.eigvalsh(Q - R @ R.T).min())
        if lowest < 0:
            raise ParameterError(f"q0={self.q0!r} is too small for r0={self.r0!r} and "
                                 f"asymmetry={self.asymmetry!r}: no network has these overlaps "
                                 f"(Q - R R^T has eigenvalue {lowest:.3g}); allowed: q0 >= the "
                                 f"largest eigenvalue of R R^T")


#: The read-out option's fields, kept out of a record while they hold their defaults.
READOUT = ("second_layer", "v_rate", "v_star", "v0")


def recorded(params: CommitteeParams) -> dict:
    """``params`` by name, for a data file: the read-out option's fields only when one
    differs from its default, so that a committee machine's record is the one it was
    before the option existed.

    Examples
    --------
    >>> "v_star" in recorded(CommitteeParams()), recorded(CommitteeParams(v_star=2.0))["v_star"]
    (False, 2.0)
    """
    values = params.as_dict()
    defaults = CommitteeParams().as_dict()
    if all(values[name] == defaults[name] for name in READOUT):
        values = {k: v for k, v in values.items() if k not in READOUT}
    return values


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


#: How far below zero (relative to the Gram matrix's largest entry) its lowest eigenvalue
#: may be and the overlaps still count as realised: overlaps computed from real weights in
#: double precision miss PSD by ~1e-16 relative; 1e-12 leaves room for 10^4 times that.
GRAM_ROUND_OFF = 1e-12


def check_realisable(state: dict[str, float], K: int, M: int) -> None:
    """ParameterError unless the overlaps in ``state`` (by name, as :func:`overlap_state`)
    are realised by a network: the Gram matrix ``[[Q, R], [R^T, T]]`` of the student and
    teacher vectors (``T = I``) is positive semi-definite (equivalently, ``Q - R R^T`` is).

    Examples
    --------
    >>> check_realisable(overlap_state([[1.0]], [[0.5]]), 1, 1) is None
    True
    >>> check_realisable(overlap_state([[0.1]], [[0.5]]), 1, 1)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    reduced_odes._params.ParameterError: initial overlaps (Q_1_1=0.1, R_1_1=0.5) are ...
    """
    Q = np.array([[state[f"Q_{min(i, k) + 1}_{max(i, k) + 1}"] for k in range(K)]
                  for i in range(K)])
    R = np.array([[state[f"R_{i + 1}_{n + 1}"] for n in range(M)] for i in range(K)])
    gram = np.block([[Q, R], [R.T, np.eye(M)]])
    lowest = float(np.linalg.eigvalsh(gram).min())
    if not lowest >= -GRAM_ROUND_OFF * float(np.abs(gram).max()):
        values = ", ".join(f"{name}={value:.6g}" for name, value in state.items())
        raise ParameterError(f"initial overlaps ({values}) are realised by no network: the "
                             f"Gram matrix [[Q, R], [R^T, I]] has the eigenvalue {lowest:.3g} "
                             f"< 0 (Q - R R^T is not positive semi-definite); allowed: overlaps "
                             f"of real weight vectors (Q - R R^T positive semi-definite)")


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
