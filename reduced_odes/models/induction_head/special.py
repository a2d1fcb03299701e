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

import sympy as sp
from sympy.core.evalf import prec_to_dps
from sympy.core.function import ArgumentIndexError

# The numeric kernels live in the SymPy-free module ``_kernels`` (generated code,
# and so a warm start, import only that one); re-exported here.
from .kernels import (
    NUMERIC_IMPLEMENTATIONS,
    _phi_terms,
    _psi_terms,
    d2log_phi,
    d2log_psi,
    dlog_phi,
    dlog_psi,
    phi,
    psi,
)

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
