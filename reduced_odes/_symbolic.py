"""The generic symbolic layer: gradient flows under a metric, coordinate changes,
asserted identities, finite-mixture expectations, and the :class:`Derivation`
that a model hands to the compiler.

Nothing here knows a model.  A model builds its loss (with
:mod:`reduced_odes._gaussian`, :mod:`reduced_odes._positions` or
:func:`mixture_expectation`), then calls :func:`gradient_flow`, which derives
the flow ``-G^{-1} grad L``, asserts every identity it is given, changes to
the integration coordinates and derives the Jacobian.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import sympy as sp

from ._errors import DerivationError

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


#: Symbols declared as order parameters (functions of trained weights, see
#: :func:`declare_order_parameters`): their gradient flow needs the pull-back mobility.
_ORDER_PARAMETERS: set[sp.Symbol] = set()


def declare_order_parameters(symbols: Iterable[sp.Symbol]) -> tuple[sp.Symbol, ...]:
    """Mark ``symbols`` as order parameters of weights trained by gradient flow.

    :func:`gradient_flow` then refuses to use its default identity metric for a
    state that holds any of them: the flow in order parameters is ``-M grad L``
    with the pull-back mobility ``M`` (:func:`~reduced_odes.pullback_mobility`),
    and the identity would give a flow that no network realises.

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
    _ORDER_PARAMETERS.update(symbols)
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
        ordered = sorted(map(str, _ORDER_PARAMETERS.intersection(state)))
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
                  rhs: sp.Matrix | None = None,
                  coordinates: Sequence[CoordinateChange] = (),
                  observables: Mapping[str, sp.Expr] | None = None,
                  domain: Sequence = (), identities: Sequence[Identity] = (),
                  kernels: str | None = None, check: Mapping | Sequence | None = None,
                  blocks: Sequence[Block] = ()) -> Derivation:
    """Derive the gradient flow of ``loss`` (plus declared drifts) and all the compiler needs.

    The flow is ``-G^{-1} grad loss`` under a metric ``G``, or ``-M grad loss``
    under a mobility ``M`` (nothing inverted), plus the rate of every declared
    :class:`Drift`.

    Parameters
    ----------
    state : sequence of Symbol
        The reduced state.
    loss : Expr
        The reduced loss in ``state`` and ``parameters``.
    parameters : sequence of Symbol
        Runtime parameters, in the order of ``Model.parameter_values``.
    metric : Matrix, optional
        ``G`` (default the identity, refused for declared order parameters);
        the gradient part is ``-G^{-1} grad loss``.
    mobility : Matrix, optional
        ``M`` instead of a metric: the gradient part is ``-M grad loss``.
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
    >>> d.rhs.T
    Matrix([[b*(-a*b + s), a*(-a*b + s)]])
    >>> d.jacobian.shape
    (2, 2)

    Under a mobility, with a drift that vanishes at ``eta = 0``:

    >>> x, eta = sp.symbols("x eta", real=True)
    >>> kick = Drift("noise", sp.Matrix([eta]), {eta: 0})
    >>> gradient_flow((x,), x**2 / 2, parameters=(eta,), mobility=sp.Matrix([[2]]),
    ...               drift=[kick]).rhs
    Matrix([[eta - 2*x]])
    """
    state, parameters = tuple(state), tuple(parameters)
    metric, mobility, gradient_rhs = _gradient_part(state, loss, metric, mobility)
    drifts = _checked_drifts(drift, state, check)
    expected = gradient_rhs + sum((sp.Matrix(d.rate) for d in drifts), sp.zeros(len(state), 1))
    if rhs is None:
        rhs = expected.applyfunc(sp.factor_terms)
    else:
        rhs = sp.Matrix(rhs)
        what = "the metric gradient" if not (drifts or mobility is not None) else (
            "the gradient part plus the drifts")
        for i, variable in enumerate(state):
            try:
                assert_same(rhs[i], expected[i], domain=check, symbolic=False)
            except AssertionError as exc:
                raise DerivationError(f"flow of {variable} is {what}", str(exc)) from None
    domain = _conditions(domain)
    coords, names, to_state, coordinate_rhs, ranges = _changed(state, rhs, coordinates)
    jacobian = coordinate_rhs.jacobian(coords)
    return Derivation(state, parameters, loss, metric, rhs, tuple(coords), tuple(names),
                      tuple(to_state), coordinate_rhs, jacobian, dict(observables or {}),
                      tuple(domain), tuple(identities), kernels, tuple(ranges),
                      _independent(blocks, names, jacobian), mobility, drifts)


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
