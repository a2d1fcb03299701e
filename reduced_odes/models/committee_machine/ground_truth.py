"""Online SGD on the real soft committee machine: the ground truth the ODE is held against.

Student ``φ(x) = Σ_i g(w_i·x/√N)`` (``K`` units, second layer fixed at 1), teacher
``φ*(x) = Σ_n g(B_n·x/√N) + ζ``, ``ζ ~ N(0, σ²)``, one fresh ``x ~ N(0, I_N)`` per step::

    w_i ← w_i + (η/√N) δ_i x,    δ_i = g'(λ_i) (φ*(x) − φ(x)),    t = η · steps / N.

Runs start at prescribed overlaps (:func:`initial_weights`) and record ``Q = W Wᵀ/N``,
``R = W Bᵀ/N`` and ``ε_g`` at chosen times; a batch of independent runs (``seeds``) is
advanced together, in arrays ``(seeds, K, N)``.

Two methods give the same law of the overlaps:

* ``"network"`` trains the weights themselves: ``N`` Gaussian numbers and ``O((K+M) N)``
  work per step.
* ``"overlaps"`` advances the Gram matrix of ``(w_1..w_K, B_1..B_M)`` alone.  The step
  depends on ``x`` only through its projections ``(λ, ν) ~ N(0, [[Q, R], [Rᵀ, T]])`` and
  through ``|x|²``, which given the projections is ``|z|² + χ²_{N−K−M}`` (``z`` the
  coordinates of ``x`` in an orthonormal basis of the span, completed to ``K + M``
  directions).  So the exact finite-``N`` step of the overlaps is::

      Q_ik += (η/N)(δ_i λ_k + δ_k λ_i) + (η²/N) δ_i δ_k |x|²/N,    R_in += (η/N) δ_i ν_n,

  with ``O((K+M)²)`` work per step whatever ``N``: no approximation, only a cheaper
  sampler of the same process (the tests hold it against ``"network"``).

Measured with numba, K = M = 2, a batch of 4 runs on a shared 2-core machine: ``network``
6e4 steps/s at N = 500 and 7e3 at N = 5000 (drawing ``x`` costs most of it), ``overlaps``
2.5e6 steps/s at any ``N``.  A run to t = 200 at η = 0.1 and N = 5000 (1e7 steps) takes
about 25 minutes by ``network`` and 4 seconds by ``overlaps``.

Both have a NumPy path (``backend="python"``) and a numba path (``"numba"``, the ``[fast]``
extra) that consume the same random numbers and agree to rounding.  Random streams are per
run: run ``s`` of ``rng_seed`` draws its weights, inputs, noise and test set from
``SeedSequence(rng_seed, spawn_key=(s, stream))``, so a run does not depend on how many
others share its batch, nor on the recording times.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from reduced_odes.author import ParameterError, choice
from reduced_odes.author import activation as registered_activation

from .params import ACTIVATIONS as MODEL_ACTIVATIONS

__all__ = ["ACTIVATIONS", "BACKENDS", "METHODS", "SGDRun", "SecondLayerRun",
           "generalisation_error", "initial_weights", "readout_error", "sgd_steps", "train",
           "train_second_layer"]

#: Every activation of the model: ``g`` and ``g'`` are the registry's numeric forms
#: (:func:`~reduced_odes.author.activation`), the numba kernels compile its ``math`` source.
ACTIVATIONS = MODEL_ACTIVATIONS
METHODS = ("network", "overlaps")
#: Where the SGD runs: ``fastest`` is numba when installed, else NumPy (not the engine's
#: ``auto``, which a job decides: :class:`~reduced_odes.SolverConfig`).
BACKENDS = ("fastest", "python", "numba")
#: Random streams of one run (the ``stream`` of its ``SeedSequence`` spawn key); ``_NORMS``
#: is the ``χ²`` of ``|x|²`` outside the span, used by the ``overlaps`` method.
_WEIGHTS, _INPUTS, _NOISE, _TEST, _NORMS = range(5)
#: Random numbers drawn per block and batch (a block is cut at every recording time).
_BLOCK_NUMBERS = 2**20
#: A Cholesky pivot below this fraction of its diagonal entry is a direction the vectors do
#: not span (identical students, say); rounding leaves ~1e-16 there, real ones are larger.
_PIVOT_TOL = 1e-12
#: The trapezoidal step of a pair kernel without a closed form (at most 0.5), times the
#: largest Cholesky entry: for ``tanh`` (poles at ``i pi/2``) its error is about
#: exp(-2 pi (pi/2) / 0.25) ~ 1e-17 (Trefethen & Weideman 2014; measured 1e-15);
#: Gauss-Hermite, which converges only root-exponentially for such poles, needed 150 nodes
#: for 1e-10.  The grid ends at |z| = 9 (weight e^-40).
_STEP = 0.25
#: Pairs per block of that quadrature (bounds its memory to ~100 MB).
_PAIRS_PER_BLOCK = 1024


# -- activations and the exact ε_g -----------------------------------------------------------

def _g(name: str, u: np.ndarray) -> np.ndarray:
    return registered_activation(name).numeric(u)


def _dg(name: str, u: np.ndarray) -> np.ndarray:
    return registered_activation(name).numeric_derivative(u)


def _quadrature_pair(name: str, a, b, c) -> np.ndarray:
    """``E[g(u) g(v)]`` by the trapezoidal rule on the Cholesky factor of ``[[a, c], [c, b]]``
    (``u = l00 z0``, ``v = l10 z0 + l11 z1``): an activation with no closed-form pair."""
    a, b, c = np.broadcast_arrays(*(np.asarray(v, float) for v in (a, b, c)))
    shape, (a, b, c) = a.shape, (v.reshape(-1) for v in (a, b, c))
    l00 = np.sqrt(np.maximum(a, 0.0))
    l10 = np.where(l00 > 0, c / np.where(l00 > 0, l00, 1.0), 0.0)
    l11 = np.sqrt(np.maximum(b - l10 * l10, 0.0))
    out = np.empty(a.size)
    for start in range(0, a.size, _PAIRS_PER_BLOCK):
        part = slice(start, start + _PAIRS_PER_BLOCK)
        largest = float(np.max(np.abs(np.concatenate([l00[part], l10[part], l11[part]]))))
        h = min(0.5, _STEP / max(largest, 1e-300))
        z = h * np.arange(-math.floor(9.0 / h), math.floor(9.0 / h) + 1.0)
        w = h * np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)
        u = l00[part, None] * z
        v = l10[part, None, None] * z[:, None] + l11[part, None, None] * z[None, :]
        out[part] = (_g(name, u) * (_g(name, v) @ w)) @ w
    return out.reshape(shape)


def _pair_kernel(name: str, a, b, c) -> np.ndarray:
    """``E[g(u) g(v)]`` for a centred Gaussian pair with variances ``a, b`` and covariance
    ``c``: Price's arcsine for erf, the arc-cosine kernel for ReLU, ``c`` for linear, else
    quadrature (:func:`_quadrature_pair`)."""
    if name == "linear":
        return c
    if name == "erf":
        return 2 / np.pi * np.arcsin(c / np.sqrt((1 + a) * (1 + b)))
    if name != "relu":
        return _quadrature_pair(name, a, b, c)
    ab = a * b
    safe = np.where(ab > 0, ab, 1.0)
    cos = np.clip(c / np.sqrt(safe), -1.0, 1.0)
    kernel = (np.sqrt(np.maximum(ab - c * c, 0.0)) + c * (np.pi - np.arccos(cos))) / (2 * np.pi)
    return np.where(ab > 0, kernel, 0.0)


def generalisation_error(activation: str, Q, R, T=None) -> np.ndarray:
    """``ε_g = ½ E[(φ − φ*)²]`` (noise excluded) from the overlaps, exactly.

    ``Q (..., K, K)`` and ``R (..., K, M)`` may carry leading batch axes; ``T`` defaults
    to the identity.  These closed forms measure the ground truth; they are not the
    derivation under test.

    Examples
    --------
    >>> K = 2  # the plateau of K = M = 2: (K/π)(π/6 − K asin(1/(2K))) = 0.0116108
    >>> Q, R = np.full((K, K), 1 / 3), np.full((K, K), 1 / 6**0.5)
    >>> round(float(generalisation_error("erf", Q, R)), 7)
    0.0116108
    >>> float(generalisation_error("linear", np.eye(1), np.eye(1)))
    0.0
    """
    choice(*ACTIVATIONS).check("activation", activation)
    Q, R = np.asarray(Q, float), np.asarray(R, float)
    T = np.eye(R.shape[-1]) if T is None else np.asarray(T, float)
    q, t = np.diagonal(Q, axis1=-2, axis2=-1), np.diag(T)
    student = _pair_kernel(activation, q[..., :, None], q[..., None, :], Q)
    teacher = _pair_kernel(activation, t[:, None], t[None, :], T)
    cross = _pair_kernel(activation, q[..., :, None], t, R)
    return 0.5 * (student.sum(axis=(-2, -1)) + teacher.sum() - 2 * cross.sum(axis=(-2, -1)))


# -- the start at given overlaps -------------------------------------------------------------

def _gram(Q, R, T) -> np.ndarray:
    """The Gram matrix of ``(B_1..B_M, w_1..w_K)``, per ``N``: ``[[T, Rᵀ], [R, Q]]``."""
    return np.block([[T, R.T], [R, Q]])


def _square_root(G: np.ndarray, name: str = "overlaps") -> np.ndarray:
    """``L`` with ``L Lᵀ = G``: Cholesky, or from the eigenvectors if ``G`` is singular.

    A singular ``G`` (identical students, say) has rounding-sized eigenvalues of either sign
    where it should have zeros; their roots (~1e-8) would be spurious directions, so they
    are set to zero."""
    values, vectors = np.linalg.eigh(G)
    tol = _PIVOT_TOL * max(1.0, values.max())
    if values.min() < -tol:
        raise ParameterError(f"{name}: the Gram matrix [[T, R^T], [R, Q]] has eigenvalue "
                             f"{values.min():.3g}; allowed: positive semidefinite")
    if values.min() > tol:
        return np.linalg.cholesky(G)
    return vectors * np.sqrt(np.where(values > tol, values, 0.0))


def initial_weights(Q, R, T, N: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Student ``W (K, N)`` and teacher ``B (M, N)`` with exactly the overlaps ``Q, R, T``.

    The square root ``L`` of the Gram matrix ``[[T, Rᵀ], [R, Q]]`` (Cholesky, or the
    symmetric root if it is singular) is applied to ``K + M`` orthonormal directions of
    ``R^N`` drawn from ``rng``: ``[B; W] = √N L Oᵀ``.

    Examples
    --------
    >>> Q, R = np.array([[0.5, 0.1], [0.1, 0.4]]), np.array([[0.2], [0.3]])
    >>> W, B = initial_weights(Q, R, None, 50, np.random.default_rng(0))
    >>> bool(np.allclose(W @ W.T / 50, Q, atol=1e-14)), bool(np.allclose(W @ B.T / 50, R))
    (True, True)
    """
    Q, R = np.atleast_2d(np.asarray(Q, float)), np.atleast_2d(np.asarray(R, float))
    K, M = R.shape
    T = np.eye(M) if T is None else np.asarray(T, float)
    if Q.shape != (K, K) or T.shape != (M, M):
        raise ParameterError(f"Q0 {Q.shape}, R0 {R.shape}, T {T.shape}; allowed: Q0 (K, K), "
                             f"R0 (K, M), T (M, M)")
    if not (isinstance(N, int | np.integer) and N >= K + M):
        raise ParameterError(f"N={N!r}; allowed: an integer >= K + M = {K + M}")
    L = _square_root(_gram(Q, R, T))
    directions, _ = np.linalg.qr(rng.standard_normal((N, K + M)))
    vectors = math.sqrt(N) * L @ directions.T
    return np.ascontiguousarray(vectors[M:]), np.ascontiguousarray(vectors[:M])


