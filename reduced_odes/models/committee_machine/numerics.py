"""Numbers read off the derived ODE: fixed points, their eigenvalues, the largest learning rate.

Nothing here is a formula from the literature: the unspecialised fixed point
(the plateau) is found by integrating the derived flow inside the invariant
symmetric subspace and polishing with Newton's method on the compiled
right-hand side; every fixed point is classified by the engine's generic layer
(:func:`reduced_odes.author.classify`: the eigenvalues of the compiled, derived
Jacobian); the largest learning rate is where the perfectly specialised fixed point of
a noise-free ``K = M`` pair loses stability, bisected on the same Jacobian.

The generic layer also finds both on its own (:func:`plateau_by_newton`: its Newton on the
whole flow from the subspace's point; :func:`eta_max_by_continuation`: pseudo-arclength
continuation of the perfect student in ``eta``).  They are the checks, not the reported
values: they agree to ~1e-14 (the plateau's ``eps_g``) and ~2e-8 (``eta_max``, located at
a branch point), which would move the committed data (the phase levels read against the
plateau, ``verify-default.jsonl``'s ``eta_max``), so the reported values stay the ones
polished here (``tests/models/committee_machine/test_generic_layer.py``).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy.integrate import solve_ivp
from scipy.optimize import brentq, root

from reduced_odes import get_model, load_system
from reduced_odes.author import Continuation, Flow, classify, continue_branch, newton

from .params import CommitteeParams

__all__ = ["FixedPoint", "SymmetricPlateau", "closed_form_plateau", "eta_max_by_continuation",
           "largest_learning_rate", "plateau_by_newton", "plateau_fold", "runaway_time",
           "specialised_point", "symmetric_fold", "symmetric_plateau", "system_for",
           "unspecialised_fixed_point"]


def system_for(params: CommitteeParams, variant: str):
    """The compiled system of ``params``' sizes (and learning-rate term)."""
    model = get_model("committee_machine")  # by name: the model's module imports this one
    return load_system(model, variant, structure=model.structure(params))


def _args(params: CommitteeParams) -> tuple[float, float]:
    return (float(params.eta), float(params.noise))


def _symmetric(system, q: float, c: float, r: float) -> np.ndarray:
    """The permutation-symmetric state ``Q_ii = q``, ``Q_ik = c`` (``i != k``), ``R_in = r``."""
    values = []
    for name in system.state_names:
        kind, i, k = name.split("_")
        values.append(r if kind == "R" else (q if i == k else c))
    return np.array(values)


def _subspace(system, K: int, variant: str):
    """``(embed, picks, start)`` of the invariant subspace the plateau is sought in: identical
    students (``Q_ik = q`` for all ``i, k``, ``R_in = r``: every ``Q_ik`` moves as ``Q_11``);
    for ReLU, whose kernels are singular where students coincide, the permutation-symmetric
    ``(q, c, r)``."""
    if variant == "relu" and K > 1:
        return ((lambda z: _symmetric(system, *z)), ["Q_1_1", "Q_1_2", "R_1_1"],
                [0.25, 0.0, 0.01])
    return (lambda z: _symmetric(system, z[0], z[0], z[1])), ["Q_1_1", "R_1_1"], [0.25, 0.01]


@dataclass(frozen=True)
class FixedPoint:
    """A fixed point of the flow, its ``eps_g`` and the eigenvalues of the Jacobian there."""

    state: np.ndarray
    eps_g: float
    eigenvalues: np.ndarray
    residual: float
    #: The eigenvalues of the flow restricted to the invariant subspace the point was sought
    #: in (the plateau's), or None: whether the flow there settles on it.
    subspace: np.ndarray | None = None

    @property
    def attracts_in_subspace(self) -> bool:
        """Whether every eigenvalue within the subspace decays (a real part below ``-1e-9``
        of the largest modulus: round-off of a marginal direction does not count as decay)."""
        if self.subspace is None or not self.subspace.size:
            return True
        floor = 1e-9 * float(np.max(np.abs(self.subspace)))
        return bool(np.max(self.subspace.real) < -floor)

    @property
    def unstable(self) -> np.ndarray:
        """The eigenvalues with a positive real part, largest first.  The plateau has
        marginal directions (zero eigenvalues where the students coincide), which round-off
        puts at +-1e-9: growth rates below 1e-6 of the largest eigenvalue are not counted."""
        floor = 1e-6 * float(np.max(np.abs(self.eigenvalues)))
        growing = self.eigenvalues[self.eigenvalues.real > floor]
        return np.sort(growing.real)[::-1]


