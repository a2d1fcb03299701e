"""Names imported on first access: the module ``__getattr__`` and ``__dir__`` (PEP 562) of
:mod:`reduced_odes` and :mod:`reduced_odes.author`, from a table of name -> engine module.

Examples
--------
>>> getattr_, dir_ = lazy_attributes("demo", {"Model": "_contract"}, {"x": 1})
>>> getattr_("Model").__name__, dir_()
('Model', ['Model', 'x'])
>>> getattr_("missing")
Traceback (most recent call last):
...
AttributeError: module 'demo' has no attribute 'missing'
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_attributes"]


def lazy_attributes(module: str, table: Mapping[str, str], namespace: Mapping[str, Any]
                    ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` of the module named ``module``, whose globals are
    ``namespace``: each name of ``table`` read from ``reduced_odes.<table[name]>``."""

    def __getattr__(name: str) -> Any:
        if name not in table:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        # Not cached: the name always reads its module's current attribute (a test that
        # patches ``_integrate.solve`` must not leave a stale copy behind in the package).
        return getattr(importlib.import_module(f"reduced_odes.{table[name]}"), name)

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(table))

    return __getattr__, __dir__
