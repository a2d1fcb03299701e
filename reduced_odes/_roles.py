"""A model's hooks by role: each role is one module of the model's package, whose functions
serve one job (its claims, its figures, its ground truth, ...).

A foundation leaf (nothing of the engine imported): :func:`roles` only spells the
``hook -> "module:function"`` mapping that :attr:`reduced_odes.author.Model.hooks` holds.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["ROLES", "roles"]

#: Role -> the hooks it serves, each with the function of the role's module that implements
#: it by default.
ROLES: Mapping[str, Mapping[str, str]] = {
    "derivation": {"derive": "derivation"},
    "claims": {hook: hook for hook in ("verify_settings", "measure", "claims",
                                       "verify_metadata")},
    "export": {"export_derivations": "export_derivations"},
    "figures": {"figures": "draw_figures"},
    "compare": {"compare": "compare", "format_compare": "format_compare"},
}


def roles(*names: str, functions: Mapping[str, str] | None = None,
          **modules: str) -> dict[str, str]:
    """The :attr:`~reduced_odes.author.Model.hooks` of the roles a model's package fills.

    Parameters
    ----------
    *names : str
        Roles filled by the package's module of the same name (``"claims"``: ``.claims``).
    functions : mapping, optional
        Hook -> function, for a hook whose function is not named as in :data:`ROLES`.
    **modules : str
        Role -> module, for a role filled by a module of another name
        (``compare=".ground_truth"``).

    Examples
    --------
    >>> roles("derivation", "figures")
    {'derive': '.derivation:derivation', 'figures': '.figures:draw_figures'}
    >>> roles(compare=".ground_truth", functions={"compare": "run_compare"})
    {'compare': '.ground_truth:run_compare', 'format_compare': '.ground_truth:format_compare'}
    """
    where = {**{name: f".{name}" for name in names}, **modules}
    unknown = sorted(set(where) - set(ROLES))
    if unknown:
        raise TypeError(f"roles {unknown} are no roles; allowed: {', '.join(ROLES)}")
    hooks = {hook: f"{module}:{function}" for role, module in where.items()
             for hook, function in ROLES[role].items()}
    strays = sorted(set(functions or {}) - set(hooks))
    if strays:
        raise TypeError(f"functions for {strays}, which no role given serves; "
                        f"allowed: {', '.join(hooks)}")
    for hook, function in (functions or {}).items():
        hooks[hook] = f"{hooks[hook].partition(':')[0]}:{function}"
    return hooks