# -- the network: one step, NumPy ------------------------------------------------------------

def _steps_python(activation: str, W, B, X, zeta, eta: float) -> None:
    """Advance ``W (S, K, N)`` in place through the inputs ``X (S, n, N)``, noise ``zeta (S, n)``.
    """
    scale = 1 / math.sqrt(W.shape[-1])
    for step in range(X.shape[1]):
        x = X[:, step, :, None]
        lam, nu = (W @ x)[..., 0] * scale, (B @ x)[..., 0] * scale
        error = _g(activation, nu).sum(-1) + zeta[:, step] - _g(activation, lam).sum(-1)
        W += (eta * scale * _dg(activation, lam) * error[:, None])[..., None] * x[:, None, :, 0]


# -- the network: one step, numba ------------------------------------------------------------

@functools.cache
def _numba_kernels(name: str):
    """The numba kernels of activation ``name``, compiled on first use (numba is optional):
    ``g`` and ``g'`` from the registry's ``math`` source."""
    import numba

    namespace: dict = {"math": math}
    declared = registered_activation(name)
    exec(declared.scalar_source("g", 0), namespace)  # noqa: S102  (from the declaration)
    exec(declared.scalar_source("dg", 1), namespace)  # noqa: S102
    g = numba.njit(cache=False, nogil=True)(namespace["g"])
    dg = numba.njit(cache=False, nogil=True)(namespace["dg"])

    @numba.njit(cache=False, nogil=True)
    def network_steps(W, B, X, zeta, eta):
        S, K, N = W.shape
        M = B.shape[1]
        scale = 1.0 / math.sqrt(N)
        lam, coef = np.empty(K), np.empty(K)
        for s in range(S):
            for step in range(X.shape[1]):
                x = X[s, step]
                error = zeta[s, step]
                for n in range(M):
                    acc = 0.0
                    for j in range(N):
                        acc += B[s, n, j] * x[j]
                    error += g(acc * scale)
                for i in range(K):
                    acc = 0.0
                    for j in range(N):
                        acc += W[s, i, j] * x[j]
                    lam[i] = acc * scale
                    error -= g(lam[i])
                for i in range(K):
                    coef[i] = eta * scale * dg(lam[i]) * error
                    for j in range(N):
                        W[s, i, j] += coef[i] * x[j]

    @numba.njit(cache=False, nogil=True)
    def overlap_steps(G, K, Z, chi2, zeta, eta, N, tol):
        S, d, _ = G.shape
        M = d - K
        L, u, delta = np.zeros((d, d)), np.empty(d), np.empty(K)
        for s in range(S):
            for step in range(Z.shape[1]):
                _cholesky(G[s], L, tol)
                norm2 = chi2[s, step]
                for a in range(d):
                    norm2 += Z[s, step, a] * Z[s, step, a]
                    acc = 0.0
                    for b in range(a + 1):
                        acc += L[a, b] * Z[s, step, b]
                    u[a] = acc
                error = zeta[s, step]
                for n in range(M):
                    error += g(u[n])
                for i in range(K):
                    error -= g(u[M + i])
                for i in range(K):
                    delta[i] = dg(u[M + i]) * error
                _update_gram(G[s], u, delta, M, K, eta / N, eta * eta / N * norm2 / N)

    @numba.njit(cache=False, nogil=True)
    def _cholesky(G, L, tol):
        d = G.shape[0]
        for a in range(d):
            for b in range(a + 1):
                acc = G[a, b]
                for c in range(b):
                    acc -= L[a, c] * L[b, c]
                if a == b:
                    L[a, a] = math.sqrt(acc) if acc > tol * G[a, a] else 0.0
                else:
                    L[a, b] = acc / L[b, b] if L[b, b] > 0.0 else 0.0

    @numba.njit(cache=False, nogil=True)
    def _update_gram(G, u, delta, M, K, first, second):
        for i in range(K):
            for k in range(i, K):
                dq = (first * (delta[i] * u[M + k] + delta[k] * u[M + i])
                      + second * delta[i] * delta[k])
                G[M + i, M + k] += dq
                if k != i:
                    G[M + k, M + i] += dq
            for n in range(M):
                dr = first * delta[i] * u[n]
                G[M + i, n] += dr
                G[n, M + i] += dr

    return network_steps, overlap_steps


