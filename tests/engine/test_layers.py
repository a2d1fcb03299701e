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


def _graph(typing: bool = False):
    """The package's import graph, as import-linter builds it (typing-only imports left out,
    as ``exclude_type_checking_imports`` says), or with them (``typing``): every import
    statement, at module level, in a function or under ``if TYPE_CHECKING:``."""
    import grimp

    return grimp.build_graph(PACKAGE, cache_dir=None, exclude_type_checking_imports=not typing)


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


def test_the_import_graph_has_no_cycle_counting_typing_only_imports():
    """A type checker follows ``if TYPE_CHECKING:`` imports too: no cycle there either (the
    model contract names no higher layer's type, not even for typing)."""
    _require("grimp")
    cycle = _cycle(_graph(typing=True))
    assert not cycle, "import cycle (typing-only imports counted): " + " -> ".join(cycle)


def test_the_typing_graph_holds_type_checking_imports(tmp_path, monkeypatch):
    """An import under ``if TYPE_CHECKING:`` is an edge of the graph the second check walks."""
    _require("grimp")
    import grimp

    package = tmp_path / "probe_typing"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from typing import TYPE_CHECKING\n"
                                  "if TYPE_CHECKING:\n    from . import b\n")
    (package / "b.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    for typing, expected in ((False, False), (True, True)):
        graph = grimp.build_graph("probe_typing", cache_dir=None,
                                  exclude_type_checking_imports=not typing)
        assert graph.direct_import_exists(importer="probe_typing.a",
                                          imported="probe_typing.b") is expected


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
                           "tests", "benchmarks", "tools"], cwd=ROOT, capture_output=True,
                          text=True, timeout=HANG_GUARD_S)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("module, path", [("reduced_odes", "reduced_odes/__init__.py"),
                                          ("reduced_odes.author", "reduced_odes/author.py")])
def test_every_lazy_name_is_visible_to_type_checkers(module, path):
    """The lazy re-exports (``_LAZY``: name -> module, imported on first use) and the
    ``if TYPE_CHECKING:`` block a type checker reads name the same names from the same
    modules, each re-exported as ``name as name`` (``reduced_odes.author`` takes the names
    the package exports from the package, which maps them to the same modules)."""
    import ast
    import importlib

    package = importlib.import_module("reduced_odes")._LAZY
    tree = ast.parse((ROOT / path).read_text())
    typed = {}
    for node in tree.body:
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for item in node.body:
                assert isinstance(item, ast.ImportFrom), ast.dump(item)
                source = (item.module or "").removeprefix("reduced_odes.").lstrip(".")
                for alias in item.names:
                    assert alias.asname == alias.name, f"{alias.name}: not re-exported"
                    typed[alias.name] = package[alias.name] if source == "reduced_odes" else source
    assert typed == importlib.import_module(module)._LAZY


def test_the_typing_blocks_are_as_the_tool_writes_them():
    """``tools/typing_block.py`` writes both blocks from the tables; ``--check`` finds them
    current (a table changed without rerunning it fails here)."""
    done = subprocess.run([sys.executable, "tools/typing_block.py", "--check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_module_of_the_layer_contract_is_on_the_architecture_page():
    """docs/architecture.md names every module the layer contract places (its table, as
    ``name.py`` or ``name/``), and names no engine module that does not exist."""
    import re
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    layers = next(c for c in config["tool"]["importlinter"]["contracts"] if c["id"] == "layers")
    modules = [m.strip() for layer in layers["layers"] for m in re.split("[:|]", layer)]
    page = (ROOT / "docs" / "architecture.md").read_text()
    for module in modules:
        named = (f"reduced_odes.{module}" in page if module in ("models", "author")
                 else f"`{module}.py`" in page or f"`{module}/`" in page)
        assert named, f"docs/architecture.md does not name {module}"
    package = ROOT / PACKAGE
    for name in set(re.findall(r"`(_\w+)(?:\.py|/)`", page)):
        found = [package / f"{name}.py", package / name, package / "_native" / f"{name}.py"]
        assert any(p.exists() for p in found), f"docs/architecture.md names {name}: no module"


def test_the_command_line_starts_without_the_analysis_layers_libraries():
    """Every command starts by importing the command line, the analysis commands included:
    their SciPy (optimize and stats, 1.6 s to import) is imported where it is used, so that
    ``--help``, ``solve`` or a sweep's worker does not pay for it.  SymPy, matplotlib and
    numba are imported by the commands that use them."""
    heavy = ("scipy.optimize", "scipy.stats", "sympy", "matplotlib", "numba")
    code = (f"import sys, reduced_odes.cli; "
            f"print(sorted(m for m in {heavy!r} if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=HANG_GUARD_S, check=True)
    assert done.stdout.strip() == "[]", done.stdout
