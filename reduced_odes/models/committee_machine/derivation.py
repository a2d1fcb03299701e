"""The committee machine's derivation: online SGD reduced to its order parameters.

Everything comes from the engine's teacher–student reduction
(:func:`reduced_odes.online_sgd_reduction`): the generalisation error and the
rates are Gaussian expectations of the activation, derived; the gradient part
is asserted to be ``-M grad eps_g`` under the pull-back mobility; the
learning-rate term is a declared drift that vanishes at ``eta = 0``.
"""

from __future__ import annotations

import sympy as sp

from reduced_odes.author import (
    Derivation,
    StructuredSystem,
    gradient_flow,
    indexed_online_sgd,
    online_sgd_reduction,
    online_sgd_second_layer,
)

__all__ = ["derivation", "second_layer_derivation", "specialisation"]


def specialisation(R: sp.Matrix) -> sp.Expr:
    """How far the students have specialised: the spread of each student's overlaps with
    the teachers, normalised to 1 at ``R = I`` (0 on the unspecialised subspace).

    Examples
    --------
    >>> specialisation(sp.eye(2))
    1
    >>> specialisation(sp.ones(2, 2) / 3)
    0
    """
    K, M = R.shape
    if M == 1:
        return sp.Integer(0)
    spread = sum(((R[i, n] - sum(R[i, :]) / M) ** 2 for i in range(K) for n in range(M)),
                 sp.Integer(0))
    return sp.nsimplify(1 / (min(K, M) * (1 - sp.Rational(1, M)))) * spread


def derivation(variant: str, K: int = 2, M: int = 2, finite_eta: bool = False,
               indexed: bool = False, second_layer: bool = False) -> Derivation | StructuredSystem:
    """The flow of ``(Q, R)`` for ``K`` students and ``M`` teachers with activation ``variant``.

    ``finite_eta`` keeps the learning-rate term (a system of its own: at ``eta = 0`` the
    four-point kernels it sums are not compiled at all).  ``indexed``: the same flow as unit
    sums (:func:`~reduced_odes.author.indexed_online_sgd`), whose kernels are derived once
    for every width, in place of the unrolled, compiled derivation.  ``second_layer``: the
    read-out weights ``v_i`` are state too (:func:`second_layer_derivation`).

    Examples
    --------
    >>> d = derivation("linear", 1, 1, finite_eta=True)
    >>> d.state_names, tuple(map(str, d.parameters))
    (('Q_1_1', 'R_1_1'), ('eta', 'noise'))
    """
    if second_layer:
        return second_layer_derivation(variant, K, M, finite_eta)
    if indexed:
        return indexed_online_sgd(K, M, variant, finite_eta=finite_eta)
    sgd = online_sgd_reduction(K, M, variant, learning_rate_terms=finite_eta)
    speed = sp.sqrt(sum((r**2 for r in sgd.rates), sp.Integer(0)))
    observables = {"eps_g": sgd.loss, "specialisation": specialisation(sgd.R), "speed": speed}
    domain = [sgd.Q[i, i] > 0 for i in range(K)] if variant == "relu" else []
    return gradient_flow(sgd.state, sgd.loss, parameters=(sgd.eta, sgd.noise),
                         mobility=sgd.mobility, drift=sgd.drifts, rhs=sgd.rates,
                         check=sgd.samples, observables=observables, domain=domain)


def second_layer_derivation(variant: str, K: int, M: int, finite_eta: bool) -> Derivation:
    """The flow of ``(Q, R, v)`` with the read-out weights trained
    (:func:`~reduced_odes.author.online_sgd_second_layer`), parameters ``eta, noise,
    v_rate, v_star``: a gradient flow of ``eps_g`` under the pull-back mobility and the
    read-out's own rate, asserted at random states, plus the learning-rate drift.

    Examples
    --------
    >>> d = second_layer_derivation("linear", 1, 1, False)
    >>> d.state_names, tuple(map(str, d.parameters))
    (('Q_1_1', 'R_1_1', 'v_1'), ('eta', 'noise', 'v_rate', 'v_star'))
    """
    sgd = online_sgd_second_layer(K, M, variant, learning_rate_terms=finite_eta)
    speed = sp.sqrt(sum((r**2 for r in sgd.rates), sp.Integer(0)))
    observables = {"eps_g": sgd.loss, "specialisation": specialisation(sgd.R), "speed": speed}
    domain = [sgd.Q[i, i] > 0 for i in range(K)] if variant == "relu" else []
    return gradient_flow(sgd.state, sgd.loss,
                         parameters=(sgd.eta, sgd.noise, sgd.v_rate, sgd.v_star),
                         mobility=sgd.mobility, drift=sgd.drifts, rhs=sgd.rates,
                         check=sgd.samples, observables=observables, domain=domain)
