"""The engine stays in short pieces: no file over 450 lines, no function over 60.

Lengths are read from the syntax tree (a function's lines run from its ``def`` to its last
statement, docstring included), over the engine: ``reduced_odes/`` without the built-in
models, which are examples of the author API rather than engine code.  One file is left out
of the file limit only: ``_native/_bdf.py`` is SciPy's BDF ported line by line (913 lines),
kept whole so that every deviation can be read against SciPy's; its functions keep the limit.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "reduced_odes"
#: The line-by-line port of SciPy's BDF stepper (see the module docstring).
EXEMPT = frozenset({PACKAGE / "_native" / "_bdf.py"})
MAX_FILE_LINES = 450
MAX_FUNCTION_LINES = 60


def _engine_files(exempt: frozenset[Path] = frozenset()) -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py")
                  if "models" not in p.relative_to(PACKAGE).parts and p not in exempt)


def _long_functions(source: str, limit: int) -> list[tuple[str, int, int]]:
    """``(name, first line, lines)`` of every function (methods and nested ones included)
    longer than ``limit`` lines."""
    return [(node.name, node.lineno, node.end_lineno - node.lineno + 1)
            for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.end_lineno - node.lineno + 1 > limit]


def test_the_engine_is_found():
    """A guard for the two tests below: they would pass vacuously on an empty list."""
    names = {p.name for p in _engine_files()}
    assert {"_integrate.py", "_sweep.py", "_verify.py", "cli.py"} <= names
    assert not any("models" in p.parts for p in _engine_files())


def test_no_engine_file_exceeds_450_lines():
    long = {str(p.relative_to(PACKAGE)): lines for p in _engine_files(EXEMPT)
            if (lines := len(p.read_text().splitlines())) > MAX_FILE_LINES}
    assert long == {}


def test_no_engine_function_exceeds_60_lines():
    long = {str(p.relative_to(PACKAGE)): found for p in _engine_files()
            if (found := _long_functions(p.read_text(), MAX_FUNCTION_LINES))}
    assert long == {}


def test_the_length_check_counts_the_docstring_and_finds_nested_functions():
    """The checker itself, on sources whose lengths are known."""
    body = "\n".join(f"    x{i} = {i}" for i in range(57))
    at_limit = f'def f():\n    """Doc."""\n{body}\n    return x0\n'  # 60 lines
    assert _long_functions(at_limit, 60) == []
    assert _long_functions(at_limit.replace('"""Doc."""', '"""Doc.\n\n    More."""'), 60) == [
        ("f", 1, 62)]
    nested = "def outer():\n    def inner():\n" + "\n".join(f"        y{i} = {i}" for i in range(4))
    assert _long_functions(nested + "\n    return inner\n", 4) == [("outer", 1, 7), ("inner", 2, 5)]
