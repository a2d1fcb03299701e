"""What a job does once, before its workers start: derive and compile what they load.

A sweep or a verification runs its settings in worker processes, each of which
loads the compiled systems from the cache.  Compiled here first, once, the
systems (and, for the native backend, each twin's machine code) are loaded by
every worker instead of being compiled by each of them.  This is run-layer work
(it integrates a trajectory to compile a twin), kept out of the configuration
that chooses the backend (:mod:`reduced_odes._backend`).
"""

from __future__ import annotations

from collections.abc import Iterable

from ._compile import load_system
from ._contract import Model
from ._integrate import solve
from ._params import ParameterError, SolverConfig
from ._trajectory import DomainError

__all__ = ["prepare", "warm_native"]


def prepare(model: Model, variants: Iterable[str], backend: str) -> None:
    """Derive and compile here, once, what a job's workers load: each variant's system and,
    for the native backend, its twin's machine code (else every worker would compile it).

    Examples
    --------
    >>> from reduced_odes.models import get_model
    >>> prepare(get_model("deep_linear"), ["default"], "python")
    """
    for variant in variants:
        load_system(model, variant)
        if backend == "numba":
            warm_native(model, variant)


def warm_native(model: Model, variant: str) -> None:
    """Compile (or load) ``model``'s native twin for ``variant`` by one native run at its
    defaults.

    Examples
    --------
    >>> from reduced_odes.models import get_model
    >>> warm_native(get_model("deep_linear"), "default")  # doctest: +SKIP
    """
    try:
        solve(model.make_params({}), variant, SolverConfig(backend="numba"), model=model)
    except (ParameterError, DomainError):  # the defaults do not suit this variant: the twin
        pass  # is compiled all the same, by the first native call
