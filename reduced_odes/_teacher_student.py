"""Teacher–student online learning in the high-dimensional limit, derived as a reduction.

A student ``phi(x) = sum_i v_i g(lambda_i)`` (``K`` units, ``lambda_i = w_i.x/sqrt(N)``)
learns a teacher ``phi*(x) = sum_n g(nu_n) + zeta`` (``M`` units, ``nu_n = B_n.x/sqrt(N)``,
output noise ``zeta ~ N(0, noise^2)``) by online SGD, one fresh ``x ~ N(0, I_N)`` a
step: ``w_i <- w_i + (eta/sqrt(N)) delta_i x`` with ``delta_i = v_i g'(lambda_i)(phi* - phi)``.
As ``N -> infinity`` the order parameters ``Q_ik = w_i.w_k/N``, ``R_in = w_i.B_n/N``
follow, in ``t = eta steps / N``,

    dR_in/dt = E[delta_i nu_n],
    dQ_ik/dt = E[delta_i lambda_k + delta_k lambda_i] + eta E[delta_i delta_k],

expectations over the centred Gaussian ``(lambda, nu)`` of covariance
``[[Q, R], [R^T, T]]``, each derived by :func:`~reduced_odes.gaussian_expectation`
from the activation's declaration.  Nothing here is typed from the literature:
the rates come from the SGD step's definition, the loss from the network's, the
gradient part is asserted to be ``-M grad eps_g`` under the pull-back mobility
of the map ``W -> (Q, R)`` (:func:`pullback_mobility`), and the learning-rate and
noise terms are kept as :class:`~reduced_odes.Drift` terms that vanish at ``eta = 0``.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import sympy as sp

from ._errors import DerivationError
from ._kernel_functions import kernel_expression
from ._symbolic import Drift, declare_order_parameters

__all__ = ["OnlineSGD", "SymmetricSGD", "online_sgd_reduction", "pullback_mobility",
           "symmetric_online_sgd"]


def _inner(a: str, b: str, names: Mapping[frozenset, sp.Expr]) -> sp.Expr:
    """``<a, b>/N`` from the order parameters and the known inner products."""
    key = frozenset((a, b))
    if key not in names:
        raise DerivationError("pull-back mobility", f"<{a}, {b}> is neither an order parameter "
                                                    f"nor a known inner product")
    return names[key]


def pullback_mobility(definitions: Mapping[sp.Symbol, tuple[str, str]], trained: Iterable[str],
                      known: Mapping[tuple[str, str], sp.Expr] | None = None) -> sp.Matrix:
    """The mobility ``M = J J^T`` of order parameters that are inner products of weight vectors.

    When weight vectors ``w_j`` follow the gradient flow ``dw_j/dt = -N grad_{w_j} L``
    (online SGD's clock ``t = eta steps / N``) and ``L`` depends on them only through the
    order parameters ``p = <a, b>/N``, the order parameters follow ``dp/dt = -M grad_p L``
    with ``M_pq = sum_j <d p/d w_j, d q/d w_j> N``.  With ``d<a, b>/d w_j = [a = j] b +
    [b = j] a``, every entry is again an inner product: an order parameter or a known one.

    Parameters
    ----------
    definitions : mapping of Symbol to (str, str)
        Each order parameter (the state, in order) as the pair of vectors it is the
        normalised inner product of, e.g. ``{Q_1_2: ("w1", "w2"), R_1_1: ("w1", "B1")}``.
    trained : iterable of str
        The vectors that are trained; the others are fixed.
    known : mapping of (str, str) to Expr, optional
        Inner products that are no state variable (e.g. the teacher's ``T``).

    Returns
    -------
    Matrix
        ``M``, symmetric, in the order of ``definitions``.

    Examples
    --------
    >>> q, r = sp.symbols("q r", real=True)
    >>> pullback_mobility({q: ("w", "w"), r: ("w", "b")}, ["w"], {("b", "b"): 1})
    Matrix([
    [4*q, 2*r],
    [2*r,   1]])
    """
    names = {frozenset(pair): symbol for symbol, pair in definitions.items()}
    names.update({frozenset(pair): sp.sympify(value) for pair, value in (known or {}).items()})
    trained = tuple(trained)

    def derivative(pair: tuple[str, str], j: str) -> list[str]:
        a, b = pair
        return [other for this, other in ((a, b), (b, a)) if this == j]

    pairs = list(definitions.values())
    n = len(pairs)
    mobility = sp.zeros(n, n)
    for p, q in itertools.combinations_with_replacement(range(n), 2):
        entry = sum((_inner(u, v, names) for j in trained
                     for u in derivative(pairs[p], j) for v in derivative(pairs[q], j)),
                    sp.Integer(0))
        mobility[p, q] = mobility[q, p] = entry
    return mobility


@dataclass(frozen=True)
class OnlineSGD:
    """The reduced online-SGD dynamics of a teacher–student pair (see :func:`online_sgd_reduction`).

    Attributes
    ----------
    state : tuple of Symbol
        ``Q_i_k`` (``i <= k``) then ``R_i_n``, 1-based.
    Q, R, T : Matrix
        The overlaps as matrices (``Q`` symmetric in the state's symbols, ``T`` numbers).
    eta, noise : Symbol
        The learning rate and the output noise's standard deviation.
    loss : Expr
        ``eps_g = E[(phi - phi*)^2]/2`` (output noise excluded).
    rates : Matrix
        ``d state/dt`` as derived from the SGD step, ``eta`` terms included.
    mobility : Matrix
        The pull-back mobility of ``W -> (Q, R)``.
    drifts : tuple of Drift
        The learning-rate term ``eta E[delta_i delta_k]`` (with the noise's part).
    samples : tuple of dict
        Random overlaps ``{symbol: value}`` that a network realises, for numerical checks.

    Examples
    --------
    One linear student and teacher: the rates are the gradient part under the mobility
    plus the learning-rate drift.

    >>> sgd = online_sgd_reduction(1, 1, "linear")
    >>> sgd.mobility
    Matrix([
    [4*Q_1_1, 2*R_1_1],
    [2*R_1_1,       1]])
    >>> gradient = -sgd.mobility * sp.Matrix([sp.diff(sgd.loss, v) for v in sgd.state])
    >>> sp.simplify(sgd.rates - gradient - sp.Matrix(sgd.drifts[0].rate)).T
    Matrix([[0, 0]])
    """

    state: tuple[sp.Symbol, ...]
    Q: sp.Matrix
    R: sp.Matrix
    T: sp.Matrix
    eta: sp.Symbol
    noise: sp.Symbol
    loss: sp.Expr
    rates: sp.Matrix
    mobility: sp.Matrix
    drifts: tuple[Drift, ...]
    samples: tuple[dict, ...]


class _Overlaps:
    """The Gaussian fields ``lambda_i``, ``nu_n`` and their covariances, in symbols."""

    def __init__(self, K: int, M: int, T: sp.Matrix):
        self.K, self.M, self.T = K, M, T
        self.Q = sp.zeros(K, K)
        self.definitions: dict[sp.Symbol, tuple[str, str]] = {}
        for i, k in itertools.combinations_with_replacement(range(K), 2):
            symbol = sp.Symbol(f"Q_{i + 1}_{k + 1}", real=True)
            self.Q[i, k] = self.Q[k, i] = symbol
            self.definitions[symbol] = (f"w{i + 1}", f"w{k + 1}")
        self.R = sp.zeros(K, M)
        for i, n in itertools.product(range(K), range(M)):
            symbol = sp.Symbol(f"R_{i + 1}_{n + 1}", real=True)
            self.R[i, n] = symbol
            self.definitions[symbol] = (f"w{i + 1}", f"B{n + 1}")
        self.state = declare_order_parameters(self.definitions)

    def covariance(self, a: tuple[str, int], b: tuple[str, int]) -> sp.Expr:
        """Covariance of two fields, each ``("l", i)`` (student) or ``("n", n)`` (teacher)."""
        (ka, ia), (kb, ib) = a, b
        if ka == kb == "l":
            return self.Q[ia, ib]
        if ka == kb == "n":
            return self.T[ia, ib]
        return self.R[ia, ib] if ka == "l" else self.R[ib, ia]

    def known(self) -> dict[tuple[str, str], sp.Expr]:
        return {(f"B{n + 1}", f"B{m + 1}"): self.T[n, m]
                for n, m in itertools.combinations_with_replacement(range(self.M), 2)}

    def samples(self, count: int, seed: int = 0) -> tuple[dict, ...]:
        """Overlaps of random networks: ``W = A [B; Z]`` for random ``A`` (a valid Gram matrix)."""
        rng = random.Random(seed)
        teacher = sp.Matrix(self.T).cholesky(hermitian=False)
        points = []
        for _ in range(count):
            # Student vectors in the span of the teacher's and K extra orthonormal directions.
            mix = sp.Matrix(self.K, self.M + self.K,
                            lambda i, j: sp.Float(rng.uniform(-0.7, 0.7), 40))
            basis = sp.diag(teacher, sp.eye(self.K))
            W = mix * basis
            B = sp.Matrix.hstack(teacher, sp.zeros(self.M, self.K))
            Q, R = W * W.T, W * B.T
            point = {self.Q[i, k]: Q[i, k] for i in range(self.K) for k in range(i, self.K)}
            point.update({self.R[i, n]: R[i, n] for i in range(self.K) for n in range(self.M)})
            points.append(point)
        return tuple(points)


#: A factor of an integrand: ``("g", field)``, ``("dg", field)`` (g') or ``("x", field)``.
Factor = tuple[str, tuple[str, int]]


def _kernel(activation: str, pattern: tuple[tuple[str, int], ...], size: int) -> sp.Expr:
    """``E[prod f(u_a)]`` over ``size`` centred Gaussians of covariance ``c_a_b``, derived
    once: a closed form, or numerical kernels (:mod:`reduced_odes._kernel_functions`)."""
    return kernel_expression(activation, pattern, size)[0]


def _expect(activation: str, factors: Sequence[Factor], fields: _Overlaps) -> sp.Expr:
    """``E[prod factors]``: the kernel of the factors' pattern at the fields' covariances."""
    distinct = list(dict.fromkeys(field for _, field in factors))
    pattern = tuple(sorted((kind, distinct.index(field)) for kind, field in factors))
    kernel = _kernel(activation, pattern, len(distinct))
    return kernel.xreplace({sp.Symbol(f"c_{a}_{b}", real=True):
                            fields.covariance(distinct[a], distinct[b])
                            for a in range(len(distinct)) for b in range(a, len(distinct))})


class _UnitTerms:
    """The expectations online SGD is made of, at the fields' overlaps: the loss,
    ``E[delta_i x]`` and ``E[delta_i delta_k]``, ``delta_i = g'(lambda_i)(phi* - phi)``."""

    def __init__(self, activation: str, fields: _Overlaps, noise: sp.Symbol):
        self.activation, self.fields, self.noise = activation, fields, noise
        self.students = [("l", i) for i in range(fields.K)]
        self.teachers = [("n", n) for n in range(fields.M)]
        # phi* - phi as signed g-factors: +g(nu_n), -g(lambda_j).
        self.error = [(1, f) for f in self.teachers] + [(-1, f) for f in self.students]
        self.error_pairs = list(itertools.product(self.error, self.error))

    def E(self, *factors: Factor) -> sp.Expr:
        return _expect(self.activation, factors, self.fields)

    def loss(self) -> sp.Expr:
        return sp.Rational(1, 2) * sum((s1 * s2 * self.E(("g", f1), ("g", f2))
                                        for (s1, f1), (s2, f2) in self.error_pairs), sp.Integer(0))

    def delta_times(self, i: int, field) -> sp.Expr:  # E[delta_i * field]
        return sum((s * self.E(("dg", self.students[i]), ("x", field), ("g", f))
                    for s, f in self.error), sp.Integer(0))

    def delta_delta(self, i: int, k: int) -> sp.Expr:  # E[delta_i delta_k], with output noise
        di, dk = ("dg", self.students[i]), ("dg", self.students[k])
        pairs = sum((s1 * s2 * self.E(di, dk, ("g", f1), ("g", f2))
                     for (s1, f1), (s2, f2) in self.error_pairs), sp.Integer(0))
        return pairs + self.noise**2 * self.E(di, dk)


def online_sgd_reduction(K: int, M: int, activation: str, *, T: sp.Matrix | None = None,
                         learning_rate_terms: bool = True, check_points: int = 3) -> OnlineSGD:
    """Derive online SGD's order-parameter ODEs for a soft committee machine and its teacher.

    Parameters
    ----------
    K, M : int
        Hidden units of the student and of the teacher (any, ``K != M`` included).
    activation : str
        A registered activation (:func:`~reduced_odes.activation`): ``erf``, ``relu``, ``linear``.
    T : Matrix, optional
        The teacher's overlaps ``B_n.B_m/N`` (numbers; default the identity).
    learning_rate_terms : bool
        Derive the ``eta E[delta_i delta_k]`` term (a :class:`DerivationError` where the
        activation's four-point expectation has no closed form, as for ReLU); without it
        the reduction is the ``eta -> 0`` limit.
    check_points : int
        Random realisable overlaps at which the gradient part is asserted.

    Returns
    -------
    OnlineSGD

    Examples
    --------
    >>> sgd = online_sgd_reduction(1, 1, "linear")
    >>> sgd.state
    (Q_1_1, R_1_1)
    >>> sp.expand(sgd.loss)
    Q_1_1/2 - R_1_1 + 1/2
    >>> sgd.rates.applyfunc(sp.expand).T
    Matrix([[Q_1_1*eta - 2*Q_1_1 - 2*R_1_1*eta + 2*R_1_1 + eta*noise**2 + eta, 1 - R_1_1]])
    """
    T = sp.eye(M) if T is None else sp.Matrix(T)
    if T.shape != (M, M) or T != T.T or T.free_symbols:
        raise DerivationError("teacher overlaps", f"T must be a symmetric {M}x{M} matrix of "
                                                  f"numbers, got {T}")
    fields = _Overlaps(K, M, T)
    eta, noise = sp.Symbol("eta", nonnegative=True), sp.Symbol("noise", nonnegative=True)
    terms = _UnitTerms(activation, fields, noise)
    loss, students = terms.loss(), terms.students
    gradient, learning = [], []
    for i, k in itertools.combinations_with_replacement(range(K), 2):
        gradient.append(terms.delta_times(i, students[k]) + terms.delta_times(k, students[i]))
        learning.append(eta * terms.delta_delta(i, k) if learning_rate_terms else sp.Integer(0))
    for i, n in itertools.product(range(K), range(M)):
        gradient.append(terms.delta_times(i, terms.teachers[n]))
        learning.append(sp.Integer(0))
    drifts = (Drift("learning-rate term eta E[delta_i delta_k] (output noise included)",
                    sp.Matrix(learning), {eta: 0}),) if learning_rate_terms else ()
    rates = sp.Matrix(gradient) + (sp.Matrix(learning) if learning_rate_terms else
                                   sp.zeros(len(gradient), 1))
    mobility = pullback_mobility(fields.definitions, [f"w{i + 1}" for i in range(K)],
                                 fields.known())
    return OnlineSGD(fields.state, fields.Q, fields.R, T, eta, noise, loss, rates, mobility,
                     drifts, fields.samples(check_points))


class _Representatives:
    """Named fields with symbols for their covariances, and the fresh fields a sum over units
    adds, at the permutation-symmetric point ``Q_ii = q``, ``Q_ik = c``, ``R_in = r``,
    ``T = I`` (a fresh field's entries are never differentiated, so they are those values)."""

    def __init__(self, students: int, teachers: int, q, c, r):
        self.named = [("l", i) for i in range(students)] + [("n", n) for n in range(teachers)]
        self.q, self.c, self.r = q, c, r
        self.symbols: dict[tuple, sp.Symbol] = {}
        for a, b in itertools.combinations_with_replacement(self.named, 2):
            if "l" in (a[0], b[0]):
                (ka, ia), (kb, ib) = sorted((a, b))
                name = f"Q_{ia + 1}_{ib + 1}" if kb == "l" else f"R_{ia + 1}_{ib + 1}"
                self.symbols[frozenset((a, b))] = sp.Symbol(name, real=True)

    def symmetric(self, a, b) -> sp.Expr:
        if a[0] == b[0] == "n":
            return sp.Integer(1 if a == b else 0)
        if a[0] == b[0] == "l":
            return self.q if a == b else self.c
        return self.r

    def covariance(self, a, b) -> sp.Expr:
        return self.symbols.get(frozenset((a, b)), None) or self.symmetric(a, b)

    def at_symmetric_point(self) -> dict:
        return {s: self.symmetric(*tuple(pair) * (2 if len(pair) == 1 else 1))
                for pair, s in self.symbols.items()}


def _placements(named: list, free: int, K: sp.Expr, M: sp.Expr) -> list[tuple[tuple, sp.Expr]]:
    """Every way ``free`` summed indices over all ``K + M`` fields fall on the ``named`` fields,
    on each other, or on fresh ones: ``(fields, how many index tuples do so)``."""
    placed = [((), sp.Integer(1), list(named))]
    for step in range(free):
        grown = []
        for fields, count, pool in placed:
            for field in pool:
                grown.append((fields + (field,), count, pool))
            for kind, size in (("l", K), ("n", M)):
                taken = sum(1 for f in pool if f[0] == kind)
                fresh = (kind, f"new{step}")
                grown.append((fields + (fresh,), count * (size - taken), pool + [fresh]))
        placed = grown
    return [(fields, count) for fields, count, _ in placed]


@dataclass(frozen=True)
class SymmetricSGD:
    """Online SGD on the permutation-symmetric subspace, with ``K`` and ``M`` as numbers.

    Attributes
    ----------
    state : tuple of Symbol
        ``(q, c, r)``: ``Q_ii = q``, ``Q_ik = c`` (``i != k``), ``R_in = r``; ``T = I``.
    K, M, eta, noise : Symbol
    rates : Matrix
        ``d(q, c, r)/dt``.
    loss : Expr
        ``eps_g`` there.
    escape_rate : Expr
        The growth rate of the specialising direction ``R_in - r`` with zero row and
        column sums (``K, M >= 2``): the eigenvalue of the full flow's Jacobian on it.

    Examples
    --------
    >>> s = symmetric_online_sgd("linear", learning_rate_terms=False)
    >>> s.state
    (q, c, r)
    >>> sp.expand(s.loss.subs({s.K: 1, s.M: 1}))
    q/2 - r + 1/2
    """

    state: tuple[sp.Symbol, ...]
    K: sp.Symbol
    M: sp.Symbol
    eta: sp.Symbol
    noise: sp.Symbol
    rates: sp.Matrix
    loss: sp.Expr
    escape_rate: sp.Expr


def symmetric_online_sgd(activation: str, *, learning_rate_terms: bool = True) -> SymmetricSGD:
    """The unspecialised flow of a soft committee machine: every student alike (``Q_ii = q``,
    ``Q_ik = c``, ``R_in = r``, an invariant subspace), with ``K`` and ``M`` as symbols.

    Each rate of :func:`online_sgd_reduction` is a sum over units of kernels; on the subspace
    each term's value depends only on which of its fields coincide, so the sum is a sum over
    those coincidence classes weighted by their counts, polynomials in ``K`` and ``M``.

    Examples
    --------
    One linear student and teacher, as :func:`online_sgd_reduction` has them:

    >>> s = symmetric_online_sgd("linear")
    >>> q, c, r = s.state
    >>> point = {s.K: 1, s.M: 1}
    >>> [sp.expand(e.subs(point)) for e in (s.rates[0], s.rates[2], s.loss)]
    [eta*noise**2 + eta*q - 2*eta*r + eta - 2*q + 2*r, 1 - r, q/2 - r + 1/2]
    """
    q, c, r = sp.symbols("q c r", real=True)
    K, M = sp.symbols("K M", positive=True, integer=True)
    eta, noise = sp.Symbol("eta", nonnegative=True), sp.Symbol("noise", nonnegative=True)
    sign = {"l": -1, "n": 1}

    def E(fields, *factors):
        return _expect(activation, factors, fields)

    def error_sum(fields, named, free, term) -> sp.Expr:
        return sum((count * sp.prod([sign[f[0]] for f in placed]) * term(*placed)
                    for placed, count in _placements(named, free, K, M)), sp.Integer(0))

    def q_rate(fields, i, k) -> sp.Expr:
        named = fields.named
        grad = error_sum(fields, named, 1, lambda f: E(fields, ("dg", i), ("x", k), ("g", f))
                         + E(fields, ("dg", k), ("x", i), ("g", f)))
        if not learning_rate_terms:
            return grad
        four = error_sum(fields, named, 2, lambda f, h: E(fields, ("dg", i), ("dg", k),
                                                          ("g", f), ("g", h)))
        return grad + eta * (four + noise**2 * E(fields, ("dg", i), ("dg", k)))

    def r_rate(fields) -> sp.Expr:
        i, n = ("l", 0), ("n", 0)
        return error_sum(fields, fields.named, 1,
                         lambda f: E(fields, ("dg", i), ("x", n), ("g", f)))

    one = _Representatives(1, 1, q, c, r)
    two = _Representatives(2, 1, q, c, r)
    rates = [q_rate(one, ("l", 0), ("l", 0)), q_rate(two, ("l", 0), ("l", 1)), r_rate(one)]
    rates = [e.xreplace(f.at_symmetric_point())
             for e, f in zip(rates, (one, two, one), strict=True)]
    none = _Representatives(0, 0, q, c, r)
    loss = sp.Rational(1, 2) * error_sum(none, [], 2,
                                         lambda f, h: E(none, ("g", f), ("g", h)))
    square = _Representatives(2, 2, q, c, r)
    rate = r_rate(square)
    mode = {"R_1_1": 1, "R_1_2": -1, "R_2_1": -1, "R_2_2": 1}
    escape = sum((sign * sp.diff(rate, sp.Symbol(name, real=True)) for name, sign in mode.items()),
                 sp.Integer(0)).xreplace(square.at_symmetric_point())
    return SymmetricSGD((q, c, r), K, M, eta, noise, sp.Matrix(rates), loss, escape)
