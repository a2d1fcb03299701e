"""Numeric attention functions of a position-bias head: ``math`` only, no SymPy.

The scalar functions :func:`phi`, :func:`psi`, :func:`dlog_phi`, :func:`dlog_psi`,
:func:`d2log_phi`, :func:`d2log_psi` are documented in
:mod:`reduced_odes.models.induction_head.special` (which re-exports them beside the
SymPy classes that carry their derivative rules).  They live here so that generated
code, and so a warm start of the integrator, never imports SymPy.

The fused kernels :func:`phi_psi`, :func:`attention` and :func:`attention2`
return several of these functions at once.  The first two share every exponential
between the functions (:func:`attention2` is :func:`attention` and the scalar second
derivatives) and perform exactly the same floating-point operations as the scalar
functions, so their results are bitwise identical (checked in
``tests/models/induction_head/test_extremes.py``); the generated right-hand side calls
one fused kernel instead of four to six scalar functions.
"""

from __future__ import annotations

import math
from fractions import Fraction

__all__ = [
    "FUSED_KERNELS",
    "NUMERIC_IMPLEMENTATIONS",
    "attention",
    "attention2",
    "d2log_phi",
    "d2log_psi",
    "dlog_phi",
    "dlog_psi",
    "phi",
    "phi_psi",
    "psi",
]


def _bernoulli_even(count: int) -> list[Fraction]:
    """``B_2, B_4, ..., B_{2 count}`` exactly (Akiyama-Tanigawa), without SymPy."""
    size = 2 * count + 1
    a, numbers = [Fraction(0)] * size, []
    for m in range(size):
        a[m] = Fraction(1, m + 1)
        for j in range(m, 0, -1):
            a[j - 1] = j * (a[j - 1] - a[j])
        numbers.append(a[0])  # B_m with B_1 = +1/2; only even m are used
    return [numbers[2 * k] for k in range(1, count + 1)]

# --------------------------------------------------------------------------- #
# Shared structure: d ln F/dp = sum_j w_j D(s_j p, n_j) for F = phi, psi.
# Works for float and SymPy ``L``.
# --------------------------------------------------------------------------- #


def _phi_terms(L):
    # ln phi = -ln Z = ln(1 - e^{-p}) - ln(1 - e^{-(L-1)p}).
    return ((1, 1, L - 1),)


def _psi_terms(L):
    # ln psi = ln S2 - 2 ln Z; ln S2 is -(ln phi) at slope 2p and length L-1.
    return ((-2, 2, L - 2), (2, 1, L - 1))


# --------------------------------------------------------------------------- #
# Numeric kernels.
# --------------------------------------------------------------------------- #

# Series regime |y| = |n x| < _SERIES_RADIUS (the series converges for
# |y| < 2 pi).  At |y| = 2 the direct formulas lose only a factor 1.5 (D:
# n/2 - 0.16 n) resp. 3.6 (D': n^2/4 - 0.18 n^2) to cancellation; a smaller
# radius would cost more (factor 12.6 for D' at |y| = 1), a larger one more terms.
_SERIES_RADIUS = 2.0
# Terms of the Bernoulli series.  |B_2k/(2k)!| ~ 2/(2 pi)^{2k}, so the first
# omitted term relative to the leading one at |y| = 2 is 2.6e-21 for D and
# 12 (2K+1) |B_{2K+2}/(2K+2)!| 2^{2K} = 3.2e-19 for D' (K = 20): < 1e-16.
_N_TERMS = 20
# x/expm1(x) = sum_m B_m x^m/m! (B_1 = -1/2, odd B_m = 0 beyond), hence
#   1/expm1(x) - 1/x + 1/2 = x P(x^2),   P(u) = sum_{k>=1} c_k u^{k-1},
#   d/dx [x P(x^2)]        = Q(x^2),     Q(u) = sum_{k>=1} (2k-1) c_k u^{k-1},
# with c_k = B_{2k}/(2k)! (c_1 = 1/12, c_2 = -1/720, ...).  Stored highest
# power first for Horner's rule.
_C = [b / math.factorial(2 * k) for k, b in enumerate(_bernoulli_even(_N_TERMS), 1)]
_P = tuple(float(c) for c in reversed(_C))
_Q = tuple(float((2 * k - 1) * c) for k, c in reversed(list(enumerate(_C, 1))))
del _C
# Below this |p| the O(p L) corrections to the p = 0 limits are < 1e-290
# relative; above it every expm1 argument below is a normal double.
_TINY = 1e-300