def native_available() -> bool:
    """Whether numba (the ``[fast]`` extra) is installed."""
    import importlib.util

    return importlib.util.find_spec("numba") is not None


def _resolve_backend(backend: str) -> str:
    choice(*BACKENDS).check("backend", backend)
    if backend == "fastest":
        return "numba" if native_available() else "python"
    if backend == "numba" and not native_available():
        raise ParameterError("backend='numba' needs numba, which is not installed "
                             "(pip install 'reduced-odes[fast]'); allowed without it: python, "
                             "fastest")
    return backend


def sgd_steps(activation: str, W: np.ndarray, B: np.ndarray, X: np.ndarray, zeta: np.ndarray,
              eta: float, *, backend: str = "fastest") -> None:
    """Advance the students ``W (S, K, N)`` in place by one SGD step per input.

    ``B (S, M, N)`` are the teachers, ``X (S, n, N)`` the inputs and ``zeta (S, n)`` the
    teacher's output noise of each step (already multiplied by ``σ``).

    Examples
    --------
    >>> W, B = np.zeros((1, 1, 4)), np.ones((1, 1, 4))
    >>> X, zeta = np.ones((1, 1, 4)), np.zeros((1, 1))
    >>> sgd_steps("linear", W, B, X, zeta, eta=0.5, backend="python")
    >>> W[0, 0].tolist()  # δ = φ* − φ = 2, step (η/√N) δ x = 0.5
    [0.5, 0.5, 0.5, 0.5]
    """
    choice(*ACTIVATIONS).check("activation", activation)
    if _resolve_backend(backend) == "numba":
        _numba_kernels(activation)[0](W, B, X, zeta, float(eta))
    else:
        _steps_python(activation, W, B, X, zeta, eta)


