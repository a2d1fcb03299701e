"""The model contract: what a reduced model supplies, and what the engine does with it.

The engine (derive, compile, integrate, measure, sweep, verify, export)
names no model.  A model is an instance of a :class:`Model` subclass; the
built-in ones live in :mod:`reduced_odes.models`, and users pass their own
with ``--model path/to/file.py:OBJECT`` or register them under the entry-point
group ``reduced_odes.models``.  Every hook the engine reads is declared on
:class:`Model`, with its signature and its default; authors import all of it
from :mod:`reduced_odes.author`.
"""

from __future__ import annotations

import abc
import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from ._claims import Claim, CommittedFigures
from ._derivation_scope import scoped
from ._errors import DerivationError  # re-exported: a model's own error, with its contract
from ._params import ParameterError, Parameters, check_keys
from ._stop_rules import Crossing, SettledRule

if TYPE_CHECKING:  # lower layers and the standard library only: no cycle, even for typing
    import argparse
    from pathlib import Path

    from ._params import SolverConfig

__all__ = ["FORWARDABLE", "OPTIONAL_HOOKS", "DerivationError", "Model"]

#: The optional hooks: methods with a default here, which a model overrides or names in
#: :attr:`Model.hooks` (see :meth:`Model.supports`).
OPTIONAL_HOOKS = ("check", "check_start", "integrate", "verify_settings", "measure", "claims",
                  "verify_metadata", "export_derivations", "figures", "compare", "format_compare",
                  "command_options")
#: The methods a model may implement through :attr:`Model.hooks`: the optional hooks and
#: :meth:`Model.derive`.
FORWARDABLE = ("derive", *OPTIONAL_HOOKS)
#: The hooks a declaration of claims as data (:attr:`Model.claimed_predictions`) supplies.
_DECLARABLE = ("verify_settings", "measure", "claims")


class _PackageFunction:
    """A hook implemented by a function of the model's package, imported on first use.

    Read on an instance it is that function (the hook's arguments, without ``self``),
    so ``inspect.signature(model.compare)`` shows the implementation's options.
    """

    def __init__(self, hook: str, where: str, package: str | None, owner: str):
        module, _, function = where.partition(":")
        if module.startswith(".") and not package:
            raise TypeError(f"{owner}.hooks[{hook!r}] = {where!r} is relative, but {owner} is "
                            f"not defined in a package; give the module's full name")
        self.hook, self.where, self.package = hook, where, package
        self.module, self.function = module, function or hook

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        # Looked up on every read (a dictionary lookup once imported), so that a patched
        # module attribute is the one called, as with a method that imports it.
        return getattr(importlib.import_module(self.module, self.package), self.function)

    def __repr__(self) -> str:
        return f"<hook {self.hook}: {self.where}>"


