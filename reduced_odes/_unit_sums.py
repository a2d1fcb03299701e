"""Teacher–student online SGD as sums over units: derived once per activation, any width.

:func:`~reduced_odes.online_sgd_reduction` unrolls every ``(K, M)`` into its own
expressions; their number, and the cost of deriving and compiling them, grow as
``K^2 (K + M)^2``.  Yet every term is one of a few kernels ``E[prod f(u_a)]`` of the
activation (:func:`reduced_odes._teacher_student._kernel`, derived once in generic
covariance entries ``c_a_b``) evaluated at entries of the field covariance
``C = [[Q, R], [R^T, T]]``.  :func:`indexed_online_sgd` keeps that structure: the
rates are sums of batches, one batch per kernel and per way its fields coincide,
each evaluated as one array operation over all its index tuples ``(i, k, f, ...)``.
The Jacobian is assembled by the chain rule from the kernels' derivatives with
respect to their covariance entries.  A new ``(K, M)`` derives and compiles nothing:
only the index arrays are new.

The terms, with ``delta_i = g'(lambda_i)(phi* - phi)`` and ``phi* - phi = sum_f s_f g(u_f)``
over the fields ``f`` (``s_f = +1`` for a teacher's, ``-1`` for a student's), are those
of :func:`~reduced_odes.online_sgd_reduction`:

    eps_g    = 1/2 sum_{f,h} s_f s_h E[g(u_f) g(u_h)],
    dR_in/dt = sum_f s_f E[g'(lambda_i) nu_n g(u_f)],
    dQ_ik/dt = sum_f s_f (E[g'(lambda_i) lambda_k g(u_f)] + E[g'(lambda_k) lambda_i g(u_f)])
               + eta (sum_{f,h} s_f s_h E[g'(lambda_i) g'(lambda_k) g(u_f) g(u_h)]
                      + noise^2 E[g'(lambda_i) g'(lambda_k)]).
"""

from __future__ import annotations

import functools
import hashlib
import itertools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ._structured import StructuredSystem

__all__ = ["indexed_online_sgd"]

#: One factor kind per position: ``"g"``, ``"dg"`` (g') or ``"x"`` (the field itself).
Kinds = tuple[str, ...]


#: Relative step of the central differences that differentiate a numerical kernel: its
#: 1e-10 accuracy over this step leaves ~1e-5 relative in the Jacobian, which only the
#: stepper's Newton iteration reads (the rates, and so the solution, are exact to 1e-10).
_DIFFERENCE_STEP = 1e-5


@functools.cache
def _lambdified(activation: str, pattern: tuple, size: int) -> tuple[Callable, Callable, str]:
    """``(value, gradient, text)`` of one kernel: NumPy functions of its entries ``c_a_b``
    (``a <= b``, row by row), the gradient a list over the same entries.  A closed form is
    differentiated symbolically; a numerical kernel by central differences."""
    import sympy as sp

    from ._kernel_functions import gaussian_kernel

    kernel = gaussian_kernel(activation, pattern, size)
    text = f"{activation}{pattern}{size}:{sp.srepr(kernel.expression)}"
    if not kernel.closed_form:
        return kernel.numpy, _differenced(kernel.numpy), text
    symbols = list(kernel.arguments)
    gradient = [sp.diff(kernel.expression, s) for s in symbols]
    return (sp.lambdify(symbols, kernel.expression, modules="numpy", cse=True),
            sp.lambdify(symbols, gradient, modules="numpy", cse=True), text)


def _differenced(value: Callable) -> Callable:
    """The gradient of ``value(*entries)`` by central differences, entry by entry."""
    def gradient(*entries):
        entries = [np.asarray(e, dtype=float) for e in entries]
        columns = []
        for j, entry in enumerate(entries):
            step = _DIFFERENCE_STEP * (1.0 + np.abs(entry))
            up, down = list(entries), list(entries)
            up[j], down[j] = entry + step, entry - step
            columns.append((value(*up) - value(*down)) / (2 * step))
        return columns
    return gradient