def _horner(coeffs: tuple[float, ...], u: float) -> float:
    acc = 0.0
    for c in coeffs:
        acc = acc * u + c
    return acc


def _unrolled(coeffs: tuple[float, ...]):
    """``_horner(coeffs, u)`` as one straight-line expression (same operations, same bits
    for finite ``u``: the loop's first step ``0.0 * u + c`` is exactly ``c``)."""
    expr = repr(coeffs[0])
    for c in coeffs[1:]:
        expr = f"({expr}) * u + {c!r}"
    return eval(f"lambda u: {expr}")  # noqa: S307  (floats printed by repr round-trip)


_horner_p, _horner_q = _unrolled(_P), _unrolled(_Q)


def _inv_expm1(x: float) -> float:
    """``1/expm1(x) = e^{-x}/(-expm1(-x))`` for ``x > 0``, no overflow."""
    return math.exp(-x) / -math.expm1(-x)


def _inv_4sinh2(x: float) -> float:
    """``1/(4 sinh^2(x/2)) = e^{-|x|}/expm1(-|x|)^2`` for ``x != 0``, no overflow."""
    a = -abs(x)
    return math.exp(a) / math.expm1(a) ** 2


def _d_parts(x: float, n: float) -> tuple[float, float]:
    """``D(x, n)`` split as ``(constant, rest)`` with an O(n) constant and a
    remainder free of it: ``((n-1)/2, series)`` for ``|n x| < 2``, else
    ``(0, D(x))`` for ``x > 0`` and, by ``D(x) = n - 1 - D(-x)``, ``(n-1, -D(-x))``."""
    y = n * x
    if abs(y) < _SERIES_RADIUS:
        return 0.5 * (n - 1.0), x * _horner_p(x * x) - n * y * _horner_p(y * y)
    direct = _inv_expm1(abs(x)) - n * _inv_expm1(abs(y))
    return (0.0, direct) if x > 0 else (n - 1.0, -direct)


def _d_prime(x: float, n: float) -> float:
    """``dD/dx = n^2/(4 sinh^2(n x/2)) - 1/(4 sinh^2(x/2))``; ``(1 - n^2)/12`` at 0."""
    y = n * x
    if abs(y) < _SERIES_RADIUS:
        return _horner_q(x * x) - n * n * _horner_q(y * y)
    return n * n * _inv_4sinh2(y) - _inv_4sinh2(x)


def _dlog(p: float, terms) -> float:
    # The constants are O(L) but for psi they cancel to O(1) (exactly, for
    # integer L): add them up separately before the remainders.
    const = rest = 0.0
    for w, s, n in terms:
        c, r = _d_parts(s * p, n)
        const += w * c
        rest += w * r
    return const + rest


def _d2log(p: float, terms) -> float:
    return sum(w * s * _d_prime(s * p, n) for w, s, n in terms)


def _inv_geom(q: float, n: float) -> float:
    """``1/sum_{k<n} e^{-kq} = expm1(-q)/expm1(-nq)`` for ``q >= _TINY``."""
    return math.expm1(-q) / math.expm1(-n * q)


def phi(p: float, L: float) -> float:
    """Attention normaliser ``phi = 1/Z = (1 - e^{-p}) / (1 - e^{-(L-1)p})``.

    Parameters
    ----------
    p : float
        Slope of the position bias.
    L : float
        Sequence length (integer valued, ``L >= 4``).

    Returns
    -------
    float
        ``phi(p)``; ``1/(L-1)`` at ``p = 0``.  May underflow to 0 for very
        negative ``p (L-2)``, never overflows.

    Examples
    --------
    >>> phi(0.0, 10)
    0.1111111111111111
    >>> round(phi(0.3, 10), 12)
    0.277855179097
    >>> phi(-50.0, 1e7)  # e^{-5e8}: underflows quietly
    0.0
    """
    L = float(L)
    if abs(p) < _TINY:
        return 1.0 / (L - 1.0)
    value = _inv_geom(abs(p), L - 1.0)
    # Z(p) = e^{-(L-2)p} Z(-p) (reverse the sum), so phi(p) = e^{(L-2)p} phi(|p|).
    return value if p > 0 else math.exp((L - 2.0) * p) * value


