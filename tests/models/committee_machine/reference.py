"""The soft committee machine's ODEs as published, typed in by hand: the independent reference.

Saad & Solla (1995), Phys. Rev. E 52, 4225 (their Appendix: the integrals ``I2``, ``I3``,
``I4`` of ``g(u) = erf(u/√2)``), in the notation of Goldt, Advani, Saxe, Krzakala &
Zdeborová (2019), NeurIPS (their eqs. 8-9, with output noise ``σ``).  Only tests import
this module: the package derives the same equations itself, and is checked against these.

Conventions (spec ``committee_machine.md``): second layers ``v = v* = 1``, ``T = I`` unless
given, and time ``t = η · steps / N``.  In this time the learning rate appears only in the
``η`` terms of ``dQ/dt``; Goldt's codes use ``α = steps / N`` and multiply the whole
right-hand side by ``η`` (``t = η α``).

Every expectation is over the local fields ``u = (λ_1..λ_K, ν_1..ν_M)``, a centred Gaussian
vector with covariance ``C = [[Q, R], [Rᵀ, T]]``; an index ``a < K`` is a student field, and
``K + n`` the teacher field ``n``.  For ``g = erf(·/√2)``::

    I2(a, b)       = E[g(u_a) g(u_b)]            = (2/π) asin(C_ab / √((1+C_aa)(1+C_bb)))
    I3(a, b, c)    = E[g'(u_a) u_b g(u_c)]       = (2/π) (C_bc (1+C_aa) − C_ab C_ac)
                                                   / ((1+C_aa) √Λ3),
                     Λ3 = (1+C_aa)(1+C_cc) − C_ac²
    I4(a, b, c, d) = E[g'(u_a) g'(u_b) g(u_c) g(u_d)] = (4/π²) asin(Λ0 / √(Λ1 Λ2)) / √Λ4,
                     Λ4 = (1+C_aa)(1+C_bb) − C_ab²,
                     Λ0 = Λ4 C_cd − C_bc C_bd (1+C_aa) − C_ac C_ad (1+C_bb)
                          + C_ab C_ac C_bd + C_ab C_ad C_bc,
                     Λ1 = Λ4 (1+C_cc) − C_bc² (1+C_aa) − C_ac² (1+C_bb) + 2 C_ab C_ac C_bc,
                     Λ2 = Λ1 with c → d
    J2(a, b)       = E[g'(u_a) g'(u_b)]          = (2/π) / √((1+C_aa)(1+C_bb) − C_ab²)

and the flow is::

    dR_in/dt = Σ_m I3(i, n, m) − Σ_j I3(i, n, j)
    dQ_ik/dt = Σ_m I3(i, k, m) − Σ_j I3(i, k, j) + (i ↔ k)
               + η [Σ_nm I4(i, k, n, m) − 2 Σ_jn I4(i, k, j, n) + Σ_jl I4(i, k, j, l)]
               + η σ² J2(i, k)

For ``g(u) = u`` (``"linear"``) the same flow holds with ``I3 = C_bc``, ``I4 = C_cd``,
``J2 = 1``.  The generalisation error is ``ε_g = ½ Σ (I2 over student pairs) + ½ Σ (teacher
pairs) − Σ (student–teacher pairs)``.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.integrate import solve_ivp
from scipy.interpolate import CubicSpline
from scipy.optimize import fsolve

ACTIVATIONS = ("erf", "linear")
#: The nn2pp reference runs (see ``reference_data/nn2pp.json`` for their provenance).
NN2PP_DATA = Path(__file__).parent / "reference_data" / "nn2pp.json"
#: nn2pp prints ε_g with 6 significant digits: ±5e-9 at the half-plateau level (~0.006), over
#: its slope ≈ 3.1e-4 there, is ±1.6e-5 in time per sample; through a crossing cubic's weights
#: (their absolute sum is below 1.5 there) at most 2.5e-5 in ``T_escape``.
PRINTED = 2.5e-5


# -- the integrals, vectorised over rows of index arrays --------------------------------------

def _i2(C: np.ndarray, a: np.ndarray, b: np.ndarray, activation: str) -> np.ndarray:
    if activation == "linear":
        return C[a, b]
    return 2 / np.pi * np.arcsin(C[a, b] / np.sqrt((1 + C[a, a]) * (1 + C[b, b])))


def _i3(C: np.ndarray, a, b, c, activation: str) -> np.ndarray:
    if activation == "linear":
        return C[b, c]
    one_aa, c_ac = 1 + C[a, a], C[a, c]
    lambda3 = one_aa * (1 + C[c, c]) - c_ac ** 2
    return (2 / np.pi / np.sqrt(lambda3)
            * (C[b, c] * one_aa - C[a, b] * c_ac) / one_aa)


def _i4(C: np.ndarray, a, b, c, d, activation: str) -> np.ndarray:
    if activation == "linear":
        return C[c, d]
    # Each covariance entry gathered once (the same numbers, the same operations).
    one_aa, one_bb, c_ab = 1 + C[a, a], 1 + C[b, b], C[a, b]
    c_ac, c_ad, c_bc, c_bd = C[a, c], C[a, d], C[b, c], C[b, d]
    lambda4 = one_aa * one_bb - c_ab ** 2
    lambda0 = (lambda4 * C[c, d] - c_bc * c_bd * one_aa
               - c_ac * c_ad * one_bb
               + c_ab * c_ac * c_bd + c_ab * c_ad * c_bc)
    lambda1 = (lambda4 * (1 + C[c, c]) - c_bc ** 2 * one_aa
               - c_ac ** 2 * one_bb + 2 * c_ab * c_ac * c_bc)
    lambda2 = (lambda4 * (1 + C[d, d]) - c_bd ** 2 * one_aa
               - c_ad ** 2 * one_bb + 2 * c_ab * c_ad * c_bd)
    return 4 / np.pi**2 / np.sqrt(lambda4) * np.arcsin(lambda0 / np.sqrt(lambda1 * lambda2))


def _j2(C: np.ndarray, a, b, activation: str) -> np.ndarray:
    if activation == "linear":
        return np.ones(len(a))
    return 2 / np.pi / np.sqrt((1 + C[a, a]) * (1 + C[b, b]) - C[a, b] ** 2)


# -- the terms of the flow, as index tables built once per (K, M) ------------------------------

@dataclass(frozen=True)
class _Terms:
    """Which integral, at which fields, with which sign, adds to which state component.

    The state is ``(Q_ik for i <= k, row by row; R_in row by row)``.
    """

    size: int
    idx3: np.ndarray      # (n3, 3) field indices of the I3 terms
    sign3: np.ndarray     # (n3,)
    to3: np.ndarray       # (n3,) state component each I3 term adds to
    idx4: np.ndarray      # (n4, 4) field indices of the η I4 terms
    sign4: np.ndarray
    to4: np.ndarray
    idx2: np.ndarray      # (K(K+1)/2, 2) the η σ² J2 terms, one per Q_ik
    to2: np.ndarray


@functools.cache
def _terms(K: int, M: int) -> _Terms:
    students, teachers = range(K), [K + n for n in range(M)]
    q_pairs = [(i, k) for i in range(K) for k in range(i, K)]
    t3, t4 = [], []
    for row, (i, k) in enumerate(q_pairs):
        for a, b in ((i, k), (k, i)):
            t3 += [((a, b, m), 1.0, row) for m in teachers]
            t3 += [((a, b, j), -1.0, row) for j in students]
        t4 += [((i, k, n, m), 1.0, row) for n in teachers for m in teachers]
        t4 += [((i, k, j, n), -2.0, row) for j in students for n in teachers]
        t4 += [((i, k, j, m), 1.0, row) for j in students for m in students]
    for i in students:
        for n in range(M):
            row = len(q_pairs) + i * M + n
            t3 += [((i, K + n, m), 1.0, row) for m in teachers]
            t3 += [((i, K + n, j), -1.0, row) for j in students]

    def table(terms):
        return (np.array([t[0] for t in terms], dtype=np.intp),
                np.array([t[1] for t in terms]), np.array([t[2] for t in terms], dtype=np.intp))

    return _Terms(len(q_pairs) + K * M, *table(t3), *table(t4),
                  np.array(q_pairs, dtype=np.intp), np.arange(len(q_pairs)))


def pack(Q: np.ndarray, R: np.ndarray) -> np.ndarray:
    """The state vector ``(Q_ik, i <= k; R_in)``, row by row.

    Examples
    --------
    >>> pack(np.array([[1.0, 2.0], [2.0, 3.0]]), np.array([[4.0], [5.0]])).tolist()
    [1.0, 2.0, 3.0, 4.0, 5.0]
    """
    Q, R = np.asarray(Q, float), np.asarray(R, float)
    return np.concatenate([Q[np.triu_indices(len(Q))], R.ravel()])


def unpack(y: np.ndarray, K: int, M: int) -> tuple[np.ndarray, np.ndarray]:
    """``(Q, R)`` from a state vector (the inverse of :func:`pack`).

    Examples
    --------
    >>> Q, R = unpack(np.array([1.0, 2.0, 3.0, 4.0, 5.0]), 2, 1)
    >>> Q.tolist(), R.tolist()
    ([[1.0, 2.0], [2.0, 3.0]], [[4.0], [5.0]])
    """
    upper, lower = _triangles(K)
    Q = np.empty((K, K))
    Q[upper] = y[:K * (K + 1) // 2]
    Q[lower] = Q.T[lower]  # the mirror image, the same numbers
    return Q, np.asarray(y[K * (K + 1) // 2:], float).reshape(K, M)


@functools.cache
def _triangles(K: int) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    """The indices of the upper triangle (diagonal included) and of the strict lower one
    (once per ``K``: the flow unpacks its state at every evaluation)."""
    return np.triu_indices(K), np.tril_indices(K, -1)


def field_covariance(Q: np.ndarray, R: np.ndarray, T: np.ndarray) -> np.ndarray:
    """``C = [[Q, R], [Rᵀ, T]]``, the covariance of ``(λ, ν)``.

    Examples
    --------
    >>> field_covariance(np.eye(1), np.zeros((1, 1)), 2 * np.eye(1)).tolist()
    [[1.0, 0.0], [0.0, 2.0]]
    """
    K, M = R.shape
    C = np.empty((K + M, K + M))
    C[:K, :K], C[:K, K:], C[K:, :K], C[K:, K:] = Q, R, R.T, T
    return C


def rhs(y: np.ndarray, K: int, M: int, eta: float, noise: float = 0.0,
        T: np.ndarray | None = None, activation: str = "erf") -> np.ndarray:
    """``dy/dt`` of the packed state ``y`` (time ``t = η steps / N``).

    Examples
    --------
    >>> K = M = 1  # a student aligned with its teacher does not move
    >>> rhs(pack(np.eye(1), np.eye(1)), K, M, eta=0.5).tolist()
    [0.0, 0.0]
    """
    terms = _terms(K, M)
    T = np.eye(M) if T is None else np.asarray(T, float)
    C = field_covariance(*unpack(y, K, M), T)
    i3 = _i3(C, *terms.idx3.T, activation) * terms.sign3
    dy = np.bincount(terms.to3, i3, minlength=terms.size)
    if eta:
        i4 = _i4(C, *terms.idx4.T, activation) * terms.sign4
        dy += eta * np.bincount(terms.to4, i4, minlength=terms.size)
        if noise:
            dy[terms.to2] += eta * noise**2 * _j2(C, *terms.idx2.T, activation)
    return dy


def generalisation_error(Q: np.ndarray, R: np.ndarray, T: np.ndarray | None = None,
                         activation: str = "erf") -> float:
    """``ε_g = ½ E[(φ − φ*)²]`` from the overlaps (output noise excluded).

    Examples
    --------
    >>> K = 2  # the η → 0 plateau of K = M = 2: (K/π)(π/6 − K asin(1/(2K))) = 0.0116108
    >>> Q, R = np.full((K, K), 1 / 3), np.full((K, K), 1 / math.sqrt(6))
    >>> round(generalisation_error(Q, R), 7)
    0.0116108
    """
    Q, R = np.asarray(Q, float), np.asarray(R, float)
    T = np.eye(R.shape[1]) if T is None else np.asarray(T, float)
    if activation == "linear":
        return 0.5 * (Q.sum() + T.sum() - 2 * R.sum())
    sq, st = np.sqrt(1 + np.diag(Q)), np.sqrt(1 + np.diag(T))
    return float((np.arcsin(Q / np.outer(sq, sq)).sum() + np.arcsin(T / np.outer(st, st)).sum()
                  - 2 * np.arcsin(R / np.outer(sq, st)).sum()) / np.pi)


# -- integration ------------------------------------------------------------------------------

@dataclass(frozen=True)
class ReferenceSolution:
    """The reference flow sampled at ``t``: ``eps_g (n,)``, ``Q (n, K, K)``, ``R (n, K, M)``."""

    t: np.ndarray
    eps_g: np.ndarray
    Q: np.ndarray
    R: np.ndarray


def _check(Q0, R0, K: int, M: int, activation: str) -> tuple[np.ndarray, np.ndarray]:
    Q0, R0 = np.asarray(Q0, float), np.asarray(R0, float)
    if Q0.shape != (K, K) or R0.shape != (K, M):
        raise ValueError(f"Q0 must be {K}x{K} and R0 {K}x{M}; got {Q0.shape}, {R0.shape}")
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation={activation!r}; allowed: {', '.join(ACTIVATIONS)}")
    return Q0, R0


def _integrate(Q0, R0, K, M, eta, noise, activation, T, t_end, t_eval=None, events=None,
               method="LSODA", rtol=1e-11, atol=1e-13):
    fun = functools.partial(_rhs_t, K=K, M=M, eta=eta, noise=noise, T=T, activation=activation)
    return solve_ivp(fun, (0.0, t_end), pack(Q0, R0), method=method, t_eval=t_eval,
                     events=events, rtol=rtol, atol=atol)


def _rhs_t(t, y, **kwargs):
    return rhs(y, **kwargs)


def reference_solution(Q0, R0, K: int, M: int, eta: float, noise: float = 0.0,
                       activation: str = "erf", t_eval=(0.0, 500.0), *,
                       T: np.ndarray | None = None, method: str = "LSODA",
                       rtol: float = 1e-11, atol: float = 1e-13) -> ReferenceSolution:
    """The reference flow from ``(Q0, R0)``, sampled at ``t_eval`` (``t = η steps / N``).

    Examples
    --------
    >>> sol = reference_solution(np.eye(1), np.zeros((1, 1)), 1, 1, eta=0.0, t_eval=[0.0, 50.0])
    >>> bool(sol.eps_g[1] < 1e-3 < sol.eps_g[0]), sol.Q.shape
    (True, (2, 1, 1))
    """
    Q0, R0 = _check(Q0, R0, K, M, activation)
    T = np.eye(M) if T is None else np.asarray(T, float)
    t_eval = np.asarray(t_eval, float)
    sol = _integrate(Q0, R0, K, M, eta, noise, activation, T, t_eval[-1], t_eval=t_eval,
                     method=method, rtol=rtol, atol=atol)
    if not sol.success:
        raise RuntimeError(f"reference integration failed: {sol.message}")
    Q, R = zip(*(unpack(y, K, M) for y in sol.y.T), strict=True)
    eps = [generalisation_error(q, r, T, activation) for q, r in zip(Q, R, strict=True)]
    return ReferenceSolution(sol.t, np.array(eps), np.array(Q), np.array(R))


def _symmetric_state(x: np.ndarray, K: int, M: int) -> np.ndarray:
    q, r = x
    return pack(np.full((K, K), q), np.full((K, M), r))


def _symmetric_rhs(x, K, M, eta, noise, T, activation):
    dy = rhs(_symmetric_state(x, K, M), K, M, eta, noise, T, activation)
    return np.array([dy[0], dy[K * (K + 1) // 2]])  # dQ_11/dt, dR_11/dt


def symmetric_fixed_point(K: int, M: int, eta: float, noise: float = 0.0,
                          activation: str = "erf",
                          T: np.ndarray | None = None) -> tuple[float, float, float]:
    """The unspecialised fixed point ``(q, r, ε*)``: ``Q_ik = q`` for all ``i, k``, ``R_in = r``.

    Students with identical weights receive identical updates, so the subspace of identical
    students (``Q_ii = Q_ik = q``, ``R_in = r``) is invariant at every ``η`` and ``σ``; the
    plateau is the fixed point of the flow restricted to it.  That fixed point attracts
    within the subspace: the restricted flow is run from ``(q, r) = (0.5, 0.1)`` (a generic
    start, not the known answer, so that finding it is a check) to ``t = 200``, and Newton
    (``fsolve``) finishes.

    Examples
    --------
    >>> q, r, eps = symmetric_fixed_point(2, 2, eta=0.0)  # 1/(2K-1), 1/sqrt(K(2K-1)), eps*
    >>> round(q, 12), round(r * math.sqrt(6), 12), round(eps, 7)
    (0.333333333333, 1.0, 0.0116108)
    """
    T = np.eye(M) if T is None else np.asarray(T, float)
    args = (K, M, eta, noise, T, activation)
    relaxed = solve_ivp(lambda t, x: _symmetric_rhs(x, *args), (0.0, 200.0), [0.5, 0.1],
                        method="LSODA", rtol=1e-8, atol=1e-10)
    x = _newton(relaxed.y[:, -1], *args)
    Q, R = unpack(_symmetric_state(x, K, M), K, M)
    return float(x[0]), float(x[1]), generalisation_error(Q, R, T, activation)


def _newton(x, K, M, eta, noise, T, activation):
    args = (K, M, eta, noise, T, activation)
    x, info, ok, msg = fsolve(_symmetric_rhs, x, args=args, xtol=1e-15, full_output=True)
    residual = np.max(np.abs(_symmetric_rhs(x, *args)))
    if residual > 1e-14:
        raise RuntimeError(f"no symmetric fixed point at K={K}, M={M}, eta={eta}: {msg}")
    return x


def t_escape(Q0, R0, K: int, M: int, eta: float, noise: float = 0.0, activation: str = "erf",
             *, T: np.ndarray | None = None, t_max: float = 1e5, method: str = "LSODA",
             rtol: float = 1e-11, atol: float = 1e-13) -> float:
    """``T_escape``: the first time ``ε_g`` falls to half its plateau value (nan if never).

    The plateau value is ``ε_g`` at :func:`symmetric_fixed_point` at the same ``η``;
    the crossing is an event of the integrator, located to its tolerance.

    Examples
    --------
    >>> Q0 = np.array([[0.2, 0.0], [0.0, 0.2]])
    >>> R0 = np.array([[0.011, 0.01], [0.01, 0.011]])
    >>> 50 < t_escape(Q0, R0, 2, 2, eta=0.0) < 500
    True
    """
    Q0, R0 = _check(Q0, R0, K, M, activation)
    T = np.eye(M) if T is None else np.asarray(T, float)
    half = symmetric_fixed_point(K, M, eta, noise, activation, T)[2] / 2

    def below_half(t, y):
        return generalisation_error(*unpack(y, K, M), T, activation) - half

    below_half.terminal, below_half.direction = True, -1
    sol = _integrate(Q0, R0, K, M, eta, noise, activation, T, t_max, events=below_half,
                     method=method, rtol=rtol, atol=atol)
    return float(sol.t_events[0][0]) if sol.t_events[0].size else math.nan


def crossing_time(t, eps_g, level: float) -> float:
    """The first time a sampled ``eps_g`` falls to ``level``: the root of a cubic spline
    through the six samples around the first downward crossing (nan if none).

    nn2pp prints ``ε_g`` on a grid about 3 % apart in time near an escape; linear
    interpolation there errs by ~1e-2, the cubic by ~1e-4.

    Examples
    --------
    >>> t = np.linspace(0.0, 3.0, 7)
    >>> round(crossing_time(t, 1 - t**2, 0.0), 9)
    1.0
    """
    t, eps_g = np.asarray(t, float), np.asarray(eps_g, float)
    hits = np.flatnonzero((eps_g[:-1] > level) & (eps_g[1:] <= level))
    if not hits.size:
        return math.nan
    k = int(hits[0])
    window = slice(max(k - 2, 0), k + 4)
    spline = CubicSpline(t[window], eps_g[window] - level)
    return float(next(x for x in spline.roots() if t[k] <= x <= t[k + 1]))


@functools.cache
def nn2pp_data() -> dict:
    """``reference_data/nn2pp.json``: nn2pp's runs with their provenance.

    Examples
    --------
    >>> data = nn2pp_data()
    >>> data["source"]["repository"], data["source"]["commit"][:7]
    ('https://github.com/sgoldt/nn2pp', '8e305cc')
    """
    return json.loads(NN2PP_DATA.read_text())


def reference_cases() -> list[dict]:
    """The initial overlaps of the nn2pp reference runs: dicts with ``name``, ``K``, ``M``,
    ``Q0`` and ``R0`` (nested lists), read from ``reference_data/nn2pp.json``.

    Examples
    --------
    >>> cases = reference_cases()
    >>> {"name", "K", "M", "Q0", "R0"} <= set(cases[0])
    True
    """
    return [{key: case[key] for key in ("name", "K", "M", "Q0", "R0")}
            for case in nn2pp_data()["cases"]]


#: The names of the reference cases, as test parameters.
CASES = [c["name"] for c in reference_cases()]


def reference_case(name: str) -> dict:
    """The reference case called ``name`` (see :func:`reference_cases`).

    Examples
    --------
    >>> reference_case(reference_cases()[0]["name"])["K"]
    2
    """
    return next(c for c in reference_cases() if c["name"] == name)


def nn2pp_escape(case: str, eta: float, dt: float) -> float:
    """nn2pp's ``T_escape`` (in ``t = η α``) for ``case`` at learning rate ``eta`` and Euler
    step ``dt``: where its printed ``ε_g`` crosses the reference's plateau level ``ε*(η)/2``
    (nn2pp has no fixed-point solver; the tests show the level is its too).

    Examples
    --------
    >>> 0 < nn2pp_escape(reference_cases()[0]["name"], 0.1, 0.005) < 1e4
    True
    """
    level = symmetric_fixed_point(2, 2, eta)[2] / 2
    run = next(d for d in nn2pp_data()["escape_samples"]
               if (d["case"], d["eta"], d["dt"]) == (case, eta, dt))
    return crossing_time(eta * np.array(run["alpha"]), run["eps_g"], level)