@dataclass(frozen=True)
class _Batch:
    """Index tuples that share one kernel: ``sum weights * kernel(C[gathers])`` into ``rows``."""

    value: Callable
    gradient: Callable
    gathers: tuple[np.ndarray, ...]  # per kernel entry: flat indices into C
    rows: np.ndarray
    weights: np.ndarray
    cells: tuple[np.ndarray, ...]  # per kernel entry: flat (row, state column) of the Jacobian
    kept: tuple[np.ndarray, ...]  # per kernel entry: the tuples whose entry is a state variable
    text: str


def _first_equal(fields: np.ndarray) -> np.ndarray:
    """For each position ``a`` and tuple, the first position whose field equals ``a``'s."""
    p = fields.shape[0]
    first = np.tile(np.arange(p)[:, None], (1, fields.shape[1]))
    for a in range(p):
        for b in range(a):
            same = (fields[b] == fields[a]) & (first[a] == a)
            first[a][same] = b
    return first


def _batches(activation: str, kinds: Kinds, fields: np.ndarray, rows: np.ndarray,
             weights: np.ndarray, column_of: np.ndarray, n: int) -> list[_Batch]:
    """The batches of the terms ``weights * E[prod_a kinds[a](u_{fields[a]})]`` into ``rows``:
    one per way the fields coincide (which sets the kernel's pattern and size)."""
    p, width = fields.shape[0], column_of.shape[0]
    first = _first_equal(fields)
    codes = sum(first[a] * p**a for a in range(p))
    batches = []
    for code in np.unique(codes):
        mask = codes == code
        classes = first[:, np.argmax(mask)]
        distinct = [a for a in range(p) if classes[a] == a]
        pattern = tuple(sorted((kinds[a], distinct.index(classes[a])) for a in range(p)))
        value, gradient, text = _lambdified(activation, pattern, len(distinct))
        pairs = [(fields[distinct[x]][mask], fields[distinct[y]][mask])
                 for x in range(len(distinct)) for y in range(x, len(distinct))]
        columns = [column_of[u, v] for u, v in pairs]
        kept = tuple(c >= 0 for c in columns)
        cells = tuple(rows[mask][k] * n + c[k] for c, k in zip(columns, kept, strict=True))
        batches.append(_Batch(value, gradient, tuple(u * width + v for u, v in pairs),
                              rows[mask], weights[mask], cells, kept, text))
    return batches


def _summed(batches: list[_Batch], covariance: np.ndarray, n: int) -> np.ndarray:
    """``sum weights * kernel`` of every batch, into ``n`` rows."""
    out = np.zeros(n)
    for b in batches:
        value = b.value(*(covariance[g] for g in b.gathers))
        out += np.bincount(b.rows, weights=b.weights * value, minlength=n)
    return out


def _differentiated(batches: list[_Batch], covariance: np.ndarray, n: int) -> np.ndarray:
    """The Jacobian of :func:`_summed` with respect to the state, ``n x n``."""
    out = np.zeros(n * n)
    for b in batches:
        gradient = b.gradient(*(covariance[g] for g in b.gathers))
        for entry, cells, kept in zip(gradient, b.cells, b.kept, strict=True):
            terms = np.broadcast_to(b.weights * entry, b.weights.shape)[kept]
            out += np.bincount(cells, weights=terms, minlength=n * n)
    return out.reshape(n, n)


