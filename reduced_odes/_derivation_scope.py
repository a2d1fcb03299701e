"""What a derivation marks on its symbols, scoped to that derivation: the order parameters.

:func:`~reduced_odes.declare_order_parameters` marks symbols, and
:func:`~reduced_odes.gradient_flow` reads the marks (it refuses the identity metric for
an order parameter).  SymPy shares one object per symbol name and assumptions, so a mark
kept on the symbol, or in one set for the process, would reach every model that names
its own ``m``.  The marks are kept instead in a context variable that every model's
``derive`` runs with afresh (:class:`~reduced_odes.Model` wraps it, and the compiler
opens a scope too): one model's order parameters never change another's flow.  Marks
made outside any ``derive`` (a script's or a document's example) hold in the caller's
context, and no derivation sees them.

A leaf of the foundation layer: the model contract opens scopes and the symbolic layer
reads them, and neither imports the other.

Examples
--------
>>> with derivation_scope():
...     mark(("m",))
...     sorted(marked())
['m']
>>> with derivation_scope():
...     sorted(marked())
[]
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Hashable, Iterable, Iterator
from contextvars import ContextVar
from typing import Any

__all__ = ["derivation_scope", "mark", "marked", "scoped"]

#: The marks of the derivation running in this context (immutable: a scope's reset
#: restores the outer set as it was).
_MARKS: ContextVar[frozenset] = ContextVar("reduced_odes_order_parameters",
                                           default=frozenset())


@contextlib.contextmanager
def derivation_scope() -> Iterator[None]:
    """Run the block with no marks; the marks made in it end with it."""
    token = _MARKS.set(frozenset())
    try:
        yield
    finally:
        _MARKS.reset(token)


def mark(items: Iterable[Hashable]) -> None:
    """Mark ``items`` in the current scope."""
    _MARKS.set(_MARKS.get() | frozenset(items))


def marked() -> frozenset:
    """The marks of the current scope."""
    return _MARKS.get()


def scoped(derive: Callable[..., Any]) -> Callable[..., Any]:
    """``derive``, run in a scope of its own on each call (a model's ``derive``)."""
    if getattr(derive, "_derivation_scoped", False):
        return derive

    @functools.wraps(derive)
    def in_scope(*args: Any, **kwargs: Any) -> Any:
        with derivation_scope():
            return derive(*args, **kwargs)

    in_scope._derivation_scoped = True  # type: ignore[attr-defined]
    return in_scope