# -- the overlaps: one step, NumPy -----------------------------------------------------------

def _cholesky_python(G: np.ndarray) -> np.ndarray:
    """Batched lower Cholesky factor of ``G (S, d, d)`` in the numba kernel's order of
    operations; a vanishing pivot gives a zero column (a direction not spanned)."""
    S, d, _ = G.shape
    L = np.zeros_like(G)
    for a in range(d):
        for b in range(a + 1):
            acc = G[:, a, b].copy()
            for c in range(b):
                acc -= L[:, a, c] * L[:, b, c]
            if a == b:
                spanned = acc > _PIVOT_TOL * G[:, a, a]
                L[:, a, a] = np.where(spanned, np.sqrt(np.where(spanned, acc, 0.0)), 0.0)
            else:
                pivot = L[:, b, b]
                L[:, a, b] = np.where(pivot > 0, acc / np.where(pivot > 0, pivot, 1.0), 0.0)
    return L


def _overlap_steps_python(activation: str, G, K: int, Z, chi2, zeta, eta: float, N: int) -> None:
    M = G.shape[-1] - K
    for step in range(Z.shape[1]):
        L = _cholesky_python(G)
        z = Z[:, step]
        norm2 = chi2[:, step]
        for a in range(z.shape[1]):
            norm2 = norm2 + z[:, a] * z[:, a]
        u = np.zeros_like(z)
        for a in range(z.shape[1]):
            for b in range(a + 1):
                u[:, a] += L[:, a, b] * z[:, b]
        nu, lam = u[:, :M], u[:, M:]
        error = zeta[:, step] + _g(activation, nu).sum(-1) - _g(activation, lam).sum(-1)
        delta = _dg(activation, lam) * error[:, None]
        first, second = eta / N, eta * eta / N * norm2 / N
        dQ = first * (delta[:, :, None] * lam[:, None, :] + delta[:, None, :] * lam[:, :, None])
        G[:, M:, M:] += dQ + second[:, None, None] * delta[:, :, None] * delta[:, None, :]
        dR = first * delta[:, :, None] * nu[:, None, :]
        G[:, M:, :M] += dR
        G[:, :M, M:] += np.swapaxes(dR, 1, 2)