def _flow(params: CommitteeParams, variant: str) -> Flow:
    """The generic layer's flow at ``params`` (on :func:`system_for`'s system)."""
    return Flow(system_for(params, variant), _args(params), get_model("committee_machine"),
                params, variant)


def _fixed_point(params: CommitteeParams, variant: str, y: np.ndarray) -> FixedPoint:
    """The point ``y`` as the generic layer classifies it: ``eps_g``, the eigenvalues of the
    exact Jacobian (largest real part first), the residual."""
    point = classify(_flow(params, variant), y)
    return FixedPoint(point.coordinates, point.observables["eps_g"], point.eigenvalues,
                      point.residual)


@functools.lru_cache(maxsize=256)
def _unspecialised(K: int, M: int, eta: float, noise: float, variant: str) -> FixedPoint:
    params = CommitteeParams(K=K, M=M, eta=eta, noise=noise)
    system, args = system_for(params, variant), _args(params)
    embed, picks, start = _subspace(system, K, variant)
    index = [system.state_names.index(name) for name in picks]

    def rates(z: np.ndarray) -> np.ndarray:
        return np.asarray(system.rhs(0.0, embed(z), *args), dtype=float)[index]

    # Flow on the invariant subspace, where the plateau attracts, from small weights; then
    # Newton on the same rates.
    flow = solve_ivp(lambda t, z: rates(z), (0, 1e4), start, method="LSODA",
                     rtol=1e-10, atol=1e-13)
    polished = root(rates, flow.y[:, -1], method="hybr", options={"xtol": 1e-15})
    point = _fixed_point(params, variant, embed(polished.x))
    # The flow within the subspace: the embedding is linear, so its Jacobian is the full
    # one's rows of the picked coordinates times the embedding's columns.
    columns = np.array([embed(unit) for unit in np.eye(len(picks))]).T
    jac = np.asarray(system.jac(0.0, point.state, *args), dtype=float)
    within = jac[index] @ columns
    return dataclasses.replace(point, subspace=np.linalg.eigvals(within) if np.all(
        np.isfinite(within)) else np.full(len(picks), np.nan))


def unspecialised_fixed_point(params: CommitteeParams, variant: str) -> FixedPoint:
    """The plateau: Saad & Solla's symmetric fixed point, where every student is the same
    vector (``Q_ik = q`` for all ``i, k``, ``R_in = r``), at ``params``' ``eta`` and noise.

    At ``eta = 0`` the direction that separates the students is marginal (they coincide, so
    the mobility is singular there).  At ``eta > 0`` it is weakly unstable: a second
    permutation-symmetric fixed point with ``Q_ii > Q_ik`` attracts inside the symmetric
    subspace, at an ``eps_g`` that differs by ~5e-5 relative at ``eta = 0.1`` — far slower
    (rate ~1e-3) than the escape, so a trajectory's plateau is read against this one.

    Examples
    --------
    >>> p = unspecialised_fixed_point(CommitteeParams(K=2, M=2), "erf")
    >>> abs(p.eps_g - closed_form_plateau(2)) < 1e-10
    True
    """
    return _unspecialised(params.K, params.M, float(params.eta), float(params.noise), variant)


def closed_form_plateau(K: int) -> float:
    """Saad & Solla's plateau ``eps* = (K/pi)(pi/6 - K asin(1/(2K)))`` (K = M, erf, eta -> 0):
    the prediction the derived fixed point is held against.

    Examples
    --------
    >>> round(closed_form_plateau(2), 7)
    0.0116108
    """
    return K / math.pi * (math.pi / 6 - K * math.asin(1 / (2 * K)))


