"""Sphinx configuration of the reduced-odes documentation.

Build: ``pip install '.[docs]' && sphinx-build -W --keep-going -b html docs docs/_build``.
The pages are Markdown (MyST), the API reference comes from the numpydoc docstrings.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from pathlib import Path

from docutils.parsers.rst import Directive, directives
from docutils.statemachine import StringList

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the work tree's package, whatever is installed

import reduced_odes  # noqa: E402

project = "reduced-odes"
author = "the reduced-odes developers"
copyright = "the reduced-odes developers, BSD-3-Clause"
release = version = reduced_odes.__version__

extensions = [
    "myst_parser",
    "numpydoc",
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build"]

# MyST: ::: fences, definition lists, $...$ and $$...$$ for the derivations, heading anchors.
myst_enable_extensions = ["colon_fence", "deflist", "dollarmath"]
myst_heading_anchors = 3

# Autodoc and numpydoc: members are listed by autodoc, in source order; numpydoc renders
# the sections.  Nothing is generated into docs/: a build writes only into its output.
autodoc_member_order = "bysource"
autodoc_typehints = "none"  # numpydoc's Parameters sections say the types in words
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False

try:  # the docs extra brings furo; the built-in theme keeps a bare Sphinx working
    import furo  # noqa: F401

    html_theme = "furo"
except ImportError:
    html_theme = "alabaster"
html_title = f"reduced-odes {release}"
html_static_path: list[str] = []


class PublicNames(Directive):
    """``.. public-names:: module``: every name of ``module.__all__``, documented by autodoc.

    Names are grouped by the module that defines them (a group's heading is the first
    sentence of that module's docstring), so the reference follows the package's layout
    and a name added to ``__all__`` appears without editing a page.  ``:flat:`` makes one
    group of them all, headed by ``module``'s own docstring; ``:exclude:`` leaves names
    out (separated by spaces).
    """

    required_arguments = 1
    option_spec = {"exclude": directives.unchanged, "flat": directives.flag}

    def run(self):
        module_name = self.arguments[0]
        module = importlib.import_module(module_name)
        excluded = set(self.options.get("exclude", "").split())
        groups: dict[str, list[str]] = {}
        for name in sorted(module.__all__, key=str.lower):
            if name in excluded:
                continue
            obj = getattr(module, name)
            home = getattr(obj, "__module__", None) if _documented_by_home(obj) else None
            if "flat" in self.options:
                home = module_name
            groups.setdefault(home or module_name, []).append(name)
        lines = [f".. currentmodule:: {module_name}", ""]
        for home in sorted(groups, key=_rank):
            lines += _group(module_name, home, groups[home])
        self.state_machine.insert_input(StringList(lines, source=f"<public-names {module_name}>"),
                                        f"<public-names {module_name}>")
        return []


def _documented_by_home(obj) -> bool:
    return inspect.isclass(obj) or inspect.isroutine(obj)


#: Groups in the pipeline's order (derive, compile, integrate, sweep, verify); a module
#: not listed here comes after these, by name.
ORDER = ["_contract", "_stop_rules", "_claims", "_errors", "_params", "_symbolic",
         "_gaussian", "_activations", "_positions", "_compile", "_integrate", "_trajectory",
         "_sweep", "_sweep_command",
         "_verify", "_registry", "_provenance"]


def _rank(home: str) -> tuple[int, str]:
    """Pipeline order; the package's own constants last."""
    last = home.rsplit(".", 1)[-1]
    if "." not in home:
        return (len(ORDER) + 1, home)
    return (ORDER.index(last) if last in ORDER else len(ORDER), home)


def _title(module_name: str, home: str) -> str:
    """The first sentence of the defining module's docstring."""
    if home == module_name == "reduced_odes":
        return "Constants"
    doc = inspect.getdoc(importlib.import_module(home)) or home
    paragraph = " ".join(doc.split("\n\n")[0].split())
    return paragraph.split(". ")[0].rstrip(".:")


def _group(module_name: str, home: str, names: list[str]) -> list[str]:
    title = _title(module_name, home)
    lines = [title, "~" * len(title), "", f"*Defined in* ``{home}``.", ""]
    for name in names:
        obj = getattr(importlib.import_module(module_name), name)
        if inspect.isclass(obj):
            lines += [f".. autoclass:: {name}", "   :members:", ""]
        elif inspect.isroutine(obj):
            lines += [f".. autofunction:: {name}", ""]
        else:
            lines += [f".. py:data:: {name}", f"   :value: {obj!r}", ""]
    return lines


def setup(app):
    app.add_directive("public-names", PublicNames)
    return {"parallel_read_safe": True}