def psi(p: float, L: float) -> float:
    """``psi = S2 / Z^2`` with ``S2 = (1 - e^{-2(L-2)p}) / (1 - e^{-2p})``.

    Parameters
    ----------
    p : float
        Slope of the position bias.
    L : float
        Sequence length (integer valued, ``L >= 4``).

    Returns
    -------
    float
        ``psi(p)``; ``(L-2)/(L-1)^2`` at ``p = 0``.

    Examples
    --------
    >>> psi(0.0, 10)
    0.09876543209876543
    >>> round(psi(0.3, 10), 12)
    0.169703257875
    >>> round(psi(1e4, 10), 12)
    1.0
    """
    L = float(L)
    if abs(p) < _TINY:
        return (L - 2.0) / (L - 1.0) ** 2
    q = abs(p)
    value = _inv_geom(q, L - 1.0) ** 2 / _inv_geom(2.0 * q, L - 2.0)
    # S2(p) = e^{-2(L-3)p} S2(-p) and Z as in phi: psi(p) = e^{2p} psi(|p|).
    return value if p > 0 else math.exp(2.0 * p) * value


def dlog_phi(p: float, L: float) -> float:
    """``d ln(phi)/dp = D(p, L-1) = 1/expm1(p) - (L-1)/expm1((L-1)p)``.

    Parameters
    ----------
    p : float
        Slope of the position bias.
    L : float
        Sequence length (integer valued, ``L >= 4``).

    Returns
    -------
    float
        The mean distance ``E[k]`` under weights ``e^{-kp}``; ``(L-2)/2`` at 0.

    Examples
    --------
    >>> dlog_phi(0.0, 10)
    4.0
    >>> round(dlog_phi(0.3, 10), 12)
    2.209868394996
    """
    return _dlog(p, _phi_terms(float(L)))


def dlog_psi(p: float, L: float) -> float:
    """``d ln(psi)/dp = -2 D(2p, L-2) + 2 D(p, L-1)``.

    Parameters
    ----------
    p : float
        Slope of the position bias.
    L : float
        Sequence length (integer valued, ``L >= 4``).

    Returns
    -------
    float
        The log-derivative of ``psi``; exactly 1 at ``p = 0`` for every ``L``.

    Examples
    --------
    >>> dlog_psi(0.0, 1e7)
    1.0
    >>> round(dlog_psi(0.3, 10), 12)
    2.119766964488
    """
    return _dlog(p, _psi_terms(float(L)))


def d2log_phi(p: float, L: float) -> float:
    """``d^2 ln(phi)/dp^2 = D'(p, L-1)``, minus the variance of the distance.

    Parameters
    ----------
    p : float
        Slope of the position bias.
    L : float
        Sequence length (integer valued, ``L >= 4``).

    Returns
    -------
    float
        ``(L-1)^2 / (4 sinh^2((L-1)p/2)) - 1 / (4 sinh^2(p/2))``;
        ``(1 - (L-1)^2)/12`` at ``p = 0``.

    Examples
    --------
    >>> round(d2log_phi(0.0, 10), 12)
    -6.666666666667
    >>> round(d2log_phi(0.3, 10), 12)
    -4.771845529306
    """
    return _d2log(p, _phi_terms(float(L)))


def d2log_psi(p: float, L: float) -> float:
    """``d^2 ln(psi)/dp^2 = -4 D'(2p, L-2) + 2 D'(p, L-1)``.

    Parameters
    ----------
    p : float
        Slope of the position bias.
    L : float
        Sequence length (integer valued, ``L >= 4``).

    Returns
    -------
    float
        The second log-derivative of ``psi``; even in ``p``.

    Examples
    --------
    >>> round(d2log_psi(0.0, 10), 12)
    7.666666666667
    >>> d2log_psi(-0.3, 10) == d2log_psi(0.3, 10)
    True
    """
    return _d2log(p, _psi_terms(float(L)))


# --------------------------------------------------------------------------- #
# Fused kernels: the same operations as the scalar functions above, with the
# exponentials of the values and first derivatives computed once.  Per term
# (x, n) = (p, L-1) and (2p, L-2) of D(x, n), with y = n x, the direct regime needs
# e^{-|x|}, expm1(-|x|), e^{-|y|}, expm1(-|y|); the two expm1 values are also those
# of phi and psi.
# --------------------------------------------------------------------------- #


def phi_psi(p: float, L: float) -> tuple[float, float]:
    """``(phi(p, L), psi(p, L))``, bitwise equal to the scalar functions."""
    L = float(L)
    n1, n2 = L - 1.0, L - 2.0
    q = abs(p)
    if q < _TINY:
        return 1.0 / n1, n2 / n1**2
    q2 = 2.0 * q
    g1 = math.expm1(-q) / math.expm1(-n1 * q)
    value = g1**2 / (math.expm1(-q2) / math.expm1(-n2 * q2))
    if p > 0:
        return g1, value
    return math.exp(n2 * p) * g1, math.exp(2.0 * p) * value


