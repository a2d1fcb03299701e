"""The activation registry: each activation declared once, by a SymPy expression.

Everything else is derived from the declaration: its derivatives (SymPy), its
NumPy forms (:attr:`Activation.numeric`, :attr:`Activation.numeric_derivative`,
:meth:`Activation.numeric_order`), the straight-line ``math`` source of any
derivative (:meth:`Activation.scalar_source`, which numba compiles), and whether
its Gaussian kernels can be computed to the stated accuracy by the numerical
rule of :mod:`reduced_odes._quadrature` (a smooth expression, and the distance
of its nearest complex singularity from the real axis, which sets the step).

Built in: ``erf`` (``erf(u/sqrt(2))``), ``relu``, ``linear``, ``tanh``,
``sigmoid`` (logistic), ``gelu`` (``u Phi(u)``), ``softplus``, ``silu``
(``u sigmoid(u)``) and the probabilists' Hermite polynomials ``he1`` ... ``he6``.
Users add their own with :func:`register_activation`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import sympy as sp

from ._errors import DerivationError

__all__ = ["ACTIVATIONS", "Activation", "activation", "register_activation"]

#: The variable every declaration is written in.
U = sp.Symbol("u", real=True)
#: Functions that make an activation non-smooth: its numerical kernels would converge slowly.
_KINKS = (sp.Max, sp.Min, sp.Heaviside, sp.Abs, sp.sign, sp.Piecewise, sp.DiracDelta)


@dataclass(frozen=True)
class Activation:
    """An activation ``g``: its SymPy declaration and the forms derived from it.

    Attributes
    ----------
    name : str
        The registry key (``--activation NAME``).
    expression : sympy.Expr
        ``g(u)`` in the symbol ``u`` (real).
    singularity : float or None
        Distance from the real axis of ``g``'s nearest complex singularity (``pi/2`` for
        ``tanh``; ``None`` for an entire function).  Sets the numerical kernels' step.
    overrides : tuple of callable
        NumPy forms of ``g`` and ``g'`` kept bit for bit from earlier releases (``erf``,
        ``relu``, ``linear``); empty for the forms derived by ``lambdify``.

    Examples
    --------
    >>> u = sp.Symbol("u")
    >>> g = activation("erf")
    >>> g.function(u), g.derivative(u)
    (erf(sqrt(2)*u/2), sqrt(2)*exp(-u**2/2)/sqrt(pi))
    >>> activation("relu").derivative(u)
    Heaviside(u)
    >>> float(g.numeric(np.array([1.0]))[0]) == float(sp.erf(1 / sp.sqrt(2)))
    True
    >>> round(float(activation("tanh").numeric_order(2)(np.array([0.5]))[0]), 12)
    -0.726861981384
    """

    name: str
    expression: sp.Expr
    singularity: float | None = None
    overrides: tuple[Callable, ...] = field(default=(), compare=False)

    def function(self, u: sp.Expr) -> sp.Expr:
        """``g(u)`` as a SymPy expression."""
        return self.expression.xreplace({U: u})

    def derivative(self, u: sp.Expr, order: int = 1) -> sp.Expr:
        """``g^(order)(u)``, derived by differentiating :attr:`expression`."""
        return self.symbolic_order(order).xreplace({U: u})

    def symbolic_order(self, order: int) -> sp.Expr:
        """``g^(order)(u)`` in the declaration's symbol ``u``."""
        return sp.diff(self.expression, U, order) if order else self.expression

    @property
    def smooth(self) -> bool:
        """Whether ``g`` has no kink (no ``Max``, ``Heaviside``, ``Abs``, ...)."""
        return not self.expression.has(*_KINKS)

    @property
    def numeric(self) -> Callable[[np.ndarray], np.ndarray]:
        """``g`` on NumPy arrays."""
        return self.overrides[0] if self.overrides else self.numeric_order(0)

    @property
    def numeric_derivative(self) -> Callable[[np.ndarray], np.ndarray]:
        """``g'`` on NumPy arrays."""
        return self.overrides[1] if self.overrides else self.numeric_order(1)

    def numeric_order(self, order: int) -> Callable[[np.ndarray], np.ndarray]:
        """``g^(order)`` on NumPy arrays, lambdified from the declaration."""
        return self._numeric_forms.setdefault(order, _lambdified(self.symbolic_order(order)))

    @cached_property
    def _numeric_forms(self) -> dict[int, Callable]:
        return {}

    def scalar_source(self, name: str, order: int = 0) -> str:
        """Source of ``def name(u): return g^(order)(u)`` in ``math`` only (numba compiles it).

        Examples
        --------
        >>> print(activation("tanh").scalar_source("dg", 1))
        def dg(u):
            return 1 - math.tanh(u)**2
        """
        from sympy.printing.pycode import PythonCodePrinter

        body = PythonCodePrinter({"standard": "python3"}).doprint(self.symbolic_order(order))
        return f"def {name}(u):\n    return {body}"


