"""The terms a derivation is built of: finite-mixture expectations with ReLU, asserted
identities, drifts, coordinate changes, gradients under a metric or a mobility, and
conservation laws.

:mod:`reduced_odes._symbolic` puts them together in :func:`~reduced_odes._symbolic.gradient_flow`
(and re-exports them: the author API names them there).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import sympy as sp

from ._errors import DerivationError

__all__ = ["CoordinateChange", "Drift", "Identity", "assert_conserved", "assert_same",
           "log_coordinate", "metric_gradient", "mixture_expectation", "mobility_gradient",
           "relu"]


def relu(x: sp.Expr) -> sp.Expr:
    """``max(0, x)``, the form the finite-mixture engine simplifies under assumptions.

    Examples
    --------
    >>> a = sp.Symbol("a", positive=True)
    >>> relu(3 * a), relu(-a)
    (3*a, 0)
    """
    return sp.Max(0, x)


def mixture_expectation(expr: sp.Expr | Callable[..., sp.Expr],
                        components: Iterable[tuple[sp.Expr, Mapping]]) -> sp.Expr:
    """``E[expr] = sum_k p_k expr|_{config k}`` over a finite mixture of configurations.

    Parameters
    ----------
    expr : sympy.Expr or callable
        The integrand, in the configuration symbols; or a function that takes a
        configuration (a mapping) and returns the integrand for it.
    components : iterable of (probability, mapping)
        Each configuration with its probability; the probabilities must sum to 1.

    Examples
    --------
    >>> y = sp.Symbol("y")
    >>> half = sp.Rational(1, 2)
    >>> mixture_expectation(relu(y) ** 2, [(half, {y: 1}), (half, {y: -1})])
    1/2
    """
    total, mass = sp.Integer(0), sp.Integer(0)
    for probability, config in components:
        value = expr(config) if callable(expr) else sp.sympify(expr).xreplace(dict(config))
        total += probability * value
        mass += probability
    if sp.simplify(mass - 1) != 0:
        raise DerivationError("mixture expectation", f"probabilities sum to {mass}, not 1")
    return total


def assert_same(a: sp.Expr, b: sp.Expr, *, digits: int = 30, points: int = 4,
                domain: Mapping | Sequence[Mapping] | None = None, seed: int = 0,
                symbolic: bool = True, integers: Mapping | None = None) -> None:
    """Raise ``AssertionError`` unless ``a == b`` symbolically or at random points.

    Falls back to ``points`` random evaluations at ``digits`` significant digits
    when ``simplify`` cannot close the difference (or at once if ``symbolic``
    is false, for expressions too large to simplify quickly).  ``domain`` maps
    symbols to ``(lo, hi)`` sampling intervals (default ``(0.05, 0.45)``),
    ``integers`` maps integer symbols to their ``(lo, hi)`` (default 4..60).
    ``domain`` may instead be a sequence of points ``{symbol: value}``, for a
    domain that is no box (e.g. overlaps that form a covariance matrix): then
    every one of them is used, and ``points`` is ignored.

    Examples
    --------
    >>> x = sp.Symbol("x", positive=True)
    >>> assert_same(sp.exp(2 * sp.log(x)), x**2)
    """
    difference = sp.sympify(a - b)
    if symbolic and sp.simplify(difference) == 0:
        return
    rng = random.Random(seed)
    listed = isinstance(domain, Sequence)
    samples = list(domain) if listed else [{}] * points
    box, integers = ({} if listed else dict(domain or {})), dict(integers or {})
    scale_tol = sp.Float(10) ** (5 - digits)
    for fixed in samples:
        subs = {sym: sp.Float(value, digits + 10) for sym, value in fixed.items()}
        for sym in sorted(difference.free_symbols - set(subs), key=str):
            if sym in integers or sym.is_integer:
                subs[sym] = rng.randint(*integers.get(sym, (4, 60)))
            else:
                lo, hi = box.get(sym, (0.05, 0.45))
                subs[sym] = sp.Float(rng.uniform(lo, hi), digits + 10)
        # xreplace first: evalf(subs=...) re-evaluates every exp term symbolically (slow).
        value = difference.xreplace(subs).evalf(digits + 10)
        scale = 1 + abs(sp.sympify(a).xreplace(subs).evalf(digits + 10))
        if not abs(value) <= scale_tol * scale:
            raise AssertionError(f"{a} != {b}: difference {value} at {subs}")


@dataclass(frozen=True)
class Identity:
    """An identity the derivation asserted: ``lhs == rhs`` (e.g. a conserved quantity's rate is 0).

    Examples
    --------
    >>> u, s = sp.symbols("u s", positive=True)
    >>> fixed_point = Identity("the loss vanishes at u = s", ((s - u) ** 2).subs(u, s))
    >>> fixed_point.lhs == fixed_point.rhs
    True
    """

    name: str
    lhs: sp.Expr
    rhs: sp.Expr = sp.Integer(0)


@dataclass(frozen=True)
class Drift:
    """A term of the flow that is not a gradient of the loss, declared with its own derivation.

    The flow of a :class:`Derivation` is ``-M grad L + sum(drift.rate)``: online
    SGD's learning-rate and noise terms, weight decay, ...  Each term is kept by
    name, so that what the gradient part guarantees (the loss never rises) can
    be checked on the gradient part alone, and at the parameter values where
    every drift vanishes.

    Attributes
    ----------
    name : str
        What the term is (shown in derivation exports).
    rate : Matrix
        The term's contribution to ``d state/dt``, one entry per state variable.
    vanishes : mapping of Symbol to value
        Parameter values at which the term is identically zero (e.g. ``{eta: 0}``);
        asserted by :func:`gradient_flow`.

    Examples
    --------
    >>> x, eta = sp.symbols("x eta")
    >>> Drift("learning-rate term", sp.Matrix([eta * x**2]), {eta: 0}).rate
    Matrix([[eta*x**2]])

    In a flow under a mobility, with a drift that vanishes at ``eta = 0``:

    >>> from reduced_odes._symbolic import gradient_flow
    >>> kick = Drift("noise", sp.Matrix([eta]), {eta: 0})
    >>> gradient_flow((x,), x**2 / 2, parameters=(eta,), mobility=sp.Matrix([[2]]),
    ...               drift=[kick]).rhs
    Matrix([[eta - 2*x]])
    """

    name: str
    rate: sp.Matrix
    vanishes: Mapping = field(default_factory=dict)


@dataclass(frozen=True)
class CoordinateChange:
    """Integrate ``new = forward(old)`` instead of the state variable ``old``.

    ``inverse`` expresses ``old`` in ``new``; ``label`` names the coordinate's
    series in a trajectory; ``allowed`` the values of ``old`` it can represent.
    See :func:`log_coordinate`.

    Examples
    --------
    >>> from reduced_odes._symbolic import gradient_flow
    >>> w, z = sp.symbols("w z", positive=True)
    >>> square_root = CoordinateChange(w, z, sp.sqrt(w), z**2, "sqrt_w", "w > 0")
    >>> gradient_flow((w,), (1 - w) ** 2 / 2, parameters=(),
    ...               coordinates=[square_root]).coordinate_rhs
    Matrix([[(1 - z**2)/(2*z)]])
    """

    old: sp.Symbol
    new: sp.Symbol
    forward: sp.Expr
    inverse: sp.Expr
    label: str
    allowed: str = "any real value"


def log_coordinate(old: sp.Symbol, new: sp.Symbol | None = None,
                   label: str | None = None) -> CoordinateChange:
    """``new = ln old`` for a positive variable that starts tiny: no underflow, and
    exponential growth becomes linear.

    Examples
    --------
    >>> w = sp.Symbol("w", positive=True)
    >>> log_coordinate(w).inverse
    exp(log_w)
    """
    new = new if new is not None else sp.Symbol(f"log_{old.name}", real=True)
    return CoordinateChange(old, new, sp.log(old), sp.exp(new), label or f"log_{old.name}",
                            f"{old.name} > 0")


def metric_gradient(loss: sp.Expr, state: Sequence[sp.Symbol], metric: sp.Matrix) -> sp.Matrix:
    """``-G^{-1} grad L``: the gradient flow of ``loss`` in the metric ``G``.

    Examples
    --------
    >>> a, b = sp.symbols("a b", real=True)
    >>> metric_gradient((1 - a * b) ** 2 / 2, (a, b), sp.eye(2)).T
    Matrix([[b*(-a*b + 1), a*(-a*b + 1)]])
    """
    gradient = sp.Matrix([sp.diff(loss, v) for v in state])
    if metric.is_diagonal():
        return sp.Matrix([-gradient[i] / metric[i, i] for i in range(len(state))])
    return -metric.inv() * gradient


def mobility_gradient(loss: sp.Expr, state: Sequence[sp.Symbol], mobility: sp.Matrix) -> sp.Matrix:
    """``-M grad L``: the gradient flow of ``loss`` under the mobility ``M`` (no inversion).

    A flow in order parameters that are functions of weights trained by
    gradient flow is of this form, with ``M = J J^T`` the pull-back of the
    weights' metric (:func:`~reduced_odes.pullback_mobility`).

    Examples
    --------
    >>> a, b = sp.symbols("a b", real=True)
    >>> mobility_gradient((a - b) ** 2 / 2, (a, b), sp.Matrix([[2, 0], [0, 1]])).T
    Matrix([[-2*a + 2*b, a - b]])
    """
    gradient = sp.Matrix([sp.diff(loss, v) for v in state])
    return -sp.Matrix(mobility) * gradient


def assert_conserved(name: str, quantity: sp.Expr, state: Sequence[sp.Symbol],
                     rhs: sp.Matrix) -> Identity:
    """Assert ``d quantity/dt = 0`` along ``rhs``; the :class:`Identity` it proved.

    Examples
    --------
    >>> a, b = sp.symbols("a b", real=True)
    >>> flow = metric_gradient((1 - a * b) ** 2 / 2, (a, b), sp.eye(2))
    >>> assert_conserved("balance", a**2 - b**2, (a, b), flow).name
    'd/dt (balance) = 0'
    """
    rate = sum((sp.diff(quantity, v) * rhs[i] for i, v in enumerate(state)), sp.Integer(0))
    if sp.simplify(rate) != 0:
        raise DerivationError(f"conservation of {name}", f"d/dt({quantity}) = {sp.simplify(rate)}")
    return Identity(f"d/dt ({name}) = 0", sp.Derivative(quantity, sp.Symbol("t")), sp.Integer(0))
