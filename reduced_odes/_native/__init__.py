"""The native backend: a model's compiled system and a stiff integrator, run by numba.

Optional: it needs ``numba`` (``pip install 'reduced-odes[fast]'``) and is
imported only when selected.  The pure-Python path stays the reference; the
native one must agree with it (``tests/engine/test_native.py``).

What it does, per trajectory, in one native call per leg of the run: SciPy's
BDF method (ported, :mod:`reduced_odes._native._bdf`) on the numba twin of the
model's generated module (:mod:`reduced_odes._native._twin`), with the
model's stop rule, its phase crossings, the output grid, the state variables
and observables evaluated natively.

A model may declare its stop rule natively with an optional method
``native_settled(params, variant) -> SettledRule``.  Without it, the run is
integrated natively in chunks and the model's Python ``settled`` rule is
applied to each chunk's steps.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["SettledRule", "available", "solve_native", "solve_numba"]


def available() -> bool:
    """Whether numba is importable (the ``[fast]`` extra is installed).

    Examples
    --------
    >>> isinstance(available(), bool)
    True
    """
    return importlib.util.find_spec("numba") is not None


@dataclass(frozen=True)
class SettledRule:
    """A model's stop rule as an expression that the native backend compiles.

    Attributes
    ----------
    expression : str
        A Python expression (``abs``, ``min``, ``max``, ``math.*``, arithmetic)
        in the integration coordinates' names and the ``constants``' names; it
        must equal ``Model.settled(params, variant)(y)``.  It is part of the
        compiled code, so it must not depend on the parameters: they enter
        through ``constants``.
    constants : mapping of str to float
        Names and values of the rule's parameter-dependent numbers.

    Examples
    --------
    >>> rule = SettledRule("abs(log_w_kq - target) - tol", {"target": -1.2, "tol": 1e-9})
    >>> sorted(rule.constants)
    ['target', 'tol']
    """

    expression: str
    constants: Mapping[str, float] = field(default_factory=dict)


def solve_native(model, params, variant, solver, thresholds, problem):
    """Integrate ``problem`` natively; the same :class:`~reduced_odes.Trajectory` as ``solve``.

    Called by :func:`reduced_odes.solve` for ``backend="numba"``; the arguments
    are those ``solve`` has checked and built.

    Examples
    --------
    >>> from reduced_odes import solve
    >>> from reduced_odes.models.deep_linear import DeepLinearParams
    >>> traj = solve(DeepLinearParams(), backend="numba")  # doctest: +SKIP
    """
    from ._solve import solve_native as run

    return run(model, params, variant, solver, thresholds, problem)


def solve_numba(params, variant=None, solver=None, thresholds=None, *, model=None):
    """:func:`reduced_odes.solve` on the native backend (same arguments, same checks).

    Examples
    --------
    >>> from reduced_odes.models.deep_linear import DeepLinearParams
    >>> traj = solve_numba(DeepLinearParams(s=1.0, sigma=1e-3))  # doctest: +SKIP
    >>> round(traj.phases["T_half"], 6)  # doctest: +SKIP
    6.907755
    """
    from .._driver import Problem
    from .._integrate import _checked, _initial_state
    from .._params import SolverConfig
    from .._registry import get_model, model_for

    model = model_for(params) if model is None else get_model(model)
    solver = solver or SolverConfig()
    _checked(model, params, solver, thresholds)
    variant = model.resolve_variant(variant)
    model.check(params, variant)
    system = _system(model, variant)
    args = tuple(float(a) for a in model.parameter_values(params, variant))
    y0 = _initial_state(model, params, variant, None, system, args)
    problem = Problem(system, args, y0, _LazyRule(model, params, variant),
                      float(model.horizon(params, variant)), float(model.tail), solver.t_end,
                      solver.method, solver.rtol, solver.atol,
                      f"model {model.name!r} ({model.variant_option} {variant!r})")
    return solve_native(model, params, variant, solver, thresholds, problem)


_SYSTEMS: dict = {}


def _system(model, variant):
    """``load_system(model, variant)``, once per process: its key hashes the model's source
    files on every call (a few file-system walks, most of a native run's time), and the
    process runs the model code it imported first anyway."""
    from .._compile import load_system

    memo = (type(model), model.name, variant)
    if memo not in _SYSTEMS:
        _SYSTEMS[memo] = load_system(model, variant)
    return _SYSTEMS[memo]


class _LazyRule:
    """The model's Python stop rule as ``f(t, y)``, built on first use: with a native rule
    the run never calls it, and building it may cost as much as the run."""

    def __init__(self, model, params, variant):
        self._parts, self._rule = (model, params, variant), None

    def __call__(self, t, y):
        if self._rule is None:
            from .._integrate import _stop_rule

            model, params, variant = self._parts
            self._rule = _stop_rule(model.settled(params, variant))
        return self._rule(t, y)
