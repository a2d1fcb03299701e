"""Attention functions of a position-bias attention head, numeric and symbolic.

With slope ``p`` the head puts weight ``e^{-k p}`` on the key ``k`` positions
back, ``k = 0 .. L-2``.  The 4-gram dynamics need

    Z(p)   = sum_{k=0}^{L-2} e^{-k p}  = (1 - e^{-(L-1)p}) / (1 - e^{-p}),
    S2(p)  = sum_{k=0}^{L-3} e^{-2kp}  = (1 - e^{-2(L-2)p}) / (1 - e^{-2p}),
    phi    = 1 / Z,        psi = S2 / Z^2,

and the first two derivatives of ``ln phi`` and ``ln psi`` in ``p``.  With

    D(x, n) = 1/expm1(x) - n/expm1(n x)        (= d/dx ln[(1 - e^{-x})/(1 - e^{-nx})])

one has ``d ln phi/dp = D(p, L-1)`` and ``d ln psi/dp = -2 D(2p, L-2) + 2 D(p, L-1)``:
every derivative is a weighted sum ``sum_j w_j D(s_j p, n_j)`` over the
"terms" ``(w_j, s_j, n_j)`` returned by :func:`_phi_terms` / :func:`_psi_terms`,
and the second derivative is ``sum_j w_j s_j D'(s_j p, n_j)``.

The numeric functions are cheap scalar ``math`` code whose cost does not depend
on ``L``; they are accurate to a few ulp for ``L`` up to ``1e7`` and ``p`` in
``[-50, 1e4]`` (see ``tests/test_special.py``).  The SymPy classes :class:`Phi`,
:class:`Psi`, :class:`DLogPhi`, :class:`DLogPsi`, :class:`D2LogPhi`,
:class:`D2LogPsi` carry the derivative rules, ``rewrite(sympy.exp)`` back to
elementary closed forms, and :data:`NUMERIC_IMPLEMENTATIONS` maps their names
to the numeric functions (usable directly as a ``lambdify`` module).
"""

from __future__ import annotations

import math

import sympy as sp
from sympy.core.evalf import prec_to_dps
from sympy.core.function import ArgumentIndexError

__all__ = [
    "D2LogPhi",
    "D2LogPsi",
    "DLogPhi",
    "DLogPsi",
    "NUMERIC_IMPLEMENTATIONS",
    "Phi",
    "Psi",
    "d2log_phi",
    "d2log_psi",
    "dlog_phi",
    "dlog_psi",
    "phi",
    "psi",
]

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
_C = [sp.bernoulli(2 * k) / sp.factorial(2 * k) for k in range(1, _N_TERMS + 1)]
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
        return 0.5 * (n - 1.0), x * _horner(_P, x * x) - n * y * _horner(_P, y * y)
    direct = _inv_expm1(abs(x)) - n * _inv_expm1(abs(y))
    return (0.0, direct) if x > 0 else (n - 1.0, -direct)


def _d_prime(x: float, n: float) -> float:
    """``dD/dx = n^2/(4 sinh^2(n x/2)) - 1/(4 sinh^2(x/2))``; ``(1 - n^2)/12`` at 0."""
    y = n * x
    if abs(y) < _SERIES_RADIUS:
        return _horner(_Q, x * x) - n * n * _horner(_Q, y * y)
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
# SymPy functions.
# --------------------------------------------------------------------------- #


def _d_sym(x, n):
    return 1 / (sp.exp(x) - 1) - n / (sp.exp(n * x) - 1)


def _d_prime_sym(x, n):
    return n**2 * sp.exp(n * x) / (sp.exp(n * x) - 1) ** 2 - sp.exp(x) / (sp.exp(x) - 1) ** 2