def specialised_point(params: CommitteeParams, variant: str,
                      start: np.ndarray | None = None) -> FixedPoint:
    """The fixed point reached after specialisation: Newton from ``start`` (default the
    perfect student ``Q = I``, ``R = I``, which is exact for a noise-free ``K = M`` pair)."""
    system, args = system_for(params, variant), _args(params)
    if start is None:
        start = _perfect(system)
    polished = root(lambda y: system.rhs(0.0, y, *args), start, jac=lambda y: system.jac(
        0.0, y, *args), method="hybr", options={"xtol": 1e-15})
    return _fixed_point(params, variant, polished.x)


def largest_learning_rate(K: int, variant: str = "erf", hi: float = 8.0) -> float:
    """The largest ``eta`` at which a noise-free ``K = M`` student converges to its teacher:
    where the perfect fixed point's largest eigenvalue crosses zero (bisection to 1e-12).

    The perfect student (``Q = R = I``) is a fixed point at every ``eta`` (every error
    vanishes there); Newton polishes it against round-off.  Near the crossing the Jacobian is
    singular and Newton can step out of the overlaps' domain: then the exact point is read.

    Raises
    ------
    ParameterError
        For ReLU, whose perfect student lies on its kernels' boundary (they divide by
        vanishing quantities there; its ``eta_max`` is the plateau's fold,
        :func:`plateau_fold`), and for an activation whose learning-rate term is not
        derived at ``K = M`` (numerical kernels: ``K = 1`` only).

    Examples
    --------
    >>> eta = largest_learning_rate(2)
    >>> 0 < eta < 10
    True
    """
    _check_perfect_student(K, variant)

    def growth(eta: float) -> float:
        params = CommitteeParams(K=K, M=K, eta=eta)
        perfect = _perfect(system_for(params, variant))
        try:
            point = specialised_point(params, variant)
        except (ValueError, ArithmeticError):  # Newton left the domain: a singular Jacobian
            point = None
        if point is None or not np.max(np.abs(point.state - perfect)) < PERFECT_DRIFT:
            point = _fixed_point(params, variant, perfect)
        return float(np.max(point.eigenvalues.real))

    if growth(hi) < 0:
        return math.inf
    low = hi
    while growth(low / 2) > 0 and low > 1e-6:
        low /= 2
    return brentq(growth, low / 2, low, xtol=1e-12, rtol=1e-12)


#: How far Newton may move the perfect student (an exact fixed point up to the rates'
#: round-off, ~1e-16) before its result is taken for another point (measured: 1.2e-14).
PERFECT_DRIFT = 1e-8


def _perfect(system) -> np.ndarray:
    """The perfect student ``Q = I``, ``R = I`` in ``system``'s state order."""
    return np.array([float(name.split("_")[1] == name.split("_")[2])
                     for name in system.state_names])


def _check_perfect_student(K: int, variant: str) -> None:
    """ParameterError (one line) unless the perfect student's Jacobian can be read."""
    from reduced_odes import ParameterError

    from .params import CLOSED_FORM, MAX_UNITS

    if not (isinstance(K, int) and 1 <= K <= MAX_UNITS):
        raise ParameterError(f"K={K!r} must be an integer in [1, {MAX_UNITS}]")
    if variant == "relu":
        raise ParameterError("variant='relu' has its perfect student on its kernels' boundary "
                             "(Q = R = I, where they divide vanishing quantities), so its "
                             "stability is not read there; allowed: erf, linear (ReLU's "
                             "eta_max: plateau_fold)")
    if variant not in CLOSED_FORM and K > 1:
        raise ParameterError(f"K={K!r} with activation {variant!r}: the learning-rate term "
                             f"needs four-dimensional numerical kernels; allowed: K = 1, or a "
                             f"closed-form activation (erf, linear)")


