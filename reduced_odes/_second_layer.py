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

import itertools
import random
from dataclasses import dataclass

import sympy as sp

from ._symbolic import Drift
from ._teacher_student import _expect, _Overlaps, pullback_mobility

__all__ = ["SecondLayerSGD", "online_sgd_second_layer"]


@dataclass(frozen=True)
class SecondLayerSGD:
    """The reduced dynamics of :func:`online_sgd_second_layer`.

    Attributes
    ----------
    state : tuple of Symbol
        ``Q_i_k`` (``i <= k``), ``R_i_n``, then ``v_i``, 1-based.
    Q, R, v : Matrix
        The overlaps and the student's read-out weights (a column).
    eta, noise, v_rate, v_star : Symbol
        The learning rate, the output noise's standard deviation, the read-out's learning
        rate relative to ``eta`` (``eta_v / eta``) and the teacher's read-out weight.
    loss, rates, mobility, drifts, samples
        As :class:`~reduced_odes.OnlineSGD`'s.
    """

    state: tuple[sp.Symbol, ...]
    Q: sp.Matrix
    R: sp.Matrix
    v: sp.Matrix
    eta: sp.Symbol
    noise: sp.Symbol
    v_rate: sp.Symbol
    v_star: sp.Symbol
    loss: sp.Expr
    rates: sp.Matrix
    mobility: sp.Matrix
    drifts: tuple[Drift, ...]
    samples: tuple[dict, ...]


def online_sgd_second_layer(K: int, M: int, activation: str, *,
                            learning_rate_terms: bool = True,
                            check_points: int = 3) -> SecondLayerSGD:
    """Derive online SGD's ODEs for a two-layer student whose read-out ``v`` is trained too.

    Parameters
    ----------
    K, M : int
        Hidden units of the student and of the teacher.
    activation : str
        A registered activation.
    learning_rate_terms : bool
        Derive the ``eta E[delta_i delta_k]`` term (with the noise's part); without it the
        reduction is the limit ``eta -> 0`` (at a fixed ``eta_v / eta``).
    check_points : int
        Random realisable states at which the gradient part is asserted.

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
    students, teachers = [("l", i) for i in range(K)], [("n", n) for n in range(M)]
    # phi* - phi as weighted g-factors: +v* g(nu_n), -v_j g(lambda_j).
    error = [(v_star, f) for f in teachers] + [(-v[j], f) for j, f in enumerate(students)]

    def E(*factors) -> sp.Expr:
        return _expect(activation, factors, fields)

    loss = sp.Rational(1, 2) * sum((a * b * E(("g", f), ("g", h))
                                    for (a, f), (b, h) in itertools.product(error, error)),
                                   sp.Integer(0))

    def delta_times(i: int, field) -> sp.Expr:  # E[delta_i field], delta_i = v_i g'(l_i)(phi*-phi)
        return v[i] * sum((a * E(("dg", students[i]), ("x", field), ("g", f)) for a, f in error),
                          sp.Integer(0))

    def delta_delta(i: int, k: int) -> sp.Expr:  # E[delta_i delta_k], output noise included
        pairs = sum((a * b * E(("dg", students[i]), ("dg", students[k]), ("g", f), ("g", h))
                     for (a, f), (b, h) in itertools.product(error, error)), sp.Integer(0))
        return v[i] * v[k] * (pairs + noise**2 * E(("dg", students[i]), ("dg", students[k])))

    gradient, learning = [], []
    for i, k in itertools.combinations_with_replacement(range(K), 2):
        gradient.append(delta_times(i, students[k]) + delta_times(k, students[i]))
        learning.append(eta * delta_delta(i, k) if learning_rate_terms else sp.Integer(0))
    for i, n in itertools.product(range(K), range(M)):
        gradient.append(delta_times(i, teachers[n]))
    for i in range(K):
        gradient.append(v_rate * sum((a * E(("g", students[i]), ("g", f)) for a, f in error),
                                     sp.Integer(0)))
    learning += [sp.Integer(0)] * (len(gradient) - len(learning))
    drifts = (Drift("learning-rate term eta E[delta_i delta_k] (output noise included)",
                    sp.Matrix(learning), {eta: 0}),) if learning_rate_terms else ()
    mobility = sp.diag(pullback_mobility(fields.definitions, [f"w{i + 1}" for i in range(K)],
                                         fields.known()), v_rate * sp.eye(K))
    return SecondLayerSGD((*fields.state, *v), fields.Q, fields.R, v, eta, noise, v_rate,
                          v_star, loss, sp.Matrix(gradient) + sp.Matrix(learning), mobility,
                          drifts, _with_readouts(fields.samples(check_points), v))


def _with_readouts(samples: tuple[dict, ...], v: sp.Matrix) -> tuple[dict, ...]:
    """Each sample with random read-out weights (any real values are realisable)."""
    rng = random.Random(1)
    return tuple({**point, **{s: sp.Float(rng.uniform(-1.5, 1.5), 40) for s in v}}
                 for point in samples)
