"""The model contract: what a reduced model supplies, and what the engine does with it.

The engine (derive, compile, integrate, measure, sweep, verify, export)
names no model.  A model is an instance of a :class:`Model` subclass; the
built-in ones live in :mod:`reduced_odes.models`, and users pass their own
with ``--model path/to/file.py:OBJECT`` or register them under the entry-point
group ``reduced_odes.models``.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from ._params import ParameterError, Parameters

if TYPE_CHECKING:  # the symbolic half is imported only when a model is derived
    from ._symbolic import Derivation

__all__ = ["Crossing", "DerivationError", "Model"]


class DerivationError(RuntimeError):
    """A model's declaration failed to derive; the message names the step that failed."""

    def __init__(self, step: str, detail: str):
        super().__init__(f"derivation step {step!r} failed: {detail}")
        self.step = step


@dataclass(frozen=True)
class SettledRule:
    """A stop rule as an expression, evaluated in Python and compiled by the native backend.

    ``Model.settled`` may return one instead of a function: the engine then
    evaluates the same expression on both backends, so the two cannot drift.

    Attributes
    ----------
    expression : str
        A Python expression (``abs``, ``min``, ``max``, ``math.*``, arithmetic,
        ``a if c else b``) in ``t``, the integration coordinates' names, the
        observables' names and the ``constants``' names.  It does not depend on
        the parameters other than through ``constants``: it is compiled once per
        model variant.
    constants : mapping of str to float
        Names and values of the rule's parameter-dependent numbers.

    Examples
    --------
    >>> rule = SettledRule("abs(u - target) - tol", {"target": 2.0, "tol": 1e-9})
    >>> f = rule.function(("u",), (), None, ())
    >>> f(0.0, [2.5])
    0.499999999
    """

    expression: str
    constants: Mapping[str, float] = field(default_factory=dict)

    def names(self) -> set[str]:
        """The names the expression reads."""
        import ast

        return {node.id for node in ast.walk(ast.parse(self.expression, mode="eval"))
                if isinstance(node, ast.Name)}

    def function(self, coordinates: Sequence[str], observable_names: Sequence[str],
                 observables: Callable | None, args: Sequence[float]
                 ) -> Callable[[float, Sequence[float]], float]:
        """The rule as ``f(t, y)`` in Python; ``inf`` where the observables are undefined."""
        import math

        reads = bool(self.names() & set(observable_names))
        names = ["t", *coordinates, *(observable_names if reads else ())]
        scope = {"abs": abs, "min": min, "max": max, "math": math, "__builtins__": {},
                 **{k: float(v) for k, v in self.constants.items()}}
        # One compiled lambda: the pure path calls the rule on every step.
        expression = eval(f"lambda {', '.join(names)}: {self.expression}", scope)  # noqa: S307
        def floats(y):  # plain floats: arithmetic on NumPy scalars costs several times more
            return y.tolist() if hasattr(y, "tolist") else y

        if not reads:
            return lambda t, y: expression(t, *floats(y))
        count = len(observable_names)  # the generated observables end with the margins

        def rule(t: float, y) -> float:
            try:
                values = observables(y, *args)
            except (ValueError, ArithmeticError):  # a trial state outside the domain
                return math.inf
            return expression(t, *floats(y), *values[:count])

        return rule


@dataclass(frozen=True)
class Crossing:
    """A phase time: the first ``t`` at which ``quantity`` crosses ``level``.

    Attributes
    ----------
    name : str
        Key in ``Trajectory.phases`` (``solve --json`` ``phases``).
    quantity : str
        A series of the trajectory: an integration coordinate, a state
        variable or an observable (see :attr:`Trajectory.series`).
    level : float
        The crossing level.
    direction : {+1, -1}
        ``+1``: first ``quantity >= level``; ``-1``: first ``quantity <= level``.
    monotone : bool
        The quantity is monotone along the flow (e.g. a loss block that is its
        own gradient flow): the crossing step is found by bisection.

    Examples
    --------
    >>> Crossing("T_half", "u", 0.5).direction
    1
    """

    name: str
    quantity: str
    level: float
    direction: int = 1
    monotone: bool = False

    def __post_init__(self):
        if self.direction not in (1, -1):
            raise ValueError(f"direction={self.direction!r}; allowed: 1, -1")


