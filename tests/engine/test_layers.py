"""The engine's layers hold, and its import graph has no cycle, function-level imports included.

The layers, the rule that models reach no private module, and the ban on cycles
between sibling modules are import-linter contracts in ``pyproject.toml``
(``[tool.importlinter]``); the first test runs them as CI does.  The second asks
grimp (the graph import-linter builds) for a cycle between any two modules of the
package, not only between siblings.  An upward import then fails the test suite.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: A hang guard only, never a measure of speed (no test depends on the clock): a correct
#: run takes seconds to minutes even on a loaded machine; a hung one fails within CI's time.
HANG_GUARD_S = 1800
PACKAGE = "reduced_odes"


def _require(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed: pip install 'reduced-odes[test]' "
                    f"(import-linter brings grimp)")


def _graph():
    """The package's import graph, as import-linter builds it (typing-only imports left out,
    as ``exclude_type_checking_imports`` says)."""
    import grimp

    return grimp.build_graph(PACKAGE, cache_dir=None, exclude_type_checking_imports=True)


def _cycle(graph) -> list[str]:
    """One import cycle of ``graph`` (``[a, ..., a]``), or [] if it has none: for each
    direct import ``a -> b``, the shortest chain of imports from ``b`` back to ``a``."""
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back:
                return [importer, *back]
    return []


def test_the_import_contracts_hold():
    """``lint-imports`` on this checkout: layers, no private reach, no cycle."""
    _require("importlinter")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    done = subprocess.run(
        [sys.executable, "-c", "from importlinter.cli import lint_imports\n"
                               "raise SystemExit(lint_imports(no_cache=True, no_logo=True))"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 kept, 0 broken" in done.stdout, done.stdout


def test_the_import_graph_has_no_cycle():
    _require("grimp")
    cycle = _cycle(_graph())
    assert not cycle, "import cycle: " + " -> ".join(cycle)


def test_the_graph_holds_function_level_imports(tmp_path, monkeypatch):
    """An import inside a function is an edge of the graph the cycle check walks."""
    _require("grimp")
    import grimp

    package = tmp_path / "probe_layers"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("def f():\n    from . import b\n    return b\n")
    (package / "b.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    graph = grimp.build_graph("probe_layers", cache_dir=None, exclude_type_checking_imports=True)
    assert graph.direct_import_exists(importer="probe_layers.a", imported="probe_layers.b")


def test_the_cycle_check_finds_a_cycle():
    """The check itself, on a graph with one cycle through three modules."""
    _require("grimp")
    import grimp

    graph = grimp.ImportGraph()
    for importer, imported in (("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"), ("p.d", "p.a")):
        graph.add_import(importer=importer, imported=imported)
    assert _cycle(graph) == ["p.a", "p.b", "p.c", "p.a"]
    graph.remove_import(importer="p.c", imported="p.a")
    assert _cycle(graph) == []


def test_ruff_finds_nothing():
    """``ruff check`` (rules in ``pyproject.toml``; the test extra pins its minor version,
    whose rule set is fixed) over the package, the tests and the benchmarks."""
    _require("ruff")
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "reduced_odes",
                           "tests", "benchmarks"], cwd=ROOT, capture_output=True, text=True,
                          timeout=HANG_GUARD_S)
    assert done.returncode == 0, done.stdout + done.stderr
