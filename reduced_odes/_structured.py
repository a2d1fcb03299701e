"""A flow given as numerical callables instead of expressions: the structured system.

Most models derive expressions, which :mod:`reduced_odes._compile` turns into
straight-line code, one generated module per system.  Some flows have a
structure that straight-line code throws away: the teacher–student rates are
sums over units of a few kernels, so their unrolled expressions (and the cost
of deriving and compiling them) grow with the number of units, while the sums
evaluated as array operations do not.  A model's ``derive`` may return a
:class:`StructuredSystem` in place of a :class:`~reduced_odes.Derivation`;
:func:`~reduced_odes.load_system` then hands it to the steppers with the same
interface as a compiled system (:func:`as_compiled`), in the state's own
coordinates, and compiles nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["StructuredSystem"]


@dataclass(frozen=True)
class StructuredSystem:
    """A flow as callables, with the interface of a compiled system's.

    Every callable takes the state ``y`` (a sequence in ``state_names`` order) and then the
    model's parameter values, in the order its ``parameter_values`` gives them.

    Attributes
    ----------
    state_names, observable_names, domain_labels : tuple of str
    rhs : callable
        ``rhs(t, y, *params)``: the rates (a sequence of floats).
    jac : callable
        ``jac(t, y, *params)``: the Jacobian, ``n x n``.
    observables : callable
        ``observables(y, *params)``: the observables, then the domain margins.
    margins : callable
        ``margins(y, *params)``: the domain margins alone (each ``> 0`` inside).
    loss : callable
        ``loss(y, *params)``: ``[L]``, the model's loss.
    key : str
        What identifies the system's numbers (e.g. a hash of its kernels).
    native : tuple
        How the native backend builds the same flow as numba code: ``(builder, args,
        kwargs)``, hashable, a builder of :mod:`reduced_odes._native._unit_sums`
        (e.g. ``("unit_sums", (K, M, "erf"), (("finite_eta", False),))``); empty: none,
        the native backend runs these callables.

    Examples
    --------
    A flow ``dy/dt = -a y`` with its loss ``y^2/2``:

    >>> flow = StructuredSystem(("y",), ("loss",), (), lambda t, y, a: [-a * y[0]],
    ...                         lambda t, y, a: [[-a]], lambda y, a: [y[0] ** 2 / 2],
    ...                         lambda y, a: [], lambda y, a: [y[0] ** 2 / 2], "decay")
    >>> flow.rhs(0.0, [2.0], 0.5), flow.size
    ([-1.0], 1)
    """

    state_names: tuple[str, ...]
    observable_names: tuple[str, ...]
    domain_labels: tuple[str, ...]
    rhs: Callable
    jac: Callable
    observables: Callable
    margins: Callable
    loss: Callable
    key: str
    native: tuple = ()

    @property
    def size(self) -> int:
        return len(self.state_names)


def _identity(y, *args) -> list[float]:
    """The state itself: a structured system integrates its state variables directly."""
    return [float(v) for v in y]
