"""Grid files: a TOML ``[grid]`` (crossed lists) with an optional ``[fixed]`` table, read as
data and expanded into settings (:data:`GridPoint` dicts).

A grid file holds values only: numbers, strings and booleans, nested at most
:data:`MAX_GRID_DEPTH` deep, in at most :data:`MAX_GRID_SETTINGS` settings, each checked
before any is made.  Reading one runs no code and imports nothing.
"""

from __future__ import annotations

import itertools
import math
import os
import tomllib
from collections.abc import Iterable, Mapping
from typing import Any

from ._params import ParameterError, check_keys
from ._results import digest, numbers_merged, setting_key

__all__ = ["MAX_GRID_DEPTH", "MAX_GRID_SETTINGS", "GridPoint", "expand_grid", "grid_size",
           "load_grid"]

#: One point of a grid: parameter (or solver option) name -> value.  A plain dict, as read
#: from the file; :class:`reduced_odes.Setting` is what it becomes once checked.
GridPoint = dict[str, Any]

#: The most settings a grid file may expand to.  Every setting is held in memory and
#: checked before anything runs: at this limit, ``reduced-odes sweep`` takes about 0.5 GB
#: and 35 s before its first result (deep_linear, two cores), and both grow in proportion.
#: A larger grid is refused before it is expanded: split it into several files (run one
#: after the other, into one results file if you like).
MAX_GRID_SETTINGS = 1_000_000
#: How deep a grid value may nest: an axis (a list) of values, each of which may be a list
#: or a table itself.  Deeper nesting is no parameter value, and bounds every walk over a
#: setting (its key, its JSON).
MAX_GRID_DEPTH = 2


def expand_grid(spec: Mapping[str, Any]) -> list[GridPoint]:
    """Cartesian product of a spec mapping names to a list (or tuple) of values or a scalar.

    The first parameter varies slowest; values keep their listed order.

    Examples
    --------
    >>> expand_grid({"L": [50, 200], "closure": "linear"})
    [{'L': 50, 'closure': 'linear'}, {'L': 200, 'closure': 'linear'}]
    >>> [(s["a"], s["b"]) for s in expand_grid({"a": [1, 2], "b": [3, 4]})]
    [(1, 3), (1, 4), (2, 3), (2, 4)]
    """
    axes = [value if isinstance(value, list | tuple) else [value] for value in spec.values()]
    return [dict(zip(spec, combo, strict=True)) for combo in itertools.product(*axes)]


def grid_size(spec: Mapping[str, Any]) -> int:
    """How many settings :func:`expand_grid` makes of ``spec``, without making them.

    Examples
    --------
    >>> grid_size({"L": [50, 200, 400], "sigma": [1e-2, 1e-4], "closure": "linear"})
    6
    """
    return math.prod(len(v) if isinstance(v, list | tuple) else 1 for v in spec.values())


def load_grid(path: str | os.PathLike[str], *, keys: Iterable[str] | None = None
              ) -> list[GridPoint]:
    """Read settings from a TOML file with a ``[grid]`` table and an optional ``[fixed]`` table.

    ``[grid]`` is expanded with :func:`expand_grid`; several ``[[grid]]`` tables give the
    union of their products without duplicates (equal numbers are equal: see
    :func:`setting_key`).  ``[fixed]`` is merged into every setting.  Raises
    :class:`ValueError` naming the file if it is not valid TOML of that shape, has a key
    outside ``keys`` (if given), a date or time, a value nested deeper than
    :data:`MAX_GRID_DEPTH`, or more settings than :data:`MAX_GRID_SETTINGS` (counted before
    any is made).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "grid.toml"
    >>> _ = path.write_text('[grid]\\nL = [50, 200, 200.0]\\n[fixed]\\nmethod = "LSODA"\\n')
    >>> load_grid(path)
    [{'L': 50, 'method': 'LSODA'}, {'L': 200, 'method': 'LSODA'}]
    """
    grids, fixed = _read_grid(path)
    for table in (*grids, fixed):
        _check_values(path, table, keys)
    for grid in grids:
        if clash := sorted(set(grid) & set(fixed)):
            raise ValueError(f"{path}: parameter(s) {clash} appear in both [grid] and [fixed]")
        if empty := sorted(k for k, v in grid.items() if isinstance(v, list) and not v):
            raise ValueError(f"{path}: [grid] {', '.join(empty)} = [] leaves no setting; "
                             f"allowed: a non-empty list or a single value")
    size = sum(grid_size(grid) for grid in grids)
    if size > MAX_GRID_SETTINGS:
        axes = " + ".join(" x ".join(str(len(v)) for v in grid.values() if isinstance(v, list))
                          or "1" for grid in grids)
        raise ValueError(f"{path}: the grid has {size:,} settings ({axes}); allowed: at most "
                         f"{MAX_GRID_SETTINGS:,} in one file: split it into several")
    products = [[setting | fixed for setting in expand_grid(_distinct(grid))] for grid in grids]
    if len(products) == 1:  # distinct values on every axis: distinct settings
        return products[0]
    unique: dict[str, GridPoint] = {}
    for setting in itertools.chain.from_iterable(products):
        unique.setdefault(setting_key(setting), setting)
    return list(unique.values())