def _lambdified(expression: sp.Expr) -> Callable[[np.ndarray], np.ndarray]:
    """A NumPy function of ``u``; a constant broadcasts to ``u``'s shape."""
    function = sp.lambdify(U, expression, modules=["scipy", "numpy"])

    def evaluate(u):
        u = np.asarray(u, dtype=float)
        return np.broadcast_to(np.asarray(function(u), dtype=float), u.shape).copy()

    return evaluate


def _hermite(k: int) -> Activation:
    """The probabilists' Hermite polynomial ``He_k``: orthogonal under the standard Gaussian."""
    return Activation(f"he{k}", sp.expand(sp.hermite_prob(k, U)))


def _builtins() -> dict[str, Activation]:
    sigmoid = 1 / (1 + sp.exp(-U))
    declared = (
        Activation("erf", sp.erf(U / sp.sqrt(2)), None, (
            lambda u: _special().erf(u / np.sqrt(2)),
            lambda u: np.sqrt(2 / np.pi) * np.exp(-np.square(u) / 2))),
        Activation("relu", sp.Max(0, U), None, (
            lambda u: np.maximum(u, 0.0), lambda u: np.where(u > 0, 1.0, 0.0))),
        Activation("linear", U, None, (
            lambda u: np.asarray(u, dtype=float), lambda u: np.ones_like(u, dtype=float))),
        # Poles of tanh at i pi/2; of the logistic function, softplus and SiLU at i pi.
        Activation("tanh", sp.tanh(U), math.pi / 2),
        Activation("sigmoid", sigmoid, math.pi),
        Activation("gelu", U * (1 + sp.erf(U / sp.sqrt(2))) / 2),
        Activation("softplus", sp.log(1 + sp.exp(U)), math.pi),
        Activation("silu", U * sigmoid, math.pi),
        *(_hermite(k) for k in range(1, 7)),
    )
    return {a.name: a for a in declared}


def _special():
    from scipy import special

    return special


ACTIVATIONS: dict[str, Activation] = _builtins()


def register_activation(name: str, expression: sp.Expr, *, singularity: float | None = None,
                        variable: sp.Symbol | None = None) -> Activation:
    """Declare an activation ``g(u) = expression`` under ``name`` (usable everywhere by name).

    Parameters
    ----------
    name : str
        The new activation's name (not a registered one).
    expression : sympy.Expr
        ``g`` in ``variable`` (default the symbol ``u``).
    singularity : float, optional
        Distance from the real axis of ``g``'s nearest complex singularity (``None``: entire).
        Too large a value makes numerical kernels less accurate than stated.
    variable : sympy.Symbol, optional
        The variable ``expression`` is written in; default ``u``.

    Returns
    -------
    Activation

    Examples
    --------
    >>> x = sp.Symbol("x")
    >>> g = register_activation("cube_tanh", sp.tanh(x)**3, variable=x,
    ...                         singularity=math.pi / 2)
    >>> activation("cube_tanh").derivative(sp.Symbol("v"))
    (3 - 3*tanh(v)**2)*tanh(v)**2
    >>> del ACTIVATIONS["cube_tanh"]  # (a doctest leaves the registry as it found it)
    """
    if not name.isidentifier() or name in ACTIVATIONS:
        raise DerivationError("activation", f"name {name!r} is not a new identifier; taken: "
                                            f"{', '.join(sorted(ACTIVATIONS))}")
    expression = sp.sympify(expression)
    if variable is not None:
        expression = expression.xreplace({variable: U})
    if expression.free_symbols - {U}:
        raise DerivationError("activation", f"{name}: {expression} has symbols other than "
                                            f"the variable {variable or U}")
    if singularity is not None and not singularity > 0:
        raise DerivationError("activation", f"{name}: singularity={singularity!r}; allowed: "
                                            f"a positive distance, or None (entire)")
    ACTIVATIONS[name] = declared = Activation(name, expression, singularity)
    return declared


def activation(name: str) -> Activation:
    """The registered activation called ``name``.

    Examples
    --------
    >>> activation("linear").function(sp.Symbol("u"))
    u
    >>> activation("swish")
    Traceback (most recent call last):
    ...
    reduced_odes._errors.DerivationError: derivation step 'activation' failed: \
unknown activation 'swish'; allowed: erf, gelu, he1, he2, he3, he4, he5, he6, linear, \
relu, sigmoid, silu, softplus, tanh
    """
    if name not in ACTIVATIONS:
        allowed = ", ".join(sorted(ACTIVATIONS))
        raise DerivationError("activation", f"unknown activation {name!r}; allowed: {allowed}")
    return ACTIVATIONS[name]
