"""The native backend: a model's compiled system and a stiff integrator, run by numba.

Optional: it needs ``numba`` (``pip install 'reduced-odes[fast]'``) and is
imported only when selected.  The pure-Python path stays the reference; the
native one must agree with it (``tests/engine/test_native.py``).

What it does, per trajectory, in one native call per leg of the run: SciPy's
BDF method (ported, :mod:`reduced_odes._native._bdf`) on the numba twin of the
model's generated module (:mod:`reduced_odes._native._twin`), with the
model's stop rule, its phase crossings, the output grid, the state variables
and observables evaluated natively.

A model whose ``settled`` returns a :class:`~reduced_odes.SettledRule` (an
expression) has its stop rule compiled into the twin.  Otherwise the run is
integrated natively in chunks and the model's Python rule is applied to each
chunk's steps.

:class:`NativeBdf` is the stepper, the ``numba`` row of the stepper table
(:data:`reduced_odes._steppers.STEPPERS`).

Examples
--------
>>> from reduced_odes import SolverConfig, solve
>>> from reduced_odes.models.deep_linear import DeepLinearParams
>>> traj = solve(DeepLinearParams(), solver=SolverConfig(backend="numba"))  # doctest: +SKIP
"""

from __future__ import annotations

from ._solve import NativeBdf, NativeRun

__all__ = ["NativeBdf", "NativeRun"]