class _Layout:
    """The state ``Q_i_k`` (``i <= k``) then ``R_i_n``, and where each sits in ``C``."""

    def __init__(self, K: int, M: int, T: np.ndarray):
        self.K, self.M, self.width = K, M, K + M
        pairs = list(itertools.combinations_with_replacement(range(K), 2))
        self.names = tuple([f"Q_{i + 1}_{k + 1}" for i, k in pairs]
                           + [f"R_{i + 1}_{n + 1}" for i in range(K) for n in range(M)])
        self.column_of = np.full((self.width, self.width), -1)
        for index, (i, k) in enumerate(pairs):
            self.column_of[i, k] = self.column_of[k, i] = index
        for index, (i, n) in enumerate(itertools.product(range(K), range(M)), len(pairs)):
            self.column_of[i, K + n] = self.column_of[K + n, i] = index
        self.base = np.zeros((self.width, self.width))
        self.base[K:, K:] = T
        self.base = self.base.ravel()
        flat = self.column_of.ravel()
        self.places, self.sources = np.flatnonzero(flat >= 0), flat[flat >= 0]
        self.signs = np.array([-1.0] * K + [1.0] * M)

    def covariance(self, y) -> np.ndarray:
        """``C = [[Q, R], [R^T, T]]``, flattened, at the state ``y``."""
        covariance = self.base.copy()
        covariance[self.places] = np.asarray(y, dtype=float)[self.sources]
        return covariance

    def terms(self, *axes: range) -> np.ndarray:
        """Every index tuple over ``axes``, as rows of an array (one row per axis)."""
        return np.array(list(itertools.product(*axes)), dtype=int).reshape(-1, len(axes)).T


def _rate_batches(activation: str, layout: _Layout, finite_eta: bool) -> tuple[list, list]:
    """The batches of the gradient part and of the learning-rate part (with the noise's)."""
    K, F, s = layout.K, layout.width, layout.signs
    n, column_of = len(layout.names), layout.column_of
    ti = layout.terms(range(K), range(K, F), range(F))  # (i, teacher n, f): dR_in
    tq = layout.terms(range(K), range(K), range(F))  # (i, k, f): dQ_ik's gradient part
    fields = np.hstack([ti, tq])
    weights = np.concatenate([s[ti[2]], s[tq[2]] * np.where(tq[0] == tq[1], 2.0, 1.0)])
    rows = column_of[fields[0], fields[1]]
    gradient = _batches(activation, ("dg", "x", "g"), fields, rows, weights, column_of, n)
    if not finite_eta:
        return gradient, []
    four = layout.terms(range(K), range(K), range(F), range(F))
    four = four[:, (four[0] <= four[1]) & (four[2] <= four[3])]
    weights = s[four[2]] * s[four[3]] * np.where(four[2] == four[3], 1.0, 2.0)
    learning = _batches(activation, ("dg", "dg", "g", "g"), four,
                        column_of[four[0], four[1]], weights, column_of, n)
    two = layout.terms(range(K), range(K))
    two = two[:, two[0] <= two[1]]
    noise = _batches(activation, ("dg", "dg"), two, column_of[two[0], two[1]],
                     np.ones(two.shape[1]), column_of, n)
    return gradient, [learning, noise]


def _loss_batches(activation: str, layout: _Layout) -> list[_Batch]:
    pairs = layout.terms(range(layout.width), range(layout.width))
    weights = 0.5 * layout.signs[pairs[0]] * layout.signs[pairs[1]]
    return _batches(activation, ("g", "g"), pairs, np.zeros(pairs.shape[1], dtype=int), weights,
                    layout.column_of, 1)


def _specialisation(layout: _Layout, y: np.ndarray) -> float:
    """The spread of each student's overlaps with the teachers, 1 at ``R = I`` (as the
    unrolled model's observable)."""
    K, M = layout.K, layout.M
    if M == 1:
        return 0.0
    R = y[len(layout.names) - K * M:].reshape(K, M)
    spread = float(np.sum((R - R.mean(axis=1, keepdims=True)) ** 2))
    return spread / (min(K, M) * (1 - 1 / M))


