"""Derivation documents: a model's derivation as Markdown and LaTeX, written atomically.

:class:`DerivationDocuments` declares a model's documents once (file stem, heading,
introduction, sections, how an expression is printed); its :meth:`~DerivationDocuments.export`
is the model's ``export_derivations`` hook, so no model writes the render-and-write pair
again.  :func:`render_documents` and :func:`write_documents` are the two steps, for a
document of another shape.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from ._io import atomic_write

__all__ = ["DerivationDocuments", "render_documents", "write_documents"]


def render_documents(stem: str, title: str, intro: str, sections, named, *,
                     intro_in_latex: bool = True) -> dict[str, str]:
    """A derivation as ``<stem>.md`` (Markdown with ``$$`` math) and ``<stem>.tex`` (LaTeX).

    Parameters
    ----------
    stem, title, intro : str
        File stem, heading and the paragraph under it (Markdown; backticks are dropped in
        LaTeX).
    sections : iterable of (str, iterable of (str, object))
        Section titles, each with its ``(label, expression)`` items in reading order.
    named : callable
        ``named(expression) -> [(name, latex)]``: the expression's LaTeX, as named
        subexpressions (``name = latex``) followed by ``("", latex)``.
    intro_in_latex : bool
        False: the LaTeX document opens with the heading alone (the Markdown keeps
        the paragraph).

    Examples
    --------
    >>> docs = render_documents("toy", "Toy", "A `toy`.", [("Loss", [("L", "x^2")])],
    ...                         lambda expr: [("", expr)])
    >>> print(docs["toy.md"])
    # Toy
    <BLANKLINE>
    A `toy`.
    <BLANKLINE>
    ## Loss
    <BLANKLINE>
    - L:
    <BLANKLINE>
      $$ x^2 $$
    <BLANKLINE>
    <BLANKLINE>
    """
    md = [f"# {title}", "", intro, ""]
    tex = [r"\documentclass{article}", r"\usepackage{amsmath}", r"\allowdisplaybreaks",
           r"\begin{document}", rf"\section*{{{title}}}"]
    if intro_in_latex:
        tex += [intro.replace("`", ""), ""]
    for heading, items in sections:
        md += [f"## {heading}", ""]
        tex += [rf"\subsection*{{{heading.replace('`', '')}}}"]
        for label, expr in items:
            md += [f"- {label}:", ""]
            tex += [r"\paragraph{" + label.replace("_", r"\_") + "}"]
            for name, latex in named(expr):
                line = f"{name} = {latex}" if name else latex
                md += [f"  $$ {line} $$", ""]
                tex += [r"\[", line, r"\]"]
    tex += [r"\end{document}"]
    return {f"{stem}.md": "\n".join(md) + "\n", f"{stem}.tex": "\n".join(tex) + "\n"}


def write_documents(directory: str | Path, documents: dict[str, str]) -> list[Path]:
    """Write text ``documents`` (file name -> text) into ``directory``, atomically.

    A file whose text is unchanged is not rewritten, so its timestamp stays.

    Examples
    --------
    >>> import tempfile
    >>> [p.name for p in write_documents(tempfile.mkdtemp(), {"a.md": "# A\\n"})]
    ['a.md']
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, text in documents.items():
        path = directory / name
        if not (path.exists() and path.read_text(encoding="utf-8") == text):
            atomic_write(path, text)
        paths.append(path)
    return paths


@dataclass(frozen=True)
class DerivationDocuments:
    """A model's derivation documents ``<stem>.md`` and ``<stem>.tex``: its ``export`` role.

    Parameters
    ----------
    stem, title, intro : str
        File stem, heading and the paragraph under it, as in :func:`render_documents`.
    sections : callable
        ``sections() -> [(section title, [(label, expression)])]``, called at each render:
        the derivation runs when the documents are asked for, not when the model's package
        is imported.
    named : callable
        ``named(expression) -> [(name, latex)]``, as in :func:`render_documents`.
    intro_in_latex : bool
        False: the LaTeX document opens with the heading alone.

    Examples
    --------
    A model's ``export`` module declares its documents and names the hook:

    >>> import tempfile
    >>> DOCUMENTS = DerivationDocuments("toy", "Toy", "A `toy`.",
    ...                                 lambda: [("Loss", [("L", "x^2")])],
    ...                                 lambda expr: [("", expr)])
    >>> export_derivations = DOCUMENTS.export
    >>> [path.name for path in export_derivations(tempfile.mkdtemp())]
    ['toy.md', 'toy.tex']
    >>> DOCUMENTS.render()["toy.md"].splitlines()[:3]
    ['# Toy', '', 'A `toy`.']
    """

    stem: str
    title: str
    intro: str
    sections: Callable[[], Iterable]
    named: Callable[[object], list[tuple[str, str]]]
    intro_in_latex: bool = True

    def render(self) -> dict[str, str]:
        """The Markdown and LaTeX documents, by file name (:func:`render_documents`)."""
        return render_documents(self.stem, self.title, self.intro, self.sections(), self.named,
                                intro_in_latex=self.intro_in_latex)

    def export(self, directory: str | Path = "derivations") -> list[Path]:
        """Write the documents into ``directory`` (:func:`write_documents`: unchanged bytes
        are not rewritten) and return their paths: the ``export_derivations`` hook."""
        return write_documents(directory, self.render())