def attention(p: float, L: float, _exp=math.exp, _expm1=math.expm1) -> tuple[float, ...]:
    """``(phi, psi, dlog_phi, dlog_psi)`` at ``(p, L)``, bitwise equal to the scalar functions.

    The right-hand side's kernel, written out (both terms of ``_dlog``, the exponentials
    shared with ``phi`` and ``psi``) because it runs once per right-hand-side evaluation.

    Examples
    --------
    >>> attention(0.3, 10) == (phi(0.3, 10), psi(0.3, 10), dlog_phi(0.3, 10), dlog_psi(0.3, 10))
    True
    """
    L = float(L)
    n1, n2 = L - 1.0, L - 2.0
    q = abs(p)
    if q < _TINY:
        f_phi, f_psi = 1.0 / n1, n2 / n1**2
        m1 = big1 = m2 = big2 = 0.0  # unused: |p| < _TINY is always the series regime
    else:
        q2 = 2.0 * q
        m1, big1 = _expm1(-q), _expm1(-n1 * q)
        m2, big2 = _expm1(-q2), _expm1(-n2 * q2)
        g1 = m1 / big1
        f_phi, f_psi = g1, g1**2 / (m2 / big2)
        if not p > 0:
            f_phi, f_psi = _exp(n2 * p) * g1, _exp(2.0 * p) * f_psi
    y1 = n1 * p
    if abs(y1) < _SERIES_RADIUS:
        c1 = 0.5 * (n1 - 1.0)
        r1 = p * _horner_p(p * p) - n1 * y1 * _horner_p(y1 * y1)
    else:
        direct = _exp(-q) / -m1 - n1 * (_exp(-abs(y1)) / -big1)
        c1, r1 = (0.0, direct) if p > 0 else (n1 - 1.0, -direct)
    x2 = 2 * p
    y2 = n2 * x2
    if abs(y2) < _SERIES_RADIUS:
        c2 = 0.5 * (n2 - 1.0)
        r2 = x2 * _horner_p(x2 * x2) - n2 * y2 * _horner_p(y2 * y2)
    else:
        direct = _exp(-abs(x2)) / -m2 - n2 * (_exp(-abs(y2)) / -big2)
        c2, r2 = (0.0, direct) if x2 > 0 else (n2 - 1.0, -direct)
    return (f_phi, f_psi, (0.0 + 1 * c1) + (0.0 + 1 * r1),
            (0.0 + -2 * c2 + 2 * c1) + (0.0 + -2 * r2 + 2 * r1))


def attention2(p: float, L: float) -> tuple[float, float, float, float, float, float]:
    """:func:`attention` followed by ``d2log_phi, d2log_psi``, bitwise equal to the scalars.

    The Jacobian's kernel: the second derivatives are the scalar ones (``_d2log``'s sums
    written out); they share no exponential with :func:`attention`, and the Jacobian is
    evaluated far less often than the right-hand side.

    Examples
    --------
    >>> attention2(0.3, 10)[4:] == (d2log_phi(0.3, 10), d2log_psi(0.3, 10))
    True
    """
    f_phi, f_psi, d_phi, d_psi = attention(p, L)
    L = float(L)
    d_prime1 = _d_prime(p, L - 1.0)
    return (f_phi, f_psi, d_phi, d_psi, 0 + 1 * d_prime1,
            0 + -4 * _d_prime(2 * p, L - 2.0) + 2 * d_prime1)


#: Class name -> numeric implementation, for code generation and ``lambdify``.
NUMERIC_IMPLEMENTATIONS = {
    "Phi": phi,
    "Psi": psi,
    "DLogPhi": dlog_phi,
    "DLogPsi": dlog_psi,
    "D2LogPhi": d2log_phi,
    "D2LogPsi": d2log_psi,
}

#: Fused kernels, cheapest first: name -> the class names of the values it returns, in order.
FUSED_KERNELS = {
    "phi_psi": ("Phi", "Psi"),
    "attention": ("Phi", "Psi", "DLogPhi", "DLogPsi"),
    "attention2": ("Phi", "Psi", "DLogPhi", "DLogPsi", "D2LogPhi", "D2LogPsi"),
}