def indexed_online_sgd(K: int, M: int, activation: str, *, finite_eta: bool = True,
                       T=None) -> StructuredSystem:
    """Online SGD's order-parameter flow for ``K`` students and ``M`` teachers, as unit sums.

    The flow of :func:`~reduced_odes.online_sgd_reduction` (its state, rates and ``eps_g``)
    from kernels derived once per activation: building it costs the same at any ``K``,
    ``M``.  The callables take the state and then ``eta, noise``.

    Parameters
    ----------
    K, M : int
        Hidden units of the student and of the teacher.
    activation : str
        A registered activation: its kernels are closed forms where the rules find them,
        else numerical (:func:`reduced_odes._kernel_functions.gaussian_kernel`, 1e-10).
    finite_eta : bool
        Include the learning-rate term ``eta E[delta_i delta_k]`` (with the noise's part);
        without it the flow is the limit ``eta -> 0`` (and ``eta`` is ignored).
    T : array_like, optional
        The teacher's overlaps (default the identity).

    Returns
    -------
    StructuredSystem
        Observables ``eps_g``, ``specialisation``, ``speed``; for ``relu`` the domain Q_i_i > 0.

    Examples
    --------
    One linear student and teacher: ``dQ/dt = 2(R - Q) + eta (Q - 2R + 1 + noise^2)``.

    >>> flow = indexed_online_sgd(1, 1, "linear")
    >>> flow.state_names, flow.rhs(0.0, [0.5, 0.25], 0.1, 0.0).tolist()
    (('Q_1_1', 'R_1_1'), [-0.4, 0.75])
    """
    layout = _Layout(K, M, np.eye(M) if T is None else np.asarray(T, dtype=float))
    gradient, learning = _rate_batches(activation, layout, finite_eta)
    loss = _loss_batches(activation, layout)
    rhs = _flow(_summed, layout, gradient, learning)
    jac = _flow(_differentiated, layout, gradient, learning)
    diagonal = [layout.names.index(f"Q_{i + 1}_{i + 1}") for i in range(K)]
    domain = diagonal if activation == "relu" else []

    def margins(y, eta, noise):
        return [float(y[i]) for i in domain]

    def loss_of(y, eta, noise):
        return [float(_summed(loss, layout.covariance(y), 1)[0])]

    def observables(y, eta, noise):
        y = np.asarray(y, dtype=float)
        speed = float(np.sqrt(np.sum(rhs(0.0, y, eta, noise) ** 2)))
        return [*loss_of(y, eta, noise), _specialisation(layout, y), speed,
                *margins(y, eta, noise)]

    key = _cache_key((K, M, activation, finite_eta, layout.base.tolist()),
                     [*gradient, *loss, *(b for part in learning for b in part)])
    return StructuredSystem(layout.names, ("eps_g", "specialisation", "speed"),
                            tuple(f"{layout.names[i]} > 0" for i in domain), rhs, jac,
                            observables, margins, loss_of, key,
                            native=_native_recipe(K, M, activation, finite_eta, layout))


def _native_recipe(K: int, M: int, activation: str, finite_eta: bool, layout: _Layout) -> tuple:
    """What the native backend builds the same flow from (:mod:`._native._unit_sums`): the
    sizes and activation, the learning-rate option and the teacher's overlaps."""
    teacher = layout.base.reshape(K + M, K + M)[K:, K:]
    return ("unit_sums", (K, M, activation),
            (("finite_eta", finite_eta), ("T", tuple(map(tuple, teacher.tolist())))))


def _flow(batched: Callable, layout: _Layout, gradient: list[_Batch],
          learning: list[list[_Batch]]) -> Callable:
    """The rates (``batched`` = :func:`_summed`) or their Jacobian (:func:`_differentiated`)
    as a function of ``(t, y, eta, noise)``."""
    n = len(layout.names)

    def of(t, y, eta, noise):
        covariance = layout.covariance(y)
        value = batched(gradient, covariance, n)
        if learning:
            value += eta * (batched(learning[0], covariance, n)
                            + noise**2 * batched(learning[1], covariance, n))
        return value

    return of


def _cache_key(setting: tuple, batches: list[_Batch]) -> str:
    """The compile-cache key: the setting and the text of every kernel the batches use."""
    texts = sorted({b.text for b in batches})
    return hashlib.sha256(repr((*setting, texts)).encode()).hexdigest()[:24]