def plateau_fold(K: int, variant: str = "relu", start: float = 0.5, to: float = 10.0) -> float:
    """The largest ``eta`` at which the unspecialised plateau of ``K = M`` exists: where its
    branch, continued in ``eta`` by the analysis layer (pseudo-arclength, on the derived flow
    and its exact Jacobian) from ``start``, folds back (a saddle-node with the second,
    larger-norm symmetric fixed point); inf if it does not fold before ``to``.

    ReLU's ``eta_max``: above the fold no plateau catches the flow from small weights, and
    the norms grow without bound (ReLU is homogeneous: the learning-rate term, quadratic in
    the weights' scale, outgrows the gradient's pull); below it the student learns.  The
    fold is located where an eigenvalue of the Jacobian crosses zero along the branch
    (bisected on the arc to 1e-12), the largest ``eta`` the branch reaches.

    Raises
    ------
    ParameterError
        For ``K = 1`` (no plateau: the unspecialised point is every state), and for a
        setting the model refuses at ``start`` (ReLU's learning-rate term: ``K = 2`` only).

    Examples
    --------
    >>> round(plateau_fold(2), 9)
    1.257802103
    """
    from reduced_odes import ParameterError

    if K == 1:
        raise ParameterError("K=1: one student and one teacher have no plateau (the "
                             "unspecialised point is every state); allowed: K >= 2")
    params = CommitteeParams(K=K, M=K, eta=start)
    get_model("committee_machine").check(params, variant)
    seed = unspecialised_fixed_point(params, variant).state
    continuation = Continuation(get_model("committee_machine"), params, "eta", variant)
    # The fold comes within a few steps of the start; the branch then turns back towards
    # large norms, which it need not be followed into.
    branch = continue_branch(continuation, seed, start, to, max_steps=FOLD_STEPS)
    if not any(b["kind"] == "fold" for b in branch.bifurcations):
        return math.inf
    return max(branch.values)


def runaway_time(params: CommitteeParams, variant: str, bound: float = 1e3,
                 t_end: float = 2000.0) -> float:
    """When an overlap of the run from ``params``' start first exceeds ``bound`` in modulus
    (inf if none does by ``t_end``): the derived flow integrated by SciPy's LSODA, without
    the model's check, which refuses a setting with no plateau (as above ReLU's fold).

    Examples
    --------
    >>> runaway_time(CommitteeParams(eta=0.1), "erf", t_end=50.0)
    inf
    """
    from .params import initial_overlaps, overlap_state

    system, args = system_for(params, variant), _args(params)
    start = np.array(list(overlap_state(*initial_overlaps(params)).values()))

    def beyond(t: float, y: np.ndarray) -> float:
        return float(np.max(np.abs(y))) - bound

    beyond.terminal = True  # type: ignore[attr-defined]
    run = solve_ivp(lambda t, y: system.rhs(t, y, *args), (0.0, t_end), start,
                    method="LSODA", jac=lambda t, y: system.jac(t, y, *args), rtol=1e-8,
                    atol=1e-10, events=beyond)
    crossed = run.t_events[0]
    return float(crossed[0]) if crossed.size else math.inf


#: Continuation steps that reach the plateau's fold from its start (ReLU, K = M = 2: the
#: fold after 5 steps from eta = 0.5; the branch beyond it is not needed).
FOLD_STEPS = 12


def plateau_by_newton(params: CommitteeParams, variant: str) -> FixedPoint | None:
    """The plateau by the generic layer: its damped Newton on the whole flow from the point
    the symmetric subspace's flow reaches (:func:`unspecialised_fixed_point`'s seed), then
    classified; None if Newton finds no fixed point there.  The check of the plateau.

    Examples
    --------
    >>> point = plateau_by_newton(CommitteeParams(K=2, M=2), "erf")
    >>> abs(point.eps_g - closed_form_plateau(2)) < 1e-10
    True
    """
    seed = unspecialised_fixed_point(params, variant).state
    y = newton(_flow(params, variant), seed)
    return None if y is None else _fixed_point(params, variant, y)


def eta_max_by_continuation(K: int, variant: str = "erf", hi: float = 8.0) -> float:
    """The largest learning rate by the generic layer: the perfect student of a noise-free
    ``K = M`` pair continued in ``eta`` from 0.1 to ``hi``, where it loses stability (inf if
    it does not).  The check of :func:`largest_learning_rate`.

    Examples
    --------
    >>> round(eta_max_by_continuation(2), 5)
    2.30683
    """
    params = CommitteeParams(K=K, M=K, eta=0.1)
    perfect = list(_perfect(system_for(params, variant)))
    # The start's system holds all along (its eta > 0 derives the learning-rate term); the
    # model's check of a setting (its plateau must exist) does not concern this branch.
    continuation = Continuation(get_model("committee_machine"), params, "eta", variant)
    branch = continue_branch(continuation, perfect, 0.1, hi)
    losses = [b["param"] for b in branch.bifurcations if b["kind"] == "loss_of_stability"]
    return losses[0] if losses else math.inf