class _AttentionFunction(sp.Function):
    """Base: ``F(p, L)`` with a closed form in ``exp`` and a value at ``p = 0``.

    Subclasses define ``_closed_form(p, L)``, ``_at_zero(L)`` (the removable
    ``p -> 0`` limit) and ``_p_derivative(p, L)``.
    """

    nargs = 2

    @classmethod
    def eval(cls, p, L):
        if p.is_zero:
            return cls._at_zero(L)
        return None

    def fdiff(self, argindex=1):
        if argindex != 1:
            raise ArgumentIndexError(self, argindex)
        return self._p_derivative(*self.args)

    def _eval_rewrite_as_exp(self, p, L, **kwargs):
        return self._closed_form(p, L)

    def _eval_evalf(self, prec):
        p, L = self.args
        if not (p.is_number and L.is_number):
            return self.func(*(a._evalf(prec) for a in self.args))
        dps = prec_to_dps(prec)
        # Evaluate on dummies: a Float argument inside exp() would be rounded to
        # its own precision at construction.  Adaptive evalf handles 1 - e^{-p}.
        x, n = sp.Dummy("x"), sp.Dummy("n")
        form = self._at_zero(n) if p.evalf(dps) == 0 else self._closed_form(x, n)
        return form.evalf(dps, subs={x: p, n: L})


class _DLog(_AttentionFunction):
    """``sum_j w_j D(s_j p, n_j)`` over ``_terms(L)``."""

    @classmethod
    def _closed_form(cls, p, L):
        return sp.Add(*(w * _d_sym(s * p, n) for w, s, n in cls._terms(L)))

    @classmethod
    def _at_zero(cls, L):
        return sp.Add(*(w * (n - 1) / 2 for w, s, n in cls._terms(L)))


class _D2Log(_AttentionFunction):
    """``sum_j w_j s_j D'(s_j p, n_j)`` over ``_terms(L)``."""

    @classmethod
    def _closed_form(cls, p, L):
        return sp.Add(*(w * s * _d_prime_sym(s * p, n) for w, s, n in cls._terms(L)))

    @classmethod
    def _at_zero(cls, L):
        return sp.Add(*(w * s * (1 - n**2) / 12 for w, s, n in cls._terms(L)))

    @classmethod
    def _p_derivative(cls, p, L):
        # Third derivatives are not needed: differentiate the elementary form.
        x = sp.Dummy("x")
        return sp.diff(cls._closed_form(x, L), x).xreplace({x: p})


class DLogPhi(_DLog):
    """``d ln(Phi)/dp``; see :func:`dlog_phi`."""

    _terms = staticmethod(_phi_terms)

    @staticmethod
    def _p_derivative(p, L):
        return D2LogPhi(p, L)


class DLogPsi(_DLog):
    """``d ln(Psi)/dp``; see :func:`dlog_psi`."""

    _terms = staticmethod(_psi_terms)

    @staticmethod
    def _p_derivative(p, L):
        return D2LogPsi(p, L)


class D2LogPhi(_D2Log):
    """``d^2 ln(Phi)/dp^2``; see :func:`d2log_phi`."""

    _terms = staticmethod(_phi_terms)


class D2LogPsi(_D2Log):
    """``d^2 ln(Psi)/dp^2``; see :func:`d2log_psi`."""

    _terms = staticmethod(_psi_terms)


class Phi(_AttentionFunction):
    """``1/Z(p) = (1 - e^{-p}) / (1 - e^{-(L-1)p})``; see :func:`phi`."""

    @staticmethod
    def _closed_form(p, L):
        return (1 - sp.exp(-p)) / (1 - sp.exp(-(L - 1) * p))

    @staticmethod
    def _at_zero(L):
        return 1 / (L - 1)

    @staticmethod
    def _p_derivative(p, L):
        return Phi(p, L) * DLogPhi(p, L)


class Psi(_AttentionFunction):
    """``S2(p)/Z(p)^2``; see :func:`psi`."""

    @staticmethod
    def _closed_form(p, L):
        s2 = (1 - sp.exp(-2 * (L - 2) * p)) / (1 - sp.exp(-2 * p))
        return s2 * Phi._closed_form(p, L) ** 2

    @staticmethod
    def _at_zero(L):
        return (L - 2) / (L - 1) ** 2

    @staticmethod
    def _p_derivative(p, L):
        return Psi(p, L) * DLogPsi(p, L)


#: Class name -> numeric implementation, for code generation and ``lambdify``.
NUMERIC_IMPLEMENTATIONS = {
    "Phi": phi,
    "Psi": psi,
    "DLogPhi": dlog_phi,
    "DLogPsi": dlog_psi,
    "D2LogPhi": d2log_phi,
    "D2LogPsi": d2log_psi,
}
