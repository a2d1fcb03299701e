"""A model's stop rules and phase times: :class:`SettledRule` (when a run has settled, as
an expression both backends evaluate) and :class:`Crossing` (a phase time's definition).

Part of the model contract (:mod:`reduced_odes._contract`); authors import both from
:mod:`reduced_odes.author`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from ._params import ParameterError

__all__ = ["Crossing", "SettledRule"]


@functools.lru_cache(maxsize=256)
def _names_read(expression: str) -> frozenset[str]:
    """The names ``expression`` reads, parsed once per expression (every solve checks its
    rule: a parse costs more than a fast model's whole solve's bookkeeping)."""
    import ast

    return frozenset(node.id for node in ast.walk(ast.parse(expression, mode="eval"))
                     if isinstance(node, ast.Name))


@functools.lru_cache(maxsize=256)
def _rule_factory(expression: str, names: tuple[str, ...],
                  constants: tuple[str, ...]) -> Callable:
    """``make(*constant values) -> lambda *names: expression``, compiled once per expression
    and names: a solve binds its constants' values without compiling anything."""
    scope = {"abs": abs, "min": min, "max": max, "math": math, "__builtins__": {}}
    source = (f"lambda {', '.join(constants)}: lambda {', '.join(names)}: {expression}"
              if constants else f"lambda: lambda {', '.join(names)}: {expression}")
    return eval(source, scope)  # noqa: S307


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
        return set(_names_read(self.expression))

    def check(self, coordinates: Sequence[str], state_names: Sequence[str],
              observable_names: Sequence[str], owner: str = "the model") -> None:
        """A :class:`~reduced_odes.ParameterError` naming the rule and the names it may use,
        unless the expression parses and reads only ``t``, the coordinates, the
        observables, its constants, ``abs``, ``min``, ``max`` and ``math``, and no
        constant is named like a series.

        A state variable integrated in another coordinate (``m`` as ``log_m``) is no name
        of the rule: the message says how to write it (``math.exp(log_m)``).

        Examples
        --------
        >>> SettledRule("abs(m - 1) - 1e-9").check(("log_m",), ("m",), ("loss",))
        Traceback (most recent call last):
        ...
        reduced_odes._params.ParameterError: settled rule ... reads m, integrated as log_m: ...
        """
        rule = f"settled rule {self.expression!r} of {owner}"
        try:
            read = self.names()
        except SyntaxError as exc:
            raise ParameterError(f"{rule} is not a Python expression ({exc.msg})") from None
        series = {"t", *coordinates, *observable_names}
        if clash := sorted(set(self.constants) & series):
            raise ParameterError(f"{rule}: constant(s) {clash} are named like series; "
                                 f"allowed: names other than t, coordinates and observables")
        unknown = sorted(read - series - set(self.constants) - {"abs", "min", "max", "math"})
        if not unknown:
            return
        name = unknown[0]
        how = next((f", integrated as {c}: write math.exp({c})" if c == f"log_{name}" else
                    f", integrated as {c}: write it in {c}, or declare it an observable"
                    for s, c in zip(state_names, coordinates, strict=False) if s == name), "")
        raise ParameterError(
            f"{rule} reads {', '.join(unknown)}{how}; allowed: t, the coordinates "
            f"({', '.join(coordinates)}), the observables ({', '.join(observable_names) or 'none'})"
            f", its constants ({', '.join(self.constants) or 'none'}), abs, min, max, math")

    def function(self, coordinates: Sequence[str], observable_names: Sequence[str],
                 observables: Callable | None, args: Sequence[float]
                 ) -> Callable[[float, Sequence[float]], float]:
        """The rule as ``f(t, y)`` in Python; ``inf`` where the observables are undefined."""
        reads = bool(_names_read(self.expression) & set(observable_names))
        names = ("t", *coordinates, *(observable_names if reads else ()))
        # One compiled lambda (the pure path calls the rule on every step), its constants
        # bound as closure cells: compiled once per expression, not once per solve.
        make = _rule_factory(self.expression, names, tuple(self.constants))
        expression = make(*(float(v) for v in self.constants.values()))

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