class Model(abc.ABC):
    """A reduced model of training dynamics, as the engine consumes it.

    A model author imports everything from :mod:`reduced_odes.author`.  What a
    model owes the engine, in the order the pipeline uses it; 1-9 are required,
    10-17 are optional and have defaults here.

    1. ``name`` (an identifier) and ``description`` (one line): class attributes.
    2. ``Params``: a frozen dataclass deriving from
       :class:`~reduced_odes.Parameters`, its fields declared with
       :func:`~reduced_odes.parameter` (default, allowed range, help).  They
       become the CLI options ``--<field>`` of every command::

           @dataclass(frozen=True)
           class Params(Parameters):
               s: float = parameter(1.0, positive(), "target singular value")

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
    10. ``Thresholds`` (a :class:`~reduced_odes.Parameters` dataclass of phase
        definitions, passed to :meth:`phases`), ``tail``, ``phase_order`` and
        ``nonnegative``: class attributes, documented below.
    11. :meth:`check`: reject parameter values that a variant does not allow::

            def check(self, params, variant):
                if variant == "square" and not params.A1 < 1:
                    raise ParameterError(f"A1={params.A1!r} is outside (0, 1)")

        and :meth:`check_start`: reject a start (``solve(..., initial=...)``) inside the
        domain that the model's state cannot take, e.g. overlaps no network realises::

            def check_start(self, params, variant, start):
                if start["q"] < start["r"] ** 2:
                    raise ParameterError(f"initial q={start['q']!r} < r^2: no network")

    12. :meth:`integrate`: a protocol that is not one flow, e.g. layer-wise
        training in stages, each stage a :func:`~reduced_odes.solve`; None
        means the single flow::

            def integrate(self, params, variant, solver, thresholds, initial):
                return run_in_stages(params, variant, solver) if params.staged else None

    13. ``verify``: :meth:`verify_settings` (the grid), :meth:`measure` (one
        setting, run in a worker process) and :meth:`claims` (the verdict rows)
        together, with ``grids`` and :meth:`verify_metadata`::

            def verify_settings(self, grid, variants):
                return [{"variant": v, "s": s} for v in variants for s in (1, 2)], []
            def measure(self, setting):
                return {"T": solve(Params(s=setting["s"]), setting["variant"]).phases["T"]}
            def claims(self, records, variants):  # each row: predicted, measured, error, where
                rows = [(2.0, r["result"]["T"], abs(r["result"]["T"] / 2 - 1), str(r["setting"]))
                        for r in records]
                return [worst("T against its closed form", rows, 0.01)]

    14. ``derive``: :meth:`export_derivations` writes the derivation documents::

            def export_derivations(self, directory):
                return write_documents(directory, {"my_model.md": render_markdown()})

    15. ``figures``: :meth:`figures` draws from data files (computing missing ones), and
        ``committed_figures`` says how the tests check the committed ones
        (:class:`CommittedFigures`)::

            def figures(self, out, data, formats):
                return draw_from_data(FIGURES, out, data, formats, "my_model", write_data)

    16. ``compare``: :meth:`compare` (ground truth against the reduced flow)
        and :meth:`format_compare` (its table)::

            def compare(self, *, quick, out, executor=None, workers=None):
                result = run_sgd(quick, executor or process_pool(workers, 8))
                write_json(Path(out) / "compare-my_model.json", result)
                return result

    17. :meth:`command_options`: model-specific options of a command, whose
        values reach the command's hook as keyword arguments::

            def command_options(self, command, parser):
                if command == "compare":
                    parser.add_argument("--seeds", type=int, default=None)

    A command beyond ``solve`` and ``sweep`` is offered only for a model that
    supplies its hook (:meth:`supports`).

    A hook is a method, or a function of the model's package named in
    :attr:`hooks`, which the engine imports on the hook's first call (so a
    warm ``solve`` imports none of them): ``{"claims": ".claims"}`` calls
    ``claims(records, variants)`` of the package's module ``claims``, and
    ``{"derive": ".derivation:derivation"}`` its function ``derivation(variant)``.

    Examples
    --------
    >>> from reduced_odes.models import get_model
    >>> model = get_model("deep_linear")
    >>> model.name, model.variants
    ('deep_linear', ('default',))
    >>> model.supports("compare"), get_model("two_mixture").supports("compare")
    (False, True)
    """

    name: ClassVar[str]
    description: ClassVar[str]
    Params: ClassVar[type[Parameters]]
    variants: ClassVar[tuple[str, ...]] = ("default",)
    #: The variants ``verify`` checks when none is named (None: all of :attr:`variants`).
    verified_variants: ClassVar[tuple[str, ...] | None] = None
    variant_option: ClassVar[str] = "variant"
    #: Run on for this many times the settling time (late-time rates are resolved there).
    tail: ClassVar[float] = 1.0
    #: Phase definitions (a :class:`~reduced_odes.Parameters` dataclass) passed to
    #: :meth:`phases`, or None.
    Thresholds: ClassVar[type[Parameters] | None] = None
    #: Phases that occur in this order at the default parameters (checked by the contract tests).
    phase_order: ClassVar[tuple[str, ...]] = ()
    #: Series that cannot be negative (losses): round-off below 0 is reported as 0.
    nonnegative: ClassVar[tuple[str, ...]] = ()
    #: Parameters that change the derivation itself (sizes such as a network's width):
    #: each distinct value derives and compiles a system of its own, and
    #: :meth:`derive` receives them as keyword arguments.
    structural: ClassVar[tuple[str, ...]] = ()
    #: The verification grids :meth:`verify_settings` accepts, the first being ``verify``'s
    #: default (``"default"`` is the one ``reproduce`` runs).
    grids: ClassVar[tuple[str, ...]] = ("quick", "default", "full")
    #: Hooks implemented by functions of the model's package: hook -> ``"module"`` (its
    #: function of the hook's name) or ``"module:function"``, the module relative to the
    #: package of the model's class (a leading dot) or absolute.  Imported on first call.
    hooks: ClassVar[Mapping[str, str]] = {}
    #: How the test suite checks the committed figures and their data files (the data
    #: files it computes afresh, their digits; see :class:`CommittedFigures`).
    committed_figures: ClassVar[CommittedFigures] = CommittedFigures()
    #: Claims declared as data (a :class:`~reduced_odes.PredictionClaims`): the predicted
    #: escape times and convergence rate of its settings, held against the measured ones;
    #: it supplies :meth:`verify_settings`, :meth:`measure` and :meth:`claims`.
    claimed_predictions: ClassVar[Any] = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        named = cls.__dict__.get("hooks", {})
        package = getattr(sys.modules.get(cls.__module__), "__package__", None)
        for hook, where in named.items():
            if hook not in FORWARDABLE:
                raise TypeError(f"{cls.__name__}.hooks names {hook!r}, which is no hook; "
                                f"allowed: {', '.join(FORWARDABLE)}")
            if hook in cls.__dict__:
                raise TypeError(f"{cls.__name__} defines {hook!r} and names it in hooks")
            setattr(cls, hook, _PackageFunction(hook, where, package, cls.__name__))
        if callable(cls.__dict__.get("derive")):
            # Each derivation's marks (its order parameters) are its own: another model
            # that names the same symbol is not affected (reduced_odes._derivation_scope).
            cls.derive = scoped(cls.__dict__["derive"])

    # -- 4. derivation ----------------------------------------------------------------
    @abc.abstractmethod
    def derive(self, variant: str, **structure: Any) -> Any:  # a Derivation (a higher layer)
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
    def settled(self, params: Parameters, variant: str
                ) -> Callable[[Sequence[float]], float] | SettledRule:
        """Stop rule: ``f(y) <= 0`` once every block of the state has reached its final regime.

        ``f(t, y)`` (two arguments) is allowed too, for a regime defined with time, such as
        an algebraic tail ``t * L -> c``.
        """

    @abc.abstractmethod
    def horizon(self, params: Parameters, variant: str) -> float:
        """First integration horizon (extended by the engine until :meth:`settled`)."""

    # -- 11, 12. optional: checks and protocol ----------------------------------------------
    def check(self, params: Parameters, variant: str) -> None:
        """Raise :class:`ParameterError` unless ``params`` suit ``variant`` (default: all do).

        Examples
        --------
        >>> from reduced_odes.models import get_model
        >>> model = get_model("deep_linear")
        >>> model.check(model.Params(), "default") is None
        True
        """
        return None

    def check_start(self, params: Parameters, variant: str, start: Mapping[str, float]
                    ) -> None:
        """Raise :class:`ParameterError` unless the flow may start at ``start`` (each state
        variable by name, at ``t = 0``; called for every start ``solve`` is given, after the
        domain's conditions hold there).  Default: every start inside the domain.

        Examples
        --------
        >>> from reduced_odes.models import get_model
        >>> model = get_model("deep_linear")
        >>> model.check_start(model.Params(), "default", {"a": 0.1, "b": 0.1}) is None
        True
        """
        return None

    def integrate(self, params: Parameters, variant: str, solver: SolverConfig,
                  thresholds: Parameters | None, initial: Any) -> Any:  # a Trajectory or None
        """A trajectory of a protocol that is not one flow, or None (default): the single
        flow, integrated by :func:`~reduced_odes.solve`.

        ``solver``, ``thresholds`` and ``initial`` are :func:`~reduced_odes.solve`'s.
        """
        return None

    # -- 13. optional: verify -------------------------------------------------------------
    def verify_settings(self, grid: str, variants: Sequence[str]
                        ) -> tuple[list[dict], list[dict]]:
        """The settings of ``grid`` for ``variants`` (dicts, each passed to :meth:`measure`),
        and the settings left out, each with its reason."""
        if self.claimed_predictions is not None:
            return self.claimed_predictions.verify_settings(self, grid, variants)
        raise self._unsupplied("verify_settings")

    def measure(self, setting: dict) -> dict:
        """The measurements of one setting (JSON-safe), computed in a worker process."""
        if self.claimed_predictions is not None:
            return self.claimed_predictions.measure(self, setting)
        raise self._unsupplied("measure")

    def claims(self, records: list[dict], variants: Sequence[str]) -> list[Claim]:
        """The verdict rows from every setting's record (``{"setting", "result"}``)."""
        if self.claimed_predictions is not None:
            return self.claimed_predictions.claims(records)
        raise self._unsupplied("claims")

    def verify_metadata(self) -> dict:
        """What the verdict file records beside the claims: grids, tolerances with their
        reasons, regimes (default: nothing)."""
        return {}

    # -- 14..16. optional: derive, figures, compare ---------------------------------------
    def export_derivations(self, directory: Path) -> list[Path]:
        """Write the derivation documents into ``directory``; the paths written."""
        raise self._unsupplied("export_derivations")

    def figures(self, out: Path, data: Path, formats: Sequence[str], **options
                ) -> list[Path]:
        """Draw the figures into ``out`` (each of ``formats``) from the data files in
        ``data``, computing the missing ones first; the paths written."""
        raise self._unsupplied("figures")

    def compare(self, *, quick: bool, out: Path, **options) -> dict:
        """Ground truth (e.g. SGD on the unreduced model) against the reduced flow, its
        data files written into ``out``; the result, JSON-safe.

        A ``compare`` that takes ``executor`` and ``workers`` gets the options
        ``--workers`` and ``--scheduler`` (a local pool or a dask cluster) and
        should run its parallel work there.
        """
        raise self._unsupplied("compare")

    def format_compare(self, result: dict) -> str:
        """:meth:`compare`'s result as a table (default: indented JSON).

        Examples
        --------
        >>> from reduced_odes.models import get_model
        >>> print(get_model("deep_linear").format_compare({"passed": True}))
        {
          "passed": true
        }
        """
        import json

        return json.dumps(result, indent=2)

    def command_options(self, command: str, parser: argparse.ArgumentParser) -> None:
        """Add model-specific options to ``command``'s parser (default: none)."""
        return None

    # -- what the engine derives from the above -----------------------------------------
    def supports(self, hook: str) -> bool:
        """Whether the model supplies the optional ``hook``: overrides :class:`Model`'s
        default, or names it in :attr:`hooks`.

        Examples
        --------
        >>> from reduced_odes.models import get_model
        >>> get_model("two_mixture").supports("integrate")
        True
        >>> get_model("deep_linear").supports("claims")
        False
        """
        default = getattr(Model, hook, None)
        if default is None:  # not a declared hook: whatever the model defines
            return callable(getattr(self, hook, None))
        if not callable(getattr(self, hook, None)):  # switched off (set to None)
            return False
        if hook in _DECLARABLE and self.claimed_predictions is not None:
            return True
        return getattr(type(self), hook, default) is not default or hook in vars(self)

    def _unsupplied(self, hook: str) -> NotImplementedError:
        return NotImplementedError(f"model {self.name!r} does not supply {hook!r}")

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
        values = dict(values or {})
        check_keys(f"parameter(s) of model {self.name!r}", values,
                   [f.name for f in self.Params.declared()])
        return self.Params(**values)

    def __repr__(self) -> str:
        return f"<model {self.name}: {self.description}>"
