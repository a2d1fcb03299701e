"""The table of steppers: which class integrates a run, by backend and method.

In the manner of SciPy's ``solve_ivp`` ``METHODS``: one row per stepper, keyed by
``(backend, method)``.  A row's value is the stepper class itself or its
``"module:Class"`` path, imported on first use (the native one needs numba, which
loads only for a run that asks for it).  A stepper is a class with ``label`` (how
failure messages name it; None: the method's name) and ``run(problem)``, which
takes a :class:`~reduced_odes._problem.Problem` and returns a run
(:class:`~reduced_odes._driver.Run`); see docs/architecture.md, "Add a solver".

The table is configuration (this layer): :class:`~reduced_odes.SolverConfig`
accepts every method it names (:data:`METHODS`), and the numeric layer picks the
row (:func:`stepper_for`).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Sequence

__all__ = ["ANY_METHOD", "METHODS", "STEPPERS", "stepper_for"]

#: A row for every method of a backend (the native backend is BDF whatever is named).
ANY_METHOD = "*"

#: ``(backend, method) -> stepper class or "module:Class"``: the one place a solver is added.
STEPPERS: dict[tuple[str, str], object] = {
    ("python", "LSODA"): "reduced_odes._lsoda:LsodaStepper",
    ("python", "Radau"): "reduced_odes._ivp:IvpStepper",
    ("python", "BDF"): "reduced_odes._ivp:IvpStepper",
    ("numba", ANY_METHOD): "reduced_odes._native:NativeBdf",
}


class _MethodNames(Sequence):
    """The method names the table holds, read from it on each use (a row added later, as a
    test adds one, is a method :class:`~reduced_odes.SolverConfig` accepts).

    Examples
    --------
    >>> from reduced_odes import METHODS
    >>> tuple(METHODS), "Radau" in METHODS
    (('LSODA', 'Radau', 'BDF'), True)
    """

    def _names(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(m for _, m in STEPPERS if m != ANY_METHOD))

    def __getitem__(self, index):
        return self._names()[index]

    def __len__(self) -> int:
        return len(self._names())

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __contains__(self, name: object) -> bool:
        return name in self._names()

    def __repr__(self) -> str:
        return repr(self._names())


#: The methods a :class:`~reduced_odes.SolverConfig` may name (a live view of the table).
METHODS: Sequence[str] = _MethodNames()


def stepper_for(backend: str, method: str):
    """The stepper class of ``(backend, method)``'s row (or the backend's row for any method).

    Examples
    --------
    >>> stepper_for("python", "Radau").__name__
    'IvpStepper'
    """
    row = STEPPERS.get((backend, method), STEPPERS.get((backend, ANY_METHOD)))
    if row is None:
        raise KeyError(f"no stepper for backend {backend!r} and method {method!r}")
    if isinstance(row, str):
        module, name = row.split(":")
        row = getattr(importlib.import_module(module), name)
    return row
