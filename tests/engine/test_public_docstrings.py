"""Every public name has a numpydoc docstring with an example that runs.

Public names: ``reduced_odes.__all__``, ``reduced_odes.author.__all__`` (STABLE and
PROVISIONAL) and the ``__all__`` of each built-in model package.  A class, a function
or an instance of a class of the package (a model's ``MODEL``) needs an ``Examples``
section with at least one doctest line that runs (not ``# doctest: +SKIP``); a
class's example may be on the class docstring.  The doctests themselves run with
the suite (``--doctest-modules``).  A plain value (a number, a string, a tuple, a
mapping, a SymPy symbol) has no docstring of its own: its ``#:`` comment is its
documentation, and it is left out here.
"""

from __future__ import annotations

import importlib
import inspect

import pytest

import reduced_odes
import reduced_odes.author as author
from reduced_odes._registry import _builtin

BUILTIN = sorted(_builtin())
PACKAGES = ["reduced_odes", "reduced_odes.author", "reduced_odes.models",
            *(f"reduced_odes.models.{name}" for name in BUILTIN)]


def _documented(obj) -> bool:
    """Whether ``obj`` carries a docstring of its own (or its class's): not a plain value."""
    if inspect.isclass(obj) or inspect.isroutine(obj):
        return True
    return type(obj).__module__.split(".")[0] == "reduced_odes"


def _public() -> list[tuple[str, str]]:
    """``(package, name)`` of every public name that carries a docstring."""
    names = []
    for package in PACKAGES:
        module = importlib.import_module(package)
        names += [(package, name) for name in module.__all__
                  if _documented(getattr(module, name))]
    return names


def _examples(doc: str) -> list[str]:
    """The lines of the numpydoc ``Examples`` section of ``doc`` (to the next section)."""
    lines = doc.splitlines()
    for i in range(len(lines) - 1):
        if lines[i].strip() == "Examples" and set(lines[i + 1].strip()) == {"-"}:
            section = []
            for k in range(i + 2, len(lines)):
                if k + 1 < len(lines) and lines[k + 1].strip() and set(
                        lines[k + 1].strip()) == {"-"} and lines[k].strip():
                    break  # the next section's title
                section.append(lines[k])
            return section
    return []


def _runs(line: str) -> bool:
    return line.lstrip().startswith(">>>") and "doctest: +SKIP" not in line


@pytest.mark.parametrize("package, name", [pytest.param(*pair, id=".".join(pair))
                                           for pair in _public()])
def test_public_name_has_an_example_that_runs(package, name):
    obj = getattr(importlib.import_module(package), name)
    doc = inspect.getdoc(obj) or ""
    examples = _examples(doc)
    assert examples, f"{package}.{name}: no numpydoc 'Examples' section"
    assert any(_runs(line) for line in examples), (
        f"{package}.{name}: every example line is skipped (# doctest: +SKIP)")


def test_the_enumeration_sees_every_kind_of_public_name():
    """The stable and provisional author names, the package's and each model's are all
    enumerated; plain values alone are left out."""
    found = set(_public())
    assert ("reduced_odes", "solve") in found and ("reduced_odes.author", "Model") in found
    assert ("reduced_odes.author", "run_sweep") in found  # provisional
    assert all(any(p == f"reduced_odes.models.{m}" for p, _ in found) for m in BUILTIN)
    assert ("reduced_odes", "__version__") not in found
    assert ("reduced_odes.author", "SEQ_LEN") not in found
    assert not _documented(author.STABLE) and _documented(reduced_odes.solve)


def test_a_skipped_example_does_not_count():
    doc = "Summary.\n\nExamples\n--------\n>>> slow()  # doctest: +SKIP\n"
    assert _examples(doc) == [">>> slow()  # doctest: +SKIP"]
    assert not any(_runs(line) for line in _examples(doc))
    assert _examples("Summary.\n\nNotes\n-----\n>>> 1\n") == []
    doc = "S.\n\nExamples\n--------\n>>> 1\n1\n\nSee Also\n--------\nother\n"
    assert _examples(doc) == [">>> 1", "1", ""]