# -- training --------------------------------------------------------------------------------

@dataclass(frozen=True)
class SGDRun:
    """Independent SGD runs recorded at times ``t (n_times,)``.

    ``eps_g (seeds, n_times)`` is exact from the measured overlaps ``Q (seeds, n_times, K, K)``
    and ``R (seeds, n_times, K, M)``.  With ``test_set > 0``, ``eps_test`` and
    ``eps_test_se`` are a Monte Carlo estimate on fresh inputs and its standard error.
    """

    t: np.ndarray
    eps_g: np.ndarray
    Q: np.ndarray
    R: np.ndarray
    N: int
    eta: float
    noise: float
    activation: str
    method: str
    backend: str
    eps_test: np.ndarray | None = None
    eps_test_se: np.ndarray | None = None


def _rng(rng_seed: int, run: int, stream: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(rng_seed, spawn_key=(run, stream)))


def _record_steps(times, N: int, eta: float) -> np.ndarray:
    times = np.atleast_1d(np.asarray(times, float))
    if times.ndim != 1 or times.size == 0 or np.any(times < 0) or np.any(np.diff(times) < 0):
        raise ParameterError(f"times={times!r}; allowed: a non-empty non-decreasing list >= 0")
    return np.rint(times * N / eta).astype(np.int64)


def _check_train(activation, method, N, eta, noise, seeds, test_set) -> None:
    choice(*ACTIVATIONS).check("activation", activation)
    choice(*METHODS).check("method", method)
    if not (isinstance(eta, int | float) and 0 < eta < math.inf):
        raise ParameterError(f"eta={eta!r}; allowed: 0 < eta < inf (time is eta * steps / N)")
    if not (isinstance(noise, int | float) and 0 <= noise < math.inf):
        raise ParameterError(f"noise={noise!r}; allowed: 0 <= noise < inf")
    for name, value, low in (("N", N, 1), ("seeds", seeds, 1), ("test_set", test_set, 0)):
        if not (isinstance(value, int | np.integer) and value >= low):
            raise ParameterError(f"{name}={value!r}; allowed: an integer >= {low}")


