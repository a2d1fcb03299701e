"""Write the ``if TYPE_CHECKING:`` blocks of ``reduced_odes/__init__.py`` and
``reduced_odes/author.py`` from their lazy tables (``_LAZY``: name -> engine module).

A type checker cannot read a table, so each module spells its names out once, as
``from module import name as name`` (a re-export), one statement a name.  ``reduced_odes``
imports each name from its engine module; ``reduced_odes.author`` imports from
``reduced_odes`` every name the package exports from the same module, and from its engine
module only the rest (the author's own helpers).  No name is mapped to its module twice.

Run from the repository root after changing a table::

    python tools/typing_block.py           # rewrite the two blocks
    python tools/typing_block.py --check   # exit 1 if a block differs from its table

``tests/engine/test_layers.py`` checks that the blocks and the tables agree.
"""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Each module's block: (module, file, prefix of its engine modules in the block).
BLOCKS = (("reduced_odes", "reduced_odes/__init__.py", "."),
          ("reduced_odes.author", "reduced_odes/author.py", "reduced_odes."))
HEADER = ("if TYPE_CHECKING:  # the names as a type checker sees them (``X as X``: re-exported);\n"
          "    # at run time each is imported on first use (``__getattr__``)\n")


def _isort_order(name: str) -> tuple[int, str, str]:
    """Constants, then classes, then the rest, each case-insensitively: ruff's isort order."""
    kind = 0 if len(name) > 1 and name.isupper() else 1 if name[0].isupper() else 2
    return kind, name.lower(), name


def _imports(source: str, names: list[str]) -> str:
    """``from source import name as name``, one statement a name (in isort's order): a
    re-export a line, as a type checker reads it and as a diff shows it."""
    return "".join(f"    from {source} import {name} as {name}\n"
                   for name in sorted(names, key=_isort_order))


def block(module: str, prefix: str) -> str:
    """The ``if TYPE_CHECKING:`` block of ``module`` (header and imports)."""
    table = importlib.import_module(module)._LAZY
    package = importlib.import_module("reduced_odes")._LAZY if module != "reduced_odes" else {}
    shared = sorted(name for name, source in table.items() if package.get(name) == source)
    by_module: dict[str, list[str]] = {}
    for name, source in table.items():
        if name not in shared:
            by_module.setdefault(source, []).append(name)
    imports = [_imports("reduced_odes", shared)]
    imports += [_imports(f"{prefix}{source}", by_module[source]) for source in sorted(by_module)]
    return HEADER + "".join(imports)


def _span(text: str) -> tuple[int, int]:
    """The first and last line (0-based, end exclusive) of the block in ``text``."""
    node = next(n for n in ast.parse(text).body
                if isinstance(n, ast.If) and getattr(n.test, "id", None) == "TYPE_CHECKING")
    return node.lineno - 1, node.end_lineno


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(ROOT))
    stale = []
    for module, path, prefix in BLOCKS:
        file = ROOT / path
        lines = file.read_text().splitlines(keepends=True)
        first, last = _span("".join(lines))
        new = "".join(lines[:first]) + block(module, prefix) + "".join(lines[last:])
        if new != "".join(lines):
            stale.append(path)
            if "--check" not in argv:
                file.write_text(new)
    verb = "differs from its table" if "--check" in argv else "rewritten"
    for path in stale:
        print(f"{path}: typing block {verb}")
    return 1 if stale and "--check" in argv else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