@functools.lru_cache(maxsize=8)
def _symmetric_flow(variant: str, finite_eta: bool):
    """The unspecialised flow in ``(q, c, r)`` with ``K, M`` as numbers
    (:func:`reduced_odes.author.symmetric_online_sgd`), derived once per activation (cached
    on disk), as one function of ``(q, c, r, K, M, eta, noise)`` returning ``(rates,
    jacobian, eps_g, escape_rate)``: ``rates`` and ``(jacobian, eps_g, escape_rate)``, two
    functions of those numbers."""
    import sympy as sp

    from reduced_odes.author import cached_symbolic, numerical_function, symmetric_online_sgd

    def derive() -> dict:
        s = symmetric_online_sgd(variant, learning_rate_terms=finite_eta)
        return {"arguments": sp.Tuple(*s.state, s.K, s.M, s.eta, s.noise), "rates": s.rates,
                "loss": s.loss, "escape": s.escape_rate}

    d = cached_symbolic(get_model("committee_machine"), variant,
                        f"symmetric-{'eta' if finite_eta else 'flow'}", derive)
    arguments, rates = list(d["arguments"]), sp.Matrix(d["rates"])
    jacobian = rates.jacobian(arguments[:3])
    # Numerical kernels (tanh's, ReLU's orthant terms) by their rules: lambdify prints none.
    # The rates apart: the flow to the plateau evaluates them alone, thousands of times.
    at_point = numerical_function(arguments, [*jacobian, d["loss"], d["escape"]])

    def the_rest(*numbers: float) -> tuple[np.ndarray, float, float]:
        v = at_point(*numbers)
        return np.reshape(v[:9], (3, 3)), v[9], v[10]

    return numerical_function(arguments, list(rates)), the_rest


@dataclass(frozen=True)
class SymmetricPlateau:
    """The plateau of ``K`` students and ``M`` teachers from the symmetric flow, any ``K``.

    Attributes
    ----------
    q, c, r : float
        The fixed point: ``Q_ii = q``, ``Q_ik = c``, ``R_in = r``.
    eps_g : float
    eigenvalues : ndarray
        Of the flow within the symmetric subspace (3 x 3).
    escape_rate : float
        The growth rate of the specialising direction (``K, M >= 2``), the full flow's
        eigenvalue there.
    """

    q: float
    c: float
    r: float
    eps_g: float
    eigenvalues: np.ndarray
    escape_rate: float

    def escape_time(self, asymmetry: float) -> float:
        """The time for a specialisation of size ``asymmetry`` to grow by ``1/asymmetry``:
        ``ln(1/asymmetry) / escape_rate``, the leading term of ``T_escape`` at small
        ``asymmetry`` (the rest does not depend on it)."""
        return math.log(1.0 / asymmetry) / self.escape_rate


@functools.lru_cache(maxsize=256)
def symmetric_plateau(K: int, M: int, eta: float = 0.0, noise: float = 0.0,
                      variant: str = "erf") -> SymmetricPlateau:
    """The unspecialised fixed point for any ``K`` and ``M`` (``K = 1000`` included), from the
    three-variable symmetric flow: flowed to from small weights, then Newton.  As
    :func:`unspecialised_fixed_point`, the flow stays on identical students (``c = q``) but
    for ReLU, whose kernels are singular there.

    Examples
    --------
    >>> p = symmetric_plateau(1000, 1000)
    >>> abs(p.eps_g / closed_form_plateau(1000) - 1) < 1e-9
    True
    """
    _check_symmetric(variant, eta)
    rates, the_rest = _symmetric_flow(variant, eta > 0)
    numbers = (float(K), float(M), float(eta), float(noise))
    identical = variant != "relu" or K == 1

    def full(z):
        return (z[0], z[0], z[1]) if identical else tuple(z)

    def reduced(z):
        values = rates(*full(z), *numbers)
        return np.array([values[0], values[2]] if identical else values)

    start = [0.25, 0.01] if identical else [0.25, 0.0, 0.01]
    flow = solve_ivp(lambda t, z: reduced(z), (0, 1e4), start, method="LSODA", rtol=1e-10,
                     atol=1e-13)
    point = full(root(reduced, flow.y[:, -1], method="hybr", options={"xtol": 1e-15}).x)
    jacobian, loss, escape = the_rest(*point, *numbers)
    eigenvalues = np.linalg.eigvals(jacobian)
    rate = float(escape) if min(K, M) >= 2 else math.nan
    return SymmetricPlateau(*point, float(loss), eigenvalues, rate)