def train(activation: str, Q0, R0, T=None, *, N: int, eta: float, noise: float = 0.0,
          times, seeds: int = 1, rng_seed: int = 0, method: str = "network",
          backend: str = "fastest", test_set: int = 0) -> SGDRun:
    """Online SGD from the overlaps ``(Q0, R0, T)``, recorded at ``times`` (``t = η steps/N``).

    Parameters
    ----------
    activation : str
        ``g`` of student and teacher, one of :data:`ACTIVATIONS` (``erf`` is ``erf(u/√2)``);
        ``ε_g`` is exact for every one (a closed form, or Gauss-Hermite quadrature).
    Q0, R0, T : array_like
        Start overlaps ``(K, K)``, ``(K, M)``; ``T (M, M)`` defaults to the identity.
    N : int
        Input dimension.
    eta, noise : float
        Learning rate ``η > 0`` and the teacher's output noise ``σ >= 0``.
    times : array_like
        Non-decreasing recording times; each is rounded to a whole step (the recorded ``t``
        is the exact ``η steps / N``).
    seeds : int
        Number of independent runs, advanced together.
    rng_seed : int
        Base seed: run ``s`` uses the streams ``SeedSequence(rng_seed, spawn_key=(s, ·))``.
    method : {"network", "overlaps"}
        Train the weights, or advance their Gram matrix (same law, ``N``-free cost).
    backend : {"fastest", "python", "numba"}
        ``fastest`` is numba when installed.
    test_set : int
        If positive, also estimate ``ε_g`` by Monte Carlo on this many fresh inputs per
        record and run (``network``: real inputs through the weights; ``overlaps``: fields
        drawn with the measured covariance).

    Examples
    --------
    >>> Q0, R0 = np.eye(2) * 0.2, np.full((2, 2), 0.01)
    >>> run = train("erf", Q0, R0, N=100, eta=0.5, times=[0.0, 1.0], seeds=3, rng_seed=1,
    ...             backend="python")
    >>> run.t.tolist(), run.eps_g.shape, run.Q.shape, bool(np.allclose(run.Q[:, 0], Q0))
    ([0.0, 1.0], (3, 2), (3, 2, 2, 2), True)
    """
    _check_train(activation, method, N, eta, noise, seeds, test_set)
    backend = _resolve_backend(backend)
    record = _record_steps(times, N, eta)
    Q0, R0 = np.atleast_2d(np.asarray(Q0, float)), np.atleast_2d(np.asarray(R0, float))
    T = np.eye(R0.shape[1]) if T is None else np.asarray(T, float)
    advance = _NetworkState if method == "network" else _OverlapState
    state = advance(activation, Q0, R0, T, N, eta, noise, seeds, rng_seed, backend)
    Q, R, eps_test = [], [], []
    done = 0
    for target in record:
        state.advance(int(target - done))
        done = int(target)
        q, r = state.overlaps()
        Q.append(q)
        R.append(r)
        if test_set:
            eps_test.append(state.test_error(test_set))
    Q, R = np.stack(Q, axis=1), np.stack(R, axis=1)
    mc = np.stack(eps_test, axis=1) if test_set else None
    return SGDRun(record * eta / N, generalisation_error(activation, Q, R, T), Q, R, N,
                  float(eta), float(noise), activation, method, backend,
                  None if mc is None else mc[..., 0], None if mc is None else mc[..., 1])


