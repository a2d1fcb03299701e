"""Teacher–student online SGD with a trained second layer (Goldt et al. 2019), derived.

The student is ``phi(x) = sum_i v_i g(lambda_i)``, the teacher ``phi*(x) = v* sum_n g(nu_n)
+ zeta``.  Both layers learn from each fresh example: ``w_i <- w_i + (eta/sqrt(N)) delta_i x``
with ``delta_i = v_i g'(lambda_i)(phi* - phi)``, and ``v_i <- v_i + (eta_v/N) g(lambda_i)
(phi* - phi)``.  As ``N -> infinity``, in ``t = eta steps / N``, the order parameters
``Q, R`` and the read-out weights ``v`` follow

    dR_in/dt = E[delta_i nu_n],
    dQ_ik/dt = E[delta_i lambda_k + delta_k lambda_i] + eta E[delta_i delta_k],
    dv_i/dt  = (eta_v / eta) E[g(lambda_i)(phi* - phi)],

(the read-out's step is ``1/N``: no learning-rate term of its own).  As for the committee
machine (:func:`~reduced_odes.online_sgd_reduction`), every expectation is a kernel of the
activation derived once in generic covariance entries, the loss comes from the networks'
definitions, and the gradient part is asserted to be ``-M grad eps_g`` under the mobility
``diag(pull-back of W -> (Q, R), (eta_v/eta) I)``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import sympy as sp

from ._symbolic import Drift
from ._teacher_student import OnlineSGD, _expect, _Overlaps, pullback_mobility, sgd_terms

__all__ = ["SecondLayerSGD", "online_sgd_second_layer"]


@dataclass(frozen=True)
class SecondLayerSGD(OnlineSGD):
    """The reduced dynamics of :func:`online_sgd_second_layer`: an
    :class:`~reduced_odes.OnlineSGD` whose state ends with the read-out weights.

    Attributes
    ----------
    v : Matrix
        The student's read-out weights ``v_i`` (a column; the state's last ``K``).
    v_rate, v_star : Symbol
        The read-out's learning rate relative to ``eta`` (``eta_v / eta``) and the
        teacher's read-out weight.

    Examples
    --------
    >>> sgd = online_sgd_second_layer(1, 1, "linear", learning_rate_terms=False)
    >>> sgd.v.T, sgd.mobility[2, 2]
    (Matrix([[v_1]]), v_rate)
    """

    v: sp.Matrix = None
    v_rate: sp.Symbol = None
    v_star: sp.Symbol = None


def online_sgd_second_layer(K: int, M: int, activation: str, *,
                            learning_rate_terms: bool = True,
                            check_points: int = 3) -> SecondLayerSGD:
    """Derive online SGD's ODEs for a two-layer student whose read-out ``v`` is trained too.

    Parameters
    ----------
    K, M, activation, learning_rate_terms, check_points
        As :func:`~reduced_odes.online_sgd_reduction`'s (the teacher's overlaps are the
        identity; without the learning-rate term, the limit ``eta -> 0`` at a fixed
        ``eta_v / eta``).

    Returns
    -------
    SecondLayerSGD

    Examples
    --------
    One linear unit each: ``eps_g = (v^2 Q - 2 v v* R + v*^2)/2``, and ``dv/dt`` is
    ``v_rate`` times ``v* R - v Q``.

    >>> sgd = online_sgd_second_layer(1, 1, "linear", learning_rate_terms=False)
    >>> sgd.state
    (Q_1_1, R_1_1, v_1)
    >>> sp.factor(sgd.loss - (sgd.v[0]**2 * sgd.Q[0, 0] - 2 * sgd.v[0] * sgd.v_star
    ...           * sgd.R[0, 0] + sgd.v_star**2) / 2)
    0
    >>> sp.expand(sgd.rates[2])
    -Q_1_1*v_1*v_rate + R_1_1*v_rate*v_star
    """
    fields = _Overlaps(K, M, sp.eye(M))
    eta, noise = sp.Symbol("eta", nonnegative=True), sp.Symbol("noise", nonnegative=True)
    v_rate, v_star = sp.Symbol("v_rate", nonnegative=True), sp.Symbol("v_star", real=True)
    v = sp.Matrix([sp.Symbol(f"v_{i + 1}", real=True) for i in range(K)])
    # phi* - phi as weighted g-factors: +v* g(nu_n), -v_j g(lambda_j).
    error = [(v_star, ("n", n)) for n in range(M)] + [(-v[j], ("l", j)) for j in range(K)]
    loss, gradient, learning = sgd_terms(activation, fields, error, list(v), eta, noise,
                                         learning_rate_terms)
    for i in range(K):  # dv_i/dt = v_rate E[g(lambda_i)(phi* - phi)]
        gradient.append(v_rate * sum((a * _expect(activation, (("g", ("l", i)), ("g", f)),
                                                  fields) for a, f in error), sp.Integer(0)))
        learning.append(sp.Integer(0))
    drifts = (Drift("learning-rate term eta E[delta_i delta_k] (output noise included)",
                    sp.Matrix(learning), {eta: 0}),) if learning_rate_terms else ()
    mobility = sp.diag(pullback_mobility(fields.definitions, [f"w{i + 1}" for i in range(K)],
                                         fields.known()), v_rate * sp.eye(K))
    return SecondLayerSGD((*fields.state, *v), fields.Q, fields.R, sp.eye(M), eta, noise, loss,
                          sp.Matrix(gradient) + sp.Matrix(learning), mobility, drifts,
                          _with_readouts(fields.samples(check_points), v), v=v,
                          v_rate=v_rate, v_star=v_star)


def _with_readouts(samples: tuple[dict, ...], v: sp.Matrix) -> tuple[dict, ...]:
    """Each sample with random read-out weights (any real values are realisable)."""
    rng = random.Random(1)
    return tuple({**point, **{s: sp.Float(rng.uniform(-1.5, 1.5), 40) for s in v}}
                 for point in samples)