def _check_symmetric(variant: str, eta: float) -> None:
    """ParameterError (one line) for a learning-rate term of numerical four-point kernels."""
    from reduced_odes import ParameterError

    from .params import CLOSED_FORM

    if eta > 0 and variant not in CLOSED_FORM:
        raise ParameterError(f"eta={eta!r} with activation {variant!r}: the symmetric flow's "
                             f"learning-rate term sums four-point kernels of four distinct "
                             f"fields, numerical in four dimensions; allowed: eta = 0 (the "
                             f"limit eta -> 0), or a closed-form activation (erf, relu, linear)")


def symmetric_fold(K: int, M: int | None = None, variant: str = "relu",
                   start: float = 0.05) -> float:
    """The plateau's fold in ``eta`` (ReLU's ``eta_max``, :func:`plateau_fold`) for any ``K``,
    on the symmetric flow with ``K`` and ``M`` as numbers: the plateau followed in ``eta`` from
    ``start`` (Newton at each step, halved until it is 1e-4), then the fold solved for
    directly, the flow's zero together with a singular Jacobian in ``(q, c, r, eta)``.
    Beyond ``K + M = 4`` the full flow's learning-rate term is refused for ReLU: this is its
    ``eta_max`` there.

    Examples
    --------
    >>> round(symmetric_fold(2), 9)  # doctest: +SKIP
    1.257802103

    (Skipped in the doctests: the symmetric flow's derivation takes ~10 s; the slow test
    ``test_relu_eta_max.py`` holds it to :func:`plateau_fold` to 1e-12.)
    """
    M = K if M is None else M
    rates, the_rest = _symmetric_flow(variant, True)

    def safe(function, *values):
        try:
            return function(*values)
        except (ValueError, ZeroDivisionError):  # a Newton step out of the overlaps' domain
            return None

    def zero(z: np.ndarray, eta: float) -> np.ndarray:
        value = safe(rates, *z, K, M, eta, 0.0)
        return np.full(3, 1e6) if value is None else np.array(value)

    def stable(z: np.ndarray, eta: float) -> bool:
        parts = safe(the_rest, *z, K, M, eta, 0.0)
        return parts is not None and bool(np.max(np.linalg.eigvals(parts[0]).real) < 0)

    p = symmetric_plateau(K, M, start, 0.0, variant)
    z, eta, step = np.array([p.q, p.c, p.r]), start, 0.1 * start
    while step > 1e-4:
        trial = root(zero, z, args=(eta + step,), method="hybr", options={"xtol": 1e-13})
        if trial.success and np.max(np.abs(trial.x - z)) < 0.5 and stable(trial.x, eta + step):
            z, eta, step = trial.x, eta + step, 1.5 * step
        else:
            step /= 2

    def extended(x: np.ndarray) -> np.ndarray:
        parts = safe(the_rest, *x[:3], K, M, x[3], 0.0)
        det = 1e6 if parts is None else np.linalg.det(parts[0])
        return np.r_[zero(x[:3], x[3]), det]

    fold = root(extended, np.r_[z, eta], method="hybr", options={"xtol": 1e-14})
    if not (fold.success or np.max(np.abs(extended(fold.x))) < 1e-10):
        raise ArithmeticError(f"no fold of the symmetric flow found near eta={eta!r}")
    return float(fold.x[3])