class _NetworkState:
    """The weights of a batch of runs, and their random streams."""

    def __init__(self, activation, Q0, R0, T, N, eta, noise, seeds, rng_seed, backend):
        self.activation, self.N, self.eta, self.noise = activation, N, eta, noise
        self.backend, self.T = backend, T
        starts = [initial_weights(Q0, R0, T, N, _rng(rng_seed, s, _WEIGHTS)) for s in range(seeds)]
        self.W = np.stack([w for w, _ in starts])
        self.B = np.stack([b for _, b in starts])
        self.inputs = [_rng(rng_seed, s, _INPUTS) for s in range(seeds)]
        self.noises = [_rng(rng_seed, s, _NOISE) for s in range(seeds)]
        self.tests = [_rng(rng_seed, s, _TEST) for s in range(seeds)]

    def advance(self, steps: int) -> None:
        block = max(1, _BLOCK_NUMBERS // (len(self.inputs) * self.N))
        while steps > 0:
            n = min(block, steps)
            X = np.stack([rng.standard_normal((n, self.N)) for rng in self.inputs])
            zeta = self.noise * np.stack([rng.standard_normal(n) for rng in self.noises])
            sgd_steps(self.activation, self.W, self.B, X, zeta, self.eta, backend=self.backend)
            steps -= n

    def overlaps(self) -> tuple[np.ndarray, np.ndarray]:
        N = self.N
        return self.W @ np.swapaxes(self.W, 1, 2) / N, self.W @ np.swapaxes(self.B, 1, 2) / N

    def test_error(self, size: int) -> np.ndarray:
        """``(seeds, 2)``: the test-set mean of ``½(φ − φ*)²`` and its standard error."""
        out = []
        for W, B, rng in zip(self.W, self.B, self.tests, strict=True):
            X = rng.standard_normal((size, self.N)) / math.sqrt(self.N)
            g = functools.partial(_g, self.activation)
            half_sq = 0.5 * (g(X @ W.T).sum(1) - g(X @ B.T).sum(1)) ** 2
            out.append((half_sq.mean(), half_sq.std(ddof=1) / math.sqrt(size)))
        return np.array(out)


class _OverlapState:
    """The Gram matrices ``[[T, Rᵀ], [R, Q]]`` of a batch of runs, and their random streams."""

    def __init__(self, activation, Q0, R0, T, N, eta, noise, seeds, rng_seed, backend):
        K, M = R0.shape
        if not (isinstance(N, int | np.integer) and N >= K + M):
            raise ParameterError(f"N={N!r}; allowed: an integer >= K + M = {K + M}")
        _square_root(_gram(Q0, R0, T))  # refuses overlaps no vectors can have
        self.activation, self.N, self.eta, self.noise = activation, N, eta, noise
        self.backend, self.K, self.M = backend, K, M
        self.G = np.repeat(_gram(Q0, R0, T)[None], seeds, axis=0)
        self.inputs = [_rng(rng_seed, s, _INPUTS) for s in range(seeds)]
        self.norms = [_rng(rng_seed, s, _NORMS) for s in range(seeds)]
        self.noises = [_rng(rng_seed, s, _NOISE) for s in range(seeds)]
        self.tests = [_rng(rng_seed, s, _TEST) for s in range(seeds)]

    def advance(self, steps: int) -> None:
        d, block = self.K + self.M, max(1, _BLOCK_NUMBERS // (len(self.inputs) * 8))
        while steps > 0:
            n = min(block, steps)
            Z = np.stack([rng.standard_normal((n, d)) for rng in self.inputs])
            chi2 = np.stack([rng.chisquare(self.N - d, n) if self.N > d else np.zeros(n)
                             for rng in self.norms])
            zeta = self.noise * np.stack([rng.standard_normal(n) for rng in self.noises])
            if self.backend == "numba":
                _numba_kernels(self.activation)[1](self.G, self.K, Z, chi2, zeta,
                                                   float(self.eta), self.N, _PIVOT_TOL)
            else:
                _overlap_steps_python(self.activation, self.G, self.K, Z, chi2, zeta,
                                      self.eta, self.N)
            steps -= n

    def overlaps(self) -> tuple[np.ndarray, np.ndarray]:
        M = self.M
        return self.G[:, M:, M:].copy(), self.G[:, M:, :M].copy()

    def test_error(self, size: int) -> np.ndarray:
        """``(seeds, 2)``: Monte Carlo of ``½(φ − φ*)²`` over fields drawn with the Gram matrix."""
        out, M = [], self.M
        for G, rng in zip(self.G, self.tests, strict=True):
            u = rng.standard_normal((size, self.K + M)) @ _square_root(G).T
            g = functools.partial(_g, self.activation)
            half_sq = 0.5 * (g(u[:, M:]).sum(1) - g(u[:, :M]).sum(1)) ** 2
            out.append((half_sq.mean(), half_sq.std(ddof=1) / math.sqrt(size)))
        return np.array(out)


# -- a trained second layer (Goldt et al. 2019) ----------------------------------------------

def readout_error(activation: str, Q, R, v, v_star: float) -> np.ndarray:
    """``ε_g = ½ E[(Σ_i v_i g(λ_i) − v* Σ_n g(ν_n))²]`` (``T = I``, noise excluded) from the
    overlaps ``Q (..., K, K)``, ``R (..., K, M)`` and read-out ``v (..., K)``, exactly.

    Examples
    --------
    >>> Q, R = np.eye(2), np.eye(2)
    >>> float(readout_error("erf", Q, R, np.ones(2), 1.0)), float(readout_error(
    ...     "linear", Q[:1, :1], R[:1, :1], np.array([0.5]), 1.0))
    (0.0, 0.125)
    """
    Q, R, v = (np.asarray(a, float) for a in (Q, R, v))
    M = R.shape[-1]
    dq, T = np.diagonal(Q, axis1=-2, axis2=-1), np.eye(M)
    qq = _pair_kernel(activation, dq[..., :, None], dq[..., None, :], Q)
    rr = _pair_kernel(activation, dq[..., :, None], np.ones(M), R)
    tt = _pair_kernel(activation, np.ones((M, 1)), np.ones(M), T)
    student = np.einsum("...i,...ik,...k->...", v, qq, v)
    cross = np.einsum("...i,...in->...", v, rr)
    return 0.5 * (student - 2 * v_star * cross + v_star**2 * float(tt.sum()))


@dataclass(frozen=True)
class SecondLayerRun:
    """Independent SGD runs with a trained read-out, recorded at ``t (n_times,)``: ``eps_g
    (seeds, n_times)`` exact from the overlaps and the read-out ``v (seeds, n_times, K)``."""

    t: np.ndarray
    eps_g: np.ndarray
    v: np.ndarray


def train_second_layer(activation: str, Q0, R0, v0, *, v_star: float, v_rate: float,
                       N: int, eta: float, noise: float = 0.0, times, seeds: int = 1,
                       rng_seed: int = 0) -> SecondLayerRun:
    """Online SGD of ``φ(x) = Σ_i v_i g(λ_i)`` against ``v* Σ_n g(ν_n) + ζ`` (the weights
    themselves, NumPy): ``w_i += (η/√N) v_i g'(λ_i)(φ* − φ) x``, ``v_i += (v_rate η/N)
    g(λ_i)(φ* − φ)``, from the overlaps ``(Q0, R0)`` and ``v_i = v0``; ``t = η steps/N``.

    Examples
    --------
    >>> run = train_second_layer("erf", [[0.3]], [[0.1]], 0.5, v_star=1.0, v_rate=0.5,
    ...                          N=50, eta=0.5, times=[0.0, 1.0], seeds=2)
    >>> run.eps_g.shape, run.v.shape, float(run.v[0, 0, 0])
    ((2, 2), (2, 2, 1), 0.5)
    """
    _check_train(activation, "network", N, eta, noise, seeds, 0)
    record = _record_steps(times, N, eta)
    Q0, R0 = np.atleast_2d(np.asarray(Q0, float)), np.atleast_2d(np.asarray(R0, float))
    starts = [initial_weights(Q0, R0, None, N, _rng(rng_seed, s, _WEIGHTS))
              for s in range(seeds)]
    W, B = np.stack([w for w, _ in starts]), np.stack([b for _, b in starts])
    v = np.full((seeds, Q0.shape[0]), float(v0))
    inputs, noises = _rng(rng_seed, 0, _INPUTS), _rng(rng_seed, 0, _NOISE)
    Qs, Rs, vs, done = [], [], [], 0
    for target in record:
        for _ in range(int(target) - done):
            x = inputs.standard_normal((seeds, N))
            lam = np.einsum("skn,sn->sk", W, x) / math.sqrt(N)
            nu = np.einsum("smn,sn->sm", B, x) / math.sqrt(N)
            error = (v_star * _g(activation, nu).sum(-1) - (v * _g(activation, lam)).sum(-1)
                     + noise * noises.standard_normal(seeds))
            W += (eta / math.sqrt(N)) * (v * _dg(activation, lam) * error[:, None])[
                :, :, None] * x[:, None, :]
            v += (v_rate * eta / N) * _g(activation, lam) * error[:, None]
        done = int(target)
        Qs.append(W @ np.swapaxes(W, 1, 2) / N)
        Rs.append(W @ np.swapaxes(B, 1, 2) / N)
        vs.append(v.copy())
    Q, R, v_t = np.stack(Qs, 1), np.stack(Rs, 1), np.stack(vs, 1)
    return SecondLayerRun(record * eta / N, readout_error(activation, Q, R, v_t, v_star), v_t)
