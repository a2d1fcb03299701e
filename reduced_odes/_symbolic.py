"""The generic symbolic layer: gradient flows under a metric, coordinate changes,
asserted identities, finite-mixture expectations, and the :class:`Derivation`
that a model hands to the compiler.

Nothing here knows a model.  A model builds its loss (with
:mod:`reduced_odes._gaussian`, :mod:`reduced_odes._positions` or
:func:`mixture_expectation`), then calls :func:`gradient_flow`, which derives
the flow ``-G^{-1} grad L``, asserts every identity it is given, changes to
the integration coordinates and derives the Jacobian.  The terms it is built of
(expectations, identities, drifts, coordinate changes, gradients) are in
:mod:`reduced_odes._terms`, re-exported here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import sympy as sp

from ._derivation_scope import mark, marked
from ._errors import DerivationError
from ._terms import (
    CoordinateChange,
    Drift,
    Identity,
    assert_conserved,
    assert_same,
    log_coordinate,
    metric_gradient,
    mixture_expectation,
    mobility_gradient,
    relu,
)

__all__ = [
    "Block",
    "CoordinateChange",
    "Derivation",
    "Drift",
    "Identity",
    "assert_conserved",
    "assert_same",
    "declare_order_parameters",
    "gradient_flow",
    "log_coordinate",
    "metric_gradient",
    "mixture_expectation",
    "mobility_gradient",
    "relu",
]


@dataclass(frozen=True)
class Block:
    """Integration coordinates whose flow involves none of the other coordinates.

    Declared to :func:`gradient_flow`, which asserts the independence from the
    Jacobian.  The native backend integrates each block on its own, with its own
    steps; ``log_time = t0`` integrates it in ``s = ln(1 + t / t0)``, where an
    algebraic tail (``~ 1/t``), which costs steps in every decade of ``t``, is smooth.

    Examples
    --------
    >>> Block(("w_v1", "p"), log_time=10.0).coordinates
    ('w_v1', 'p')
    """

    coordinates: tuple[str, ...]
    log_time: float | None = None


@dataclass(frozen=True)
class Derivation:
    """Everything the compiler needs from one model variant, derived symbolically.

    Attributes
    ----------
    state : tuple of Symbol
        The reduced state, in order.
    parameters : tuple of Symbol
        Runtime numeric parameters (``Model.parameter_values`` gives their values).
    loss : Expr
        The reduced loss in ``state``.
    metric : Matrix or None
        The gradient part of the flow is ``-metric^{-1} grad loss`` (None: a mobility is given).
    rhs : Matrix
        The flow: its gradient part plus every drift.
    coordinates : tuple of Symbol
        The integration coordinates (``state`` with the coordinate changes applied).
    coordinate_names : tuple of str
        Series names of the coordinates.
    to_state : tuple of Expr
        ``state`` in the coordinates.
    coordinate_rhs, jacobian : Matrix
        Flow and its Jacobian in the coordinates.
    observables : dict
        Named expressions in ``state`` (partial losses, eigenvalues, ...).
    domain : tuple of Relational
        Conditions ``lhs > rhs`` in ``state`` and ``parameters`` under which the
        loss is defined; trajectories must stay inside.  :func:`gradient_flow` takes
        ``<``, ``<=``, ``>`` and ``>=`` and stores each as ``>`` (the domain is open).
    identities : tuple of Identity
        What the derivation asserted (conservation laws, reductions, closed forms).
    kernels : str or None
        Module with ``NUMERIC_IMPLEMENTATIONS`` and ``FUSED_KERNELS`` for the
        special functions the expressions use.
    coordinate_ranges : tuple of str
        For each state variable, the values its coordinate can represent.
    blocks : tuple of Block
        Independent groups of coordinates (asserted), or empty: one system.
    mobility : Matrix or None
        The gradient part is ``-mobility grad loss`` instead (no metric inverted).
    drifts : tuple of Drift
        The terms of the flow that are no gradient (see :class:`Drift`).

    Examples
    --------
    Made by :func:`gradient_flow` (or a model's ``derive``), not by hand:

    >>> a, b, s = sp.symbols("a b s", positive=True)
    >>> d = gradient_flow((a, b), (s - a * b) ** 2 / 2, parameters=(s,),
    ...                   coordinates=[log_coordinate(a)])
    >>> d.state_names, d.coordinate_names
    (('a', 'b'), ('log_a', 'b'))
    >>> d.in_coordinates(a * b)
    b*exp(log_a)
    """

    state: tuple[sp.Symbol, ...]
    parameters: tuple[sp.Symbol, ...]
    loss: sp.Expr
    metric: sp.Matrix
    rhs: sp.Matrix
    coordinates: tuple[sp.Symbol, ...]
    coordinate_names: tuple[str, ...]
    to_state: tuple[sp.Expr, ...]
    coordinate_rhs: sp.Matrix
    jacobian: sp.Matrix
    observables: dict[str, sp.Expr] = field(default_factory=dict)
    domain: tuple = ()
    identities: tuple[Identity, ...] = ()
    kernels: str | None = None
    coordinate_ranges: tuple[str, ...] = ()
    blocks: tuple[Block, ...] = ()
    mobility: sp.Matrix | None = None
    drifts: tuple[Drift, ...] = ()

    @property
    def state_names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.state)

    def gradient_rhs(self) -> sp.Matrix:
        """The gradient part of the flow: ``-mobility grad loss`` or ``-metric^{-1} grad loss``."""
        if self.mobility is not None:
            return mobility_gradient(self.loss, self.state, self.mobility)
        return metric_gradient(self.loss, self.state, self.metric)

    def in_coordinates(self, expr: sp.Expr) -> sp.Expr:
        """``expr`` (in ``state``) written in the integration coordinates."""
        return sp.sympify(expr).xreplace(dict(zip(self.state, self.to_state, strict=True)))


def _changed(state: Sequence[sp.Symbol], rhs: sp.Matrix,
             changes: Sequence[CoordinateChange]) -> tuple[list, list, list, sp.Matrix, list]:
    """Coordinates, their names, the state in them, the flow in them, and their ranges."""
    by_old = {c.old: c for c in changes}
    unknown = set(by_old) - set(state)
    if unknown:
        raise DerivationError("coordinate change",
                              f"{sorted(map(str, unknown))} are not state variables")
    coordinates, names, to_state, rates, ranges = [], [], [], [], []
    for i, variable in enumerate(state):
        change = by_old.get(variable)
        if change is None:
            coordinates.append(variable)
            names.append(variable.name)
            to_state.append(variable)
            rates.append(rhs[i])
            ranges.append("any real value")
            continue
        if sp.simplify(change.forward.subs(change.old, change.inverse) - change.new) != 0:
            raise DerivationError("coordinate change",
                                  f"{change.inverse} does not invert {change.forward}")
        # d new/dt = forward'(old) d old/dt, simplified in the old variables (where the
        # factor cancels, e.g. w * (1/w)), then written in the new coordinate.
        rates.append(sp.diff(change.forward, change.old) * rhs[i])
        coordinates.append(change.new)
        names.append(change.label)
        to_state.append(change.inverse)
        ranges.append(change.allowed)
    back = dict(zip(state, to_state, strict=True))
    rates = [sp.sympify(r).xreplace(back) for r in rates]
    return coordinates, names, to_state, sp.Matrix(rates), ranges


def _conditions(domain: Sequence) -> tuple:
    """The domain's conditions as open conditions ``lhs > rhs`` (:func:`_as_greater`), less
    those that hold identically; one that fails, or is no inequality, is an error."""
    kept = []
    for condition in domain:
        if condition is sp.true or condition == sp.true:
            continue  # e.g. v > 0 for a positive symbol: nothing to guard
        if condition is sp.false or condition == sp.false:
            raise DerivationError("domain", "a domain condition is identically false")
        kept.append(_as_greater(condition))
    return tuple(kept)


def _as_greater(condition) -> sp.Basic:
    """``condition`` as the open condition ``a > b`` the compiler guards (margin ``a - b``).

    ``a < b`` is ``b > a``; a non-strict ``a >= b`` (or ``b <= a``) is ``a > b``: a domain
    is open, its boundary outside (where a loss's logarithm or root is singular).  Any other
    expression (``Eq``, ``Ne``, ``And``, ``Or``, a symbol) is a :class:`DerivationError`.

    Examples
    --------
    >>> m = sp.Symbol("m")
    >>> [str(_as_greater(c)) for c in (m > 1, m < 1, m >= 1, m <= 1, 1 < m)]
    ['m > 1', '1 > m', 'm > 1', '1 > m', 'm > 1']
    """
    if isinstance(condition, sp.StrictGreaterThan):
        return condition  # the built-in models' form: kept as it is (the same compiled code)
    if isinstance(condition, sp.GreaterThan):
        return sp.StrictGreaterThan(condition.lhs, condition.rhs, evaluate=False)
    if isinstance(condition, sp.StrictLessThan | sp.LessThan):
        return sp.StrictGreaterThan(condition.rhs, condition.lhs, evaluate=False)
    raise DerivationError("domain", f"{condition} ({type(condition).__name__}) is not an "
                                    f"inequality; allowed: a > b, a >= b, a < b or a <= b "
                                    f"(several conditions as a list, all of which hold)")


def declare_order_parameters(symbols: Iterable[sp.Symbol]) -> tuple[sp.Symbol, ...]:
    """Mark ``symbols`` as order parameters of weights trained by gradient flow.

    :func:`gradient_flow` then refuses to use its default identity metric for a
    state that holds any of them: the flow in order parameters is ``-M grad L``
    with the pull-back mobility ``M`` (:func:`~reduced_odes.pullback_mobility`),
    and the identity would give a flow that no network realises.

    The mark holds for the derivation that makes it: every model's ``derive`` runs in
    a scope of its own (:mod:`reduced_odes._derivation_scope`), so another model that
    names its own ``m`` is not affected.

    Examples
    --------
    >>> q = declare_order_parameters(sp.symbols("q_doc", real=True))
    >>> try:
    ...     gradient_flow(q, (1 - q[0]) ** 2, parameters=())
    ... except DerivationError as exc:
    ...     print(exc.step)
    metric
    """
    symbols = tuple(symbols) if isinstance(symbols, Iterable) else (symbols,)
    mark(symbols)
    return symbols


def _gradient_part(state: tuple, loss: sp.Expr, metric, mobility) -> tuple:
    """``(metric, mobility, -M grad L)``: the gradient part of a flow, checked."""
    n = len(state)
    if metric is not None and mobility is not None:
        raise DerivationError("metric", "give a metric or a mobility, not both")
    if mobility is not None:
        mobility = sp.Matrix(mobility)
        if mobility.shape != (n, n) or mobility != mobility.T:
            raise DerivationError("mobility", f"a symmetric {n}x{n} matrix is needed, got "
                                              f"shape {mobility.shape}")
        return None, mobility, mobility_gradient(loss, state, mobility)
    if metric is None:
        ordered = sorted(map(str, marked().intersection(state)))
        if ordered:
            raise DerivationError("metric", f"{', '.join(ordered)} are order parameters: the "
                                            f"identity metric is not their gradient flow; pass "
                                            f"mobility=pullback_mobility(...) (or a metric)")
        metric = sp.eye(n)
    metric = sp.Matrix(metric)
    if metric.shape != (n, n):
        raise DerivationError("metric", f"shape {metric.shape} does not match {n} states")
    return metric, None, metric_gradient(loss, state, metric)


def _checked_drifts(drifts: Sequence[Drift], state: tuple, check) -> tuple[Drift, ...]:
    """``drifts``, each of the state's length and asserted to vanish where it says it does."""
    for term in drifts:
        rate = sp.Matrix(term.rate)
        if rate.shape != (len(state), 1):
            raise DerivationError(f"drift {term.name!r}", f"rate of shape {rate.shape}; one "
                                                          f"entry per state variable needed")
        for i, variable in enumerate(state):
            try:
                assert_same(rate[i].xreplace(dict(term.vanishes)), 0, domain=check,
                            symbolic=False)
            except AssertionError as exc:
                raise DerivationError(f"drift {term.name!r} vanishes at {term.vanishes}",
                                      f"{variable}: {exc}") from None
    return tuple(drifts)


def gradient_flow(state: Sequence[sp.Symbol], loss: sp.Expr, *,
                  parameters: Sequence[sp.Symbol], metric: sp.Matrix | None = None,
                  mobility: sp.Matrix | None = None, drift: Sequence[Drift] = (),
                  rhs: sp.Matrix | None = None, coordinates: Sequence[CoordinateChange] = (),
                  observables: Mapping[str, sp.Expr] | None = None, domain: Sequence = (),
                  identities: Sequence[Identity] = (), kernels: str | None = None,
                  check: Mapping | Sequence | None = None,
                  blocks: Sequence[Block] = ()) -> Derivation:
    """Derive the gradient flow of ``loss`` (plus declared drifts) and all the compiler needs.

    The flow is ``-G^{-1} grad loss`` under a metric ``G``, or ``-M grad loss``
    under a mobility ``M`` (nothing inverted), plus the rate of every declared
    :class:`Drift` (an example is in its docstring).

    Parameters
    ----------
    state : sequence of Symbol
        The reduced state.
    loss : Expr
        The reduced loss in ``state`` and ``parameters``.
    parameters : sequence of Symbol
        Runtime parameters, in the order of ``Model.parameter_values``.
    metric, mobility : Matrix, optional
        ``G`` (default the identity, refused for declared order parameters), or a
        mobility ``M`` instead: the gradient part is ``-G^{-1} grad loss`` or ``-M grad loss``.
    drift : sequence of Drift, optional
        Terms of the flow that are no gradient (online SGD's learning-rate term, ...).
    rhs : Matrix, optional
        The flow as the model derived it another way (e.g. by reducing an
        unreduced flow); it is asserted equal to the gradient part plus the
        drifts, and kept.
    coordinates : sequence of CoordinateChange
        Integration coordinates for some state variables (see :func:`log_coordinate`).
    observables, domain, identities, kernels
        See :class:`Derivation`.
    check : mapping or sequence of mappings, optional
        Sampling ranges ``{symbol: (lo, hi)}`` for the numerical identity checks, or
        the points ``{symbol: value}`` to check at (see :func:`assert_same`).
    blocks : sequence of Block, optional
        Independent groups of coordinates, each listed once; asserted from the Jacobian
        (a coupling is a :class:`DerivationError`).

    Examples
    --------
    >>> a, b, s = sp.symbols("a b s", positive=True)
    >>> d = gradient_flow((a, b), (s - a * b) ** 2 / 2, parameters=(s,))
    >>> d.rhs.T, d.jacobian.shape
    (Matrix([[b*(-a*b + s), a*(-a*b + s)]]), (2, 2))
    """
    state, parameters = tuple(state), tuple(parameters)
    metric, mobility, gradient_rhs = _gradient_part(state, loss, metric, mobility)
    drifts = _checked_drifts(drift, state, check)
    rhs = _asserted_rhs(state, rhs, gradient_rhs, drifts, mobility is not None, check)
    coords, names, to_state, coordinate_rhs, ranges = _changed(state, rhs, coordinates)
    jacobian = coordinate_rhs.jacobian(coords)
    return Derivation(state, parameters, loss, metric, rhs, tuple(coords), tuple(names),
                      tuple(to_state), coordinate_rhs, jacobian, dict(observables or {}),
                      _conditions(domain), tuple(identities), kernels, tuple(ranges),
                      _independent(blocks, names, jacobian), mobility, drifts)


def _asserted_rhs(state: tuple, rhs, gradient_rhs: sp.Matrix, drifts: tuple,
                  by_mobility: bool, check) -> sp.Matrix:
    """The flow: the gradient part plus the drifts, or the model's own ``rhs`` asserted
    equal to it."""
    expected = gradient_rhs + sum((sp.Matrix(d.rate) for d in drifts), sp.zeros(len(state), 1))
    if rhs is None:
        return expected.applyfunc(sp.factor_terms)
    rhs = sp.Matrix(rhs)
    what = "the metric gradient" if not (drifts or by_mobility) else (
        "the gradient part plus the drifts")
    for i, variable in enumerate(state):
        try:
            assert_same(rhs[i], expected[i], domain=check, symbolic=False)
        except AssertionError as exc:
            raise DerivationError(f"flow of {variable} is {what}", str(exc)) from None
    return rhs


def _independent(blocks: Sequence[Block], names: Sequence[str],
                 jacobian: sp.Matrix) -> tuple[Block, ...]:
    """``blocks``, asserted to list each coordinate once and to be uncoupled: every entry
    of the Jacobian between two blocks is identically zero.

    Examples
    --------
    >>> x, y = sp.symbols("x y")
    >>> try:
    ...     _independent([Block(("x",)), Block(("y",))], ["x", "y"], sp.Matrix([[x, 0], [y, 1]]))
    ... except DerivationError as exc:
    ...     print(str(exc).split(": ", 1)[1])
    the flow of y depends on x (d/dx = y), so ('y',) is not independent of the others
    """
    listed = [name for block in blocks for name in block.coordinates]
    if blocks and sorted(listed) != sorted(names):
        raise DerivationError("blocks", f"{listed} must list each coordinate of {list(names)} "
                                        f"once")
    index = {name: i for i, name in enumerate(names)}
    for block in blocks:
        t0 = block.log_time
        if t0 is not None and not (isinstance(t0, int | float) and 0 < t0 < float("inf")):
            raise DerivationError("blocks", f"log_time={t0!r} of {block.coordinates} must be "
                                            f"a positive finite number")
        inside = {index[name] for name in block.coordinates}
        for i in sorted(inside):
            for j in sorted(set(range(len(names))) - inside):
                if jacobian[i, j] != 0 and sp.simplify(jacobian[i, j]) != 0:
                    raise DerivationError(
                        "blocks", f"the flow of {names[i]} depends on {names[j]} (d/d{names[j]} "
                                  f"= {jacobian[i, j]}), so {block.coordinates} is not "
                                  f"independent of the others")
    return tuple(blocks)