class Model(abc.ABC):
    """A reduced model of training dynamics, as the engine consumes it.

    What a model owes the engine, in the order the pipeline uses it:

    1. ``name`` (an identifier) and ``description`` (one line): class attributes.
    2. ``Params``: a frozen dataclass deriving from
       :class:`~reduced_odes.Parameters`, its fields declared with
       :func:`~reduced_odes.parameter` (default, allowed range, help).  They
       become the CLI options ``--<field>`` of every command.
    3. ``variants``: names of the model's variants (closures, losses, ...),
       the first being the default; ``variant_option`` is the CLI option that
       selects one (``"variant"`` unless the model says otherwise).
       :meth:`check` rejects parameter values that a variant does not allow.
    4. :meth:`derive`: the symbolic derivation of one variant, a
       :class:`~reduced_odes.Derivation` built with
       :func:`~reduced_odes.gradient_flow` from the model's own loss, so that
       the flow is the metric gradient of the loss, the conserved quantities
       and reductions are asserted, and the Jacobian is derived.  SymPy is
       imported inside it only, so integrating from a warm cache never imports it.
    5. :meth:`parameter_values`: the numbers for ``Derivation.parameters``.
    6. :meth:`initial_state`: the state at ``t = 0`` in the integration coordinates.
    7. :meth:`phases`: the phase times, as :class:`Crossing` definitions.
    8. :meth:`settled`: the stop rule; a function of the integration
       coordinates (and optionally of ``t`` first) that is ``<= 0`` once every
       block of the state is in its final regime, or a :class:`SettledRule`
       expression of the same, which the native backend compiles (a function
       makes it apply the rule in Python between native chunks).  The run then
       continues for ``tail`` times the settling time, so that late-time rates
       are resolved.
    9. :meth:`horizon`: the first time horizon; the engine extends it (x4, up
       to 1e18) until the state settles.

    Optional members: ``Thresholds`` (a :class:`~reduced_odes.Parameters`
    dataclass of phase definitions, passed to :meth:`phases`); ``integrate``
    (``integrate(params, variant, solver, thresholds, initial) -> Trajectory
    or None``: a protocol that is not one flow, e.g. layer-wise training in
    stages, each stage a :func:`~reduced_odes.solve`; None means the single
    flow); and the hooks of the commands beyond ``solve``: ``claims`` (with
    ``verify_settings`` and ``measure``) for ``verify``, ``export_derivations``
    for ``derive``, ``figures`` and ``compare``.  A command is offered only for
    a model that supplies its hook (:meth:`supports`).
    ``command_options(command, parser)`` may add model-specific options to a
    command; their values reach the command's hook as keyword arguments.  A
    ``compare`` that takes ``executor`` and ``workers`` gets the options
    ``--workers`` and ``--scheduler`` (a local pool or a dask cluster) and
    should run its parallel work there.

    Examples
    --------
    >>> from reduced_odes.models import get_model
    >>> model = get_model("deep_linear")
    >>> model.name, model.variants
    ('deep_linear', ('default',))
    """

    name: ClassVar[str]
    description: ClassVar[str]
    Params: ClassVar[type[Parameters]]
    variants: ClassVar[tuple[str, ...]] = ("default",)
    variant_option: ClassVar[str] = "variant"
    tail: ClassVar[float] = 1.0
    Thresholds: ClassVar[type[Parameters] | None] = None
    #: Phases that occur in this order at the default parameters (checked by the contract tests).
    phase_order: ClassVar[tuple[str, ...]] = ()
    #: Series that cannot be negative (losses): round-off below 0 is reported as 0.
    nonnegative: ClassVar[tuple[str, ...]] = ()
    #: Parameters that change the derivation itself (sizes such as a network's width):
    #: each distinct value derives and compiles a system of its own, and
    #: :meth:`derive` receives them as keyword arguments.
    structural: ClassVar[tuple[str, ...]] = ()

    # -- 3. variants ------------------------------------------------------------------
    def check(self, params: Parameters, variant: str) -> None:
        """Raise :class:`ParameterError` unless ``params`` suit ``variant``."""

    # -- 4. derivation ----------------------------------------------------------------
    @abc.abstractmethod
    def derive(self, variant: str, **structure: Any) -> Derivation:
        """The symbolic derivation of ``variant`` (see :class:`~reduced_odes.Derivation`).

        ``structure`` holds the values of the :attr:`structural` parameters, if any.
        """

    def structure(self, params: Parameters) -> dict[str, Any]:
        """The :attr:`structural` parameters' values in ``params``: what selects the system."""
        return {name: getattr(params, name) for name in self.structural}

    # -- 5..9. numbers ----------------------------------------------------------------
    @abc.abstractmethod
    def parameter_values(self, params: Parameters, variant: str) -> tuple[float, ...]:
        """Values of ``Derivation.parameters``, in order."""

    @abc.abstractmethod
    def initial_state(self, params: Parameters, variant: str) -> Sequence[float]:
        """The state at ``t = 0``, in the integration coordinates."""

    @abc.abstractmethod
    def phases(self, params: Parameters, variant: str, initial: Mapping[str, float],
               thresholds: Parameters | None) -> list[Crossing]:
        """The phase definitions; ``initial`` holds every series at ``t = 0``."""

    @abc.abstractmethod
    def settled(self, params: Parameters, variant: str) -> Callable[[Sequence[float]], float]:
        """Stop rule: ``f(y) <= 0`` once every block of the state has reached its final regime.

        ``f(t, y)`` (two arguments) is allowed too, for a regime defined with time, such as
        an algebraic tail ``t * L -> c``.
        """

    @abc.abstractmethod
    def horizon(self, params: Parameters, variant: str) -> float:
        """First integration horizon (extended by the engine until :meth:`settled`)."""

    # -- what the engine derives from the above -----------------------------------------
    def supports(self, hook: str) -> bool:
        """Whether the model supplies the optional ``hook`` (a command beyond ``solve``)."""
        return callable(getattr(self, hook, None))

    def resolve_variant(self, variant: str | None) -> str:
        """``variant`` checked against :attr:`variants` (``None``: the default)."""
        if variant is None:
            return self.variants[0]
        if variant not in self.variants:
            raise ParameterError(f"{self.variant_option}={variant!r}; allowed: "
                                 f"{', '.join(self.variants)}")
        return variant

    def make_params(self, values: Mapping[str, Any] | None = None) -> Parameters:
        """``Params(**values)``; unknown keys raise :class:`ParameterError`."""
        from ._params import check_keys

        values = dict(values or {})
        check_keys(f"parameter(s) of model {self.name!r}", values,
                   [f.name for f in self.Params.declared()])
        return self.Params(**values)

    def __repr__(self) -> str:
        return f"<model {self.name}: {self.description}>"
