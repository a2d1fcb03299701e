"""One point of a study: a model, its parameters, variant, solver settings, thresholds and
start, checked together once.

A :class:`Setting` is what :func:`~reduced_odes.solve` integrates, what a sweep's grid
line (:meth:`Setting.from_mapping`) and a results line (:meth:`Setting.as_mapping`) hold,
and what a run's retry and cross-check pass on: one object instead of five arguments
re-checked at each step.  It is plain data (the foundation layer): the verb that runs it
is :func:`~reduced_odes.solve`.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ._contract import Model
from ._params import ParameterError, Parameters, SolverConfig, check_keys
from ._registry import DEFAULT_MODEL, get_model, model_for, reference

__all__ = ["Setting"]


@dataclass(frozen=True)
class Setting:
    """A model with its parameters, variant, solver settings, phase thresholds and start.

    Built with :meth:`of` (from values, as the Python API takes them) or
    :meth:`from_mapping` (from one flat mapping, as a sweep's grid line holds it);
    either checks every part against the model before any work, and resolves the
    variant (``None``: the model's first).  :func:`~reduced_odes.solve` takes one in
    place of its arguments.

    Attributes
    ----------
    model : Model
    params : Parameters
        An instance of ``model.Params``.
    variant : str
        One of ``model.variants``.
    solver : SolverConfig
    thresholds : Parameters or None
        An instance of ``model.Thresholds``, or None (the model's defaults).
    initial : mapping, sequence or None
        A start instead of the model's (see :func:`~reduced_odes.solve`).

    Examples
    --------
    >>> from reduced_odes import solve
    >>> setting = Setting.from_mapping({"model": "deep_linear", "s": 2.0, "sigma": 1e-4,
    ...                                 "rtol": 1e-8})
    >>> setting.variant, setting.solver.rtol
    ('default', 1e-08)
    >>> round(solve(setting).phases["T_half"], 4)
    4.7785
    >>> setting.as_mapping()["s"], Setting.from_mapping(setting.as_mapping()) == setting
    (2.0, True)
    """

    model: Model
    params: Parameters
    variant: str
    solver: SolverConfig = field(default_factory=SolverConfig)
    thresholds: Parameters | None = None
    initial: Any = field(default=None, compare=False)

    def __post_init__(self):
        model = self.model
        if not isinstance(model, Model):
            raise ParameterError(f"model={model!r} must be a Model (see get_model)")
        if not isinstance(self.params, model.Params):
            raise ParameterError(f"params={self.params!r} must be a {model.Params.__name__}")
        if not isinstance(self.solver, SolverConfig):
            raise ParameterError(f"solver={self.solver!r} must be a SolverConfig")
        if self.thresholds is not None and (model.Thresholds is None or
                                            not isinstance(self.thresholds, model.Thresholds)):
            expected = model.Thresholds.__name__ if model.Thresholds else "None"
            raise ParameterError(f"thresholds={self.thresholds!r} must be a {expected}")
        object.__setattr__(self, "variant", model.resolve_variant(self.variant))
        model.check(self.params, self.variant)

    @classmethod
    def of(cls, params: Parameters, variant: str | None = None,
           solver: SolverConfig | None = None, thresholds: Parameters | None = None, *,
           initial: Any = None, model: Model | str | None = None) -> Setting:
        """The setting of :func:`~reduced_odes.solve`'s arguments (``model``: default, the
        loaded model whose ``Params`` ``params`` is).

        Examples
        --------
        >>> from reduced_odes.models.deep_linear import DeepLinearParams
        >>> Setting.of(DeepLinearParams(s=2.0)).model.name
        'deep_linear'
        """
        model = model_for(params) if model is None else get_model(model)
        return cls(model, params, variant, solver or SolverConfig(), thresholds, initial)

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any], model: Model | str | None = None
                     ) -> Setting:
        """The setting of one flat mapping: the model's parameters, its variant (under
        ``model.variant_option``), the :class:`SolverConfig` keys and the thresholds'
        fields, each optional; ``"model"`` names the model unless ``model`` is given.

        Examples
        --------
        >>> Setting.from_mapping({"s": 3.0}, "deep_linear").params.s
        3.0
        >>> Setting.from_mapping({"model": "deep_linear", "speed": 3.0})
        Traceback (most recent call last):
        ...
        reduced_odes._params.ParameterError: unknown grid key(s) ['speed']; allowed: ...
        """
        values = dict(values)
        model = get_model(model if model is not None else values.get("model", DEFAULT_MODEL))
        check_keys("grid key(s)", values, ["model", *allowed_keys(model)])
        pick = {part: {k: values[k] for k in keys if k in values}
                for part, keys in (("params", _fields(model.Params)),
                                   ("solver", SolverConfig.KEYS),
                                   ("thresholds", _fields(model.Thresholds)))}
        thresholds = model.Thresholds(**pick["thresholds"]) if model.Thresholds else None
        return cls(model, model.Params(**pick["params"]), values.get(model.variant_option),
                   SolverConfig(**pick["solver"]), thresholds)

    def as_mapping(self) -> dict[str, Any]:
        """The flat mapping :meth:`from_mapping` reads back: the model's reference, every
        parameter, the variant, the solver settings and the thresholds.

        Examples
        --------
        >>> sorted(Setting.from_mapping({"model": "deep_linear"}).as_mapping())[:4]
        ['atol', 'backend', 'cross_check', 'method']
        """
        thresholds = self.thresholds.as_dict() if self.thresholds is not None else {}
        return {"model": reference(self.model), **self.params.as_dict(),
                self.model.variant_option: self.variant, **self.solver.as_dict(), **thresholds}

    def with_solver(self, solver: SolverConfig) -> Setting:
        """The same setting on ``solver``: only the solver is checked (the model's parameters
        and variant are unchanged, so their checks, some of which solve for a fixed point,
        are not run again).

        Examples
        --------
        >>> setting = Setting.from_mapping({"model": "deep_linear"})
        >>> setting.with_solver(SolverConfig(backend="python")).solver.backend
        'python'
        """
        if not isinstance(solver, SolverConfig):
            raise ParameterError(f"solver={solver!r} must be a SolverConfig")
        swapped = copy.copy(self)
        object.__setattr__(swapped, "solver", solver)
        return swapped

    def replace(self, **changes: Any) -> Setting:
        """The same setting with ``changes`` (fields of :class:`Setting`), checked again.

        Examples
        --------
        >>> setting = Setting.from_mapping({"model": "deep_linear"})
        >>> setting.replace(solver=SolverConfig(rtol=1e-8)).solver.rtol
        1e-08
        """
        return dataclasses.replace(self, **changes)


@functools.cache  # read for every setting of a grid, by the client and again by its worker
def _fields(cls: type[Parameters] | None) -> tuple[str, ...]:
    return () if cls is None else tuple(f.name for f in cls.declared())


def allowed_keys(model: Model) -> list[str]:
    """The keys a flat mapping of ``model``'s setting may have (besides ``"model"``).

    Examples
    --------
    >>> allowed_keys(get_model("deep_linear"))[:3]
    ['s', 'sigma', 'variant']
    """
    return [*_fields(model.Params), model.variant_option, *SolverConfig.KEYS,
            *_fields(model.Thresholds)]
