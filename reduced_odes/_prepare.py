"""What a job does once, before its workers start: derive and compile what they load.

A sweep or a verification runs its settings in worker processes, each of which
loads the compiled systems from the cache.  Compiled here first, once, the
systems (and, for the native backend, each twin's machine code) are loaded by
every worker instead of being compiled by each of them.  This is run-layer work
(it integrates a trajectory to compile a twin), kept out of the configuration
that chooses the backend (:mod:`reduced_odes._backend`).

A derivation not yet in the cache takes seconds to minutes of SymPy: it is shown
while it runs (:class:`~reduced_odes._progress.Activity`), and a job's progress
count and ETA start after it.  The main job derives every model's systems at once
on a process pool (:func:`derive_models`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Executor, as_completed
from typing import Any

from ._compile import is_cached, load_system
from ._contract import Model
from ._integrate import solve
from ._params import ParameterError, SolverConfig
from ._progress import Activity
from ._registry import get_model, reference
from ._trajectory import DomainError

__all__ = ["derive_all", "derive_models", "prepare", "systems", "warm_native"]

#: One system to derive: (model reference, variant, structure).
System = tuple[str, str, tuple[tuple[str, Any], ...]]


def systems(model: Model, variants: Iterable[str],
            settings: Sequence[Mapping[str, Any]] | None = None) -> list[System]:
    """The distinct systems that ``settings`` (grid points naming a variant and parameter
    values) integrate: each variant's at the default structure if ``settings`` is None.

    Examples
    --------
    >>> from reduced_odes.models import get_model
    >>> machine = get_model("committee_machine")
    >>> [s[1:] for s in systems(machine, ["erf"], [{"activation": "erf", "K": 3, "M": 3}])]
    [('erf', (('K', 3), ('M', 3), ('finite_eta', False)))]
    """
    if settings is None:
        settings = [{model.variant_option: variant} for variant in variants]
    names = {f.name for f in model.Params.declared()}
    found: dict[System, None] = {}
    for setting in settings:
        try:
            params = model.make_params({k: v for k, v in setting.items() if k in names})
        except ParameterError:  # left to the run, which says why
            continue
        variant = model.resolve_variant(setting.get(model.variant_option))
        found[reference(model), variant, tuple(sorted(model.structure(params).items()))] = None
    return list(found)


def _label(system: System) -> str:
    ref, variant, structure = system
    shape = f"[{','.join(f'{k}={v!r}' for k, v in structure)}]" if structure else ""
    return f"{ref} {variant}{shape}"


def _size(system: System) -> float:
    """Largest first: the sum of the structure's integers (units, heads: each adds terms to
    derive), so that the longest derivations start first and the pool ends together."""
    return -sum(v for _, v in system[2] if isinstance(v, int) and not isinstance(v, bool))


def _derive(system: System) -> str:
    """Derive and compile ``system`` into the cache (a pool's task); its label."""
    ref, variant, structure = system
    load_system(get_model(ref), variant, structure=dict(structure))
    return _label(system)


def prepare(model: Model, variants: Iterable[str], backend: str,
            settings: Sequence[Mapping[str, Any]] | None = None, *,
            show: bool = False) -> None:
    """Derive and compile here, once, what a job's workers load: the system of each
    variant and structure that ``settings`` need and, for the native backend, each
    variant's twin machine code (else every worker would compile it).  ``show``: a line on
    stderr while a derivation not yet in the cache runs.

    Examples
    --------
    >>> from reduced_odes.models import get_model
    >>> prepare(get_model("deep_linear"), ["default"], "python")
    """
    variants = list(variants)
    for system in systems(model, variants, settings):
        with Activity(f"deriving {_label(system)}",
                      show=show and not is_cached(model, system[1], dict(system[2]))):
            _derive(system)
    if backend == "numba":
        for variant in variants:
            warm_native(model, variant)


def derive_all(wanted: Iterable[System], executor: Executor, *, show: bool = True) -> int:
    """Derive every system of ``wanted`` not yet in the cache, on ``executor`` (several at
    once on a process pool); a line on stderr as each one ends.  The number derived.

    Examples
    --------
    >>> from concurrent.futures import ThreadPoolExecutor
    >>> from reduced_odes.models import get_model
    >>> wanted = systems(get_model("deep_linear"), ["default"])
    >>> with ThreadPoolExecutor(1) as pool:
    ...     first = derive_all(wanted, pool, show=False)  # 1, unless derived already
    ...     again = derive_all(wanted, pool, show=False)
    >>> first in (0, 1), again
    (True, 0)
    """
    missing = sorted((s for s in dict.fromkeys(wanted)
                      if not is_cached(get_model(s[0]), s[1], dict(s[2]))), key=_size)
    if not missing:
        return 0
    with Activity(f"deriving {len(missing)} system(s), once (SymPy; cached afterwards)",
                  show=show) as activity:
        futures = {executor.submit(_derive, system): system for system in missing}
        for count, future in enumerate(as_completed(futures), 1):
            try:
                outcome = f"derived {future.result()}"
            except Exception:  # loaded again where it is used, which then says why
                outcome = f"left for later: {_label(futures[future])}"
            activity.note(f"{outcome} ({count}/{len(missing)})")
    return len(missing)


def derive_models(models: Sequence[Model], grid: str, executor: Executor) -> int:
    """Derive every system that ``models`` integrate on their verification ``grid`` (and
    each verified variant's default), several at once on ``executor`` (the main job's
    process pool): its first step, so that each verification starts with its systems in
    the cache.  The number derived.

    Examples
    --------
    >>> from concurrent.futures import ThreadPoolExecutor
    >>> from reduced_odes.models import get_model
    >>> with ThreadPoolExecutor(1) as pool:
    ...     derive_models([get_model("deep_linear")], "default", pool) in (0, 1)  # 0 once cached
    True
    """
    wanted = []
    for model in models:
        variants = list(model.verified_variants or model.variants)
        wanted += systems(model, variants)
        if model.supports("claims") and grid in model.grids:
            wanted += systems(model, variants, model.verify_settings(grid, variants)[0])
    return derive_all(wanted, executor)


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
