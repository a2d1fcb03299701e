"""The one validation layer: parameter declarations, their ranges, and solver settings.

A model's parameters are a frozen dataclass deriving from :class:`Parameters`
whose fields are declared with :func:`parameter`: a default, a range and a
help text.  The range both validates the value (raising
:class:`ParameterError` naming the parameter, its value and the allowed
range) and documents it (the CLI help shows it).  Every check in the package
goes through the functions of this module.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from ._steppers import METHODS

__all__ = [
    "METHODS",
    "ParameterError",
    "Parameters",
    "Range",
    "SolverConfig",
    "choice",
    "flag",
    "integer",
    "interval",
    "parameter",
    "positive",
]



class ParameterError(ValueError):
    """An input outside its allowed range; the message names it, its value and the range.

    Examples
    --------
    >>> try:
    ...     SolverConfig(rtol=2.0)
    ... except ParameterError as error:
    ...     print(error)
    rtol=2.0 is outside the interval [1e-13, 0.01]
    """


#: The integrators a :class:`SolverConfig` may name (see its ``backend``); which one runs
#: for ``auto`` is decided by the job (:mod:`reduced_odes._backend`).
BACKENDS = ("python", "numba", "auto")
_INSTALL = "pip install 'reduced-odes[fast]'"


@functools.cache  # asked for every SolverConfig; each search of sys.path costs ~0.1 ms
def native_available() -> bool:
    """Whether numba is importable (the ``[fast]`` extra is installed).

    Examples
    --------
    >>> isinstance(native_available(), bool)
    True
    """
    return importlib.util.find_spec("numba") is not None


def check_backend(backend: str) -> str:
    """``backend``, or ParameterError if it is ``numba`` and numba is not installed.

    Examples
    --------
    >>> check_backend("python")
    'python'
    """
    if backend == "numba" and not native_available():
        raise ParameterError(f"backend='numba' needs numba, which is not installed ({_INSTALL}); "
                             f"allowed without it: python, auto")
    return backend


def warn(message: str) -> None:
    """One warning line on stderr, ``reduced-odes: warning: <message>`` (no source location).

    Examples
    --------
    >>> import contextlib, io
    >>> err = io.StringIO()
    >>> with contextlib.redirect_stderr(err):
    ...     warn("cache is read-only")
    >>> err.getvalue()
    'reduced-odes: warning: cache is read-only\\n'
    """
    import sys

    print(f"reduced-odes: warning: {message}", file=sys.stderr, flush=True)


def _plain(value):
    """A NumPy scalar or 0-d array as the Python scalar it holds (``np.True_`` is ``True``,
    a flag and not a number); anything else as it is.

    Examples
    --------
    >>> import numpy as np
    >>> _plain(np.True_), _plain(np.float64(2.5)), _plain(np.array("joint")), _plain([1])
    (True, 2.5, 'joint', [1])
    """
    if hasattr(value, "dtype") and hasattr(value, "item") and getattr(value, "ndim", 0) == 0:
        return value.item()
    return value


def _shown(value) -> str:
    """``repr(value)`` on one line (an array's repr spans several).

    Examples
    --------
    >>> _shown([[1, 2],
    ...         [3, 4]])
    '[[1, 2], [3, 4]]'
    """
    try:
        return " ".join(repr(value).split())
    except ValueError:  # an int beyond Python's limit on digits shown
        return f"<{type(value).__name__} of {value.bit_length()} bits>"


def _number(name: str, value, allowed: str) -> float:
    """``value`` as a finite float, or a ParameterError naming ``name`` and ``allowed``."""
    value = _plain(value)
    if isinstance(value, bool | str) or getattr(value, "ndim", 0):  # a flag, text, an array
        raise ParameterError(f"{name}={_shown(value)} is not a number; allowed: {allowed}")
    if not isinstance(value, int | float):
        try:
            value = float(value)
        except (TypeError, ValueError, OverflowError):
            raise ParameterError(f"{name}={_shown(value)} is not a number; "
                                 f"allowed: {allowed}") from None
    try:
        value = float(value)
    except OverflowError:
        raise ParameterError(f"{name}={_shown(value)} is not finite; allowed: {allowed}") from None
    if not math.isfinite(value):
        raise ParameterError(f"{name}={_shown(value)} is not finite; allowed: {allowed}")
    return value


@dataclass(frozen=True)
class Range:
    """An allowed range: ``check(name, value)`` returns the value normalised, or raises.

    Build one with :func:`interval`, :func:`positive`, :func:`integer`,
    :func:`choice` or :func:`flag`; ``text`` is what error messages and the CLI
    help show.

    Examples
    --------
    >>> width = integer(1, 5)
    >>> width.text, width.check("K", 3.0)
    ('an integer in [1, 5]', 3)
    >>> width.check("K", 6)
    Traceback (most recent call last):
    ...
    reduced_odes._params.ParameterError: K=6 must be an integer in [1, 5]
    """

    text: str
    kind: str  # "real", "integer", "choice" or "flag"
    lo: float = -math.inf
    hi: float = math.inf
    lo_open: bool = True
    hi_open: bool = True
    options: tuple = ()

    def check(self, name: str, value):
        value = _plain(value)
        if self.kind == "flag":
            if not isinstance(value, bool):
                raise ParameterError(f"{name}={_shown(value)} must be true or false")
            return value
        if self.kind == "choice":
            # Only a hashable value can equal an option (an array compares element-wise).
            found = [o for o in self.options if isinstance(value, Hashable) and value == o]
            if not found:
                allowed = ", ".join(map(str, self.options))
                raise ParameterError(f"{name}={_shown(value)}; allowed: {allowed}")
            return found[0]
        number = _number(name, value, self.text)
        if self.kind == "integer" and number != int(number):
            raise ParameterError(f"{name}={_shown(value)} must be {self.text}")
        below = number <= self.lo if self.lo_open else number < self.lo
        above = number >= self.hi if self.hi_open else number > self.hi
        if below or above:
            verb = "is outside" if self.text.startswith("the ") else "must be"
            raise ParameterError(f"{name}={_shown(value)} {verb} {self.text}")
        return int(number) if self.kind == "integer" else number


def interval(lo: float, hi: float, *, closed: str = "") -> Range:
    """Reals in ``(lo, hi)``; ``closed`` may contain ``"lo"`` and/or ``"hi"``.

    Examples
    --------
    >>> interval(0, 1).check("alpha", 0.5)
    0.5
    >>> interval(0, 1).check("alpha", 1.5)
    Traceback (most recent call last):
    ...
    reduced_odes._params.ParameterError: alpha=1.5 is outside the open interval (0, 1)
    """
    lo_open, hi_open = "lo" not in closed, "hi" not in closed
    if lo_open and hi_open:
        text = f"the open interval ({lo:g}, {hi:g})"
    else:
        text = f"the interval {'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"
    return Range(text, "real", lo, hi, lo_open, hi_open)


def positive(hi: float = math.inf) -> Range:
    """Finite reals ``> 0`` (and ``< hi`` if given).

    Examples
    --------
    >>> positive().check("sigma", 1e-3)
    0.001
    >>> positive(10).check("q0", 0)
    Traceback (most recent call last):
    ...
    reduced_odes._params.ParameterError: q0=0 must be a number in (0, 10)
    """
    if math.isinf(hi):
        return Range("a finite number > 0", "real", 0.0)
    return Range(f"a number in (0, {hi:g})", "real", 0.0, hi)


def integer(lo: int, hi: float = math.inf) -> Range:
    """Integers ``>= lo`` (and ``<= hi`` if given).

    Examples
    --------
    >>> integer(2).check("L", 50)
    50
    >>> integer(2).check("L", 2.5)
    Traceback (most recent call last):
    ...
    reduced_odes._params.ParameterError: L=2.5 must be an integer >= 2
    """
    text = f"an integer >= {lo}" if math.isinf(hi) else f"an integer in [{lo}, {hi:g}]"
    return Range(text, "integer", lo, hi, lo_open=False, hi_open=False)


def choice(*options) -> Range:
    """One of ``options``.

    Examples
    --------
    >>> choice("square", "logistic").check("loss", "square")
    'square'
    >>> choice("square", "logistic").check("loss", "hinge")
    Traceback (most recent call last):
    ...
    reduced_odes._params.ParameterError: loss='hinge'; allowed: square, logistic
    """
    return Range(f"one of {', '.join(map(str, options))}", "choice", options=tuple(options))


def flag() -> Range:
    """A boolean.

    Examples
    --------
    >>> flag().check("train_value", False)
    False
    >>> flag().check("train_value", 1)
    Traceback (most recent call last):
    ...
    reduced_odes._params.ParameterError: train_value=1 must be true or false
    """
    return Range("true or false", "flag")


def parameter(default, allowed: Range, help: str) -> Any:
    """Declare one field of a :class:`Parameters` dataclass.

    Examples
    --------
    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Toy(Parameters):
    ...     s: float = parameter(1.0, positive(1e150), "target singular value")
    >>> Toy(s=2).s
    2.0
    >>> Toy(s=-1)
    Traceback (most recent call last):
    ...
    reduced_odes._params.ParameterError: s=-1 must be a number in (0, 1e+150)
    """
    return dataclasses.field(default=default, metadata={"allowed": allowed, "help": help})


@dataclass(frozen=True)
class Parameters:
    """Base of every model's parameter dataclass (frozen; fields from :func:`parameter`).

    ``__post_init__`` checks every declared field against its range and then
    calls :meth:`check` for conditions that tie several fields together.

    Examples
    --------
    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Pair(Parameters):
    ...     lo: float = parameter(0.1, positive(), "lower level")
    ...     hi: float = parameter(0.9, positive(), "upper level")
    ...     def check(self):
    ...         if not self.lo < self.hi:
    ...             raise ParameterError(f"lo={self.lo!r} must be below hi={self.hi!r}")
    >>> Pair(hi=2).as_dict()
    {'lo': 0.1, 'hi': 2.0}
    >>> Pair(lo=3)
    Traceback (most recent call last):
    ...
    reduced_odes._params.ParameterError: lo=3.0 must be below hi=0.9
    """

    def __post_init__(self):
        for item in dataclasses.fields(self):
            allowed = item.metadata.get("allowed")
            if allowed is not None:
                value = allowed.check(item.name, getattr(self, item.name))
                object.__setattr__(self, item.name, value)
        self.check()

    def check(self) -> None:
        """Conditions across fields; raise :class:`ParameterError`. Default: none."""

    def as_dict(self) -> dict:
        """The fields by name: as :func:`dataclasses.asdict`, without its deep copy when
        every value is a plain scalar (a copy that costs as much as the rest of a results
        line).

        Examples
        --------
        >>> SolverConfig(rtol=1e-8).as_dict()["rtol"]
        1e-08
        """
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        if all(isinstance(v, int | float | str | None) for v in values.values()):
            return values
        return dataclasses.asdict(self)

    @classmethod
    def declared(cls) -> list[dataclasses.Field]:
        """The fields declared with :func:`parameter`, in order."""
        return [f for f in dataclasses.fields(cls) if "allowed" in f.metadata]


def check_keys(name: str, given: Sequence[str], allowed: Sequence[str]) -> None:
    """ParameterError if ``given`` has a key outside ``allowed``."""
    unknown = sorted(set(given) - set(allowed))
    if unknown:
        raise ParameterError(f"unknown {name} {unknown}; allowed: {', '.join(allowed)}")


@dataclass(frozen=True)
class SolverConfig(Parameters):
    """Integrator settings.

    Parameters
    ----------
    method : {"LSODA", "Radau", "BDF"}
        Stiff SciPy method; LSODA has the lowest per-step overhead.
    rtol, atol : float
        Tolerances (atol applies to every integration coordinate alike, except that a log
        coordinate's is never below the machine epsilon: ``Trajectory.stats.atol_floor``).
    t_end : float or None
        Final time; ``None`` lets the model's stop rule choose it.
    n_output : int
        Number of log-spaced output times after t = 0.
    backend : {"auto", "python", "numba"}
        ``python``: SciPy's ``method``, the reference.  ``numba``: the native
        backend (the ``[fast]`` extra), SciPy's BDF ported to numba whatever
        ``method`` says.  ``auto``: ``python``, unless the job that runs the
        trajectory chose ``numba`` (a large sweep or verify with numba installed).
        Either way, a run that fails on one backend is retried on the other
        (``solve --json``: ``solver.retried``, ``solver.fallback_reason``).
    cross_check : bool
        Solve a second time at a hundredth of the tolerances and report its phase
        times, each with an error estimate (the distance to the first run's); a phase
        whose estimate exceeds ``max(1e-9, 30 rtol)`` is marked ill-conditioned
        (``phase_outcomes``).
        Costs 2 to 4 times a plain solve; off by default, on for ``reduced-odes solve``.

    Examples
    --------
    >>> SolverConfig(rtol=1e-8).method
    'LSODA'
    """

    KEYS: ClassVar[tuple[str, ...]] = ("method", "rtol", "atol", "t_end", "n_output", "backend",
                                       "cross_check")

    # The table's methods, read on each check: a stepper added to it is a method allowed.
    method: str = parameter("LSODA", Range(f"one of {', '.join(METHODS)}", "choice",
                                           options=METHODS), "stiff solver")
    rtol: float = parameter(1e-10, interval(1e-13, 1e-2, closed="lo,hi"),
                            "relative tolerance (below 1e-13 it asks for more than double "
                            "precision holds: SciPy raises it to 2.2e-14 with a warning; "
                            "above 1e-2 a run need not settle)")
    atol: float = parameter(1e-12, interval(1e-30, 1e-3, closed="lo,hi"),
                            "absolute tolerance on every integration coordinate (logs and "
                            "O(1) overlaps: above 1e-3 an accepted step may leave the domain; "
                            "a log coordinate's is at least the machine epsilon, 2.2e-16, as "
                            "its absolute error is its variable's relative error)")
    t_end: float | None = None
    n_output: int = parameter(400, integer(2, 10**7), "number of log-spaced output times")
    backend: str = parameter("auto", choice("auto", "python", "numba"),
                             "python: the reference path; numba: native (the [fast] extra); "
                             "auto: numba for large sweeps and verify when installed")
    cross_check: bool = parameter(False, flag(), "estimate each phase time's error from a "
                                                 "second solve at a hundredth of the tolerances")

    def check(self) -> None:
        check_backend(self.backend)
        if self.t_end is not None:
            object.__setattr__(self, "t_end", positive().check("t_end", self.t_end))

    def as_dict(self) -> dict:
        return {key: getattr(self, key) for key in self.KEYS}