def _distinct(spec: Mapping[str, Any]) -> dict[str, Any]:
    """``spec`` with each axis's repeated values (equal numbers: ``1`` and ``1.0``) listed
    once, at their first place."""
    def once(values: list) -> list:
        first: dict[str, Any] = {}
        for value in values:
            first.setdefault(digest(numbers_merged(value)), value)
        return list(first.values())

    return {k: once(v) if isinstance(v, list) else v for k, v in spec.items()}


def _read_grid(path: str | os.PathLike[str]) -> tuple[list[dict], dict]:
    """The ``[grid]`` tables and the ``[fixed]`` table of a grid file; ValueError naming the
    file if it is not valid TOML of that shape."""
    try:
        with open(path, "rb") as fh:
            doc = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path}: invalid TOML: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: invalid TOML: not UTF-8 text (byte {exc.start})") from None
    except RecursionError:  # the parser recurses once per level of nesting
        raise ValueError(f"{path}: a value nests too deep for the TOML parser; allowed: at "
                         f"most {MAX_GRID_DEPTH} levels (a list of values, each a list or "
                         f"a table at most)") from None
    if unknown := sorted(set(doc) - {"grid", "fixed"}):
        raise ValueError(f"{path}: unknown top-level key(s) {unknown}; expected [grid], [fixed]")
    grids, fixed = doc.get("grid"), doc.get("fixed", {})
    grids = [grids] if isinstance(grids, dict) else grids
    if not grids or not isinstance(grids, list) or not all(isinstance(g, dict) for g in grids):
        raise ValueError(f"{path}: needs a [grid] table or [[grid]] tables")
    if not isinstance(fixed, dict):
        raise ValueError(f"{path}: [fixed] must be a table")
    return grids, fixed


#: The values a grid may hold: TOML's, less its dates and times (no parameter takes one).
_SCALARS = (str, int, float, bool)


def _check_values(path: str | os.PathLike[str], table: dict, keys: Iterable[str] | None
                  ) -> None:
    """ValueError naming the file if ``table`` has a key outside ``keys`` (if given), or a
    value that is a date or time or nests deeper than :data:`MAX_GRID_DEPTH`."""
    if keys is not None:
        allowed = list(keys)
        try:
            check_keys("grid key(s)", table, allowed)
        except ParameterError as exc:
            raise ParameterError(f"{path}: {exc}") from None
    for key, value in table.items():
        stack = [(value, 0)]
        while stack:  # no recursion: a value may nest as deep as the parser allowed
            item, depth = stack.pop()
            if isinstance(item, list | dict):
                if depth == MAX_GRID_DEPTH:
                    raise ValueError(f"{path}: {key} nests deeper than {MAX_GRID_DEPTH} "
                                     f"levels; allowed: a value, or a list of values, each a "
                                     f"list or a table at most")
                stack += [(v, depth + 1) for v in (item.values() if isinstance(item, dict)
                                                   else item)]
            elif not isinstance(item, _SCALARS):
                raise ValueError(f"{path}: {key} = {item} is a {type(item).__name__}; "
                                 f"allowed: numbers, strings, true or false")

