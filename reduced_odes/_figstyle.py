"""The house style of every model's figures: palette, sizes, helpers, deterministic output.

A model's figure code draws on a :func:`new_figure`, shades its stages with
:func:`shade_spans`, stamps provenance with :func:`stamp` and writes with
:func:`save_figure`, whose bytes are the same on every run (no timestamps).
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ._io import atomic_write
from ._params import ParameterError
from ._results import read_json
from ._version import __version__

__all__ = ["COLUMN_WIDTH", "FORMATS", "OKABE_ITO", "SERIES", "SHADES", "STYLE", "TIME_LABEL",
           "DataFigures", "as_array", "draw_from_data", "house_style", "log_time_axis", "log_x",
           "new_figure", "parse_formats", "render", "save_each_format", "save_figure", "sci",
           "shade_spans", "stamp"]

#: The formats figures are written in (the `figures` command's default, in this order).
FORMATS = ("png", "pdf")
#: Okabe & Ito (2008), the colour-blind safe palette.
OKABE_ITO = {
    "black": "#000000", "orange": "#E69F00", "sky_blue": "#56B4E9",
    "bluish_green": "#009E73", "yellow": "#F0E442", "blue": "#0072B2",
    "vermillion": "#D55E00", "reddish_purple": "#CC79A7",
}
#: Series that are not a mechanism (several L, several sigma): colours with markers.
SERIES = [(OKABE_ITO[c], m) for c, m in (("orange", "o"), ("bluish_green", "s"),
                                         ("reddish_purple", "^"), ("sky_blue", "D"),
                                         ("black", "v"), ("yellow", "P"))]
#: Stage shading: light neutral greys, so the data colours stay the only colours.
SHADES = ("#F2F2F2", "#DCDCDC", "#BDBDBD", "#E6E6E6")
#: Single-column width (inches) and the type sizes that stay readable there.
COLUMN_WIDTH = 3.4
_DPI = 300
STYLE = {
    "font.family": "DejaVu Sans", "font.size": 7.0, "axes.titlesize": 7.0,
    "axes.labelsize": 7.0, "xtick.labelsize": 6.5, "ytick.labelsize": 6.5,
    "legend.fontsize": 6.0, "figure.titlesize": 7.5, "lines.linewidth": 1.1,
    "lines.markersize": 3.5, "axes.linewidth": 0.6, "xtick.major.width": 0.6,
    "ytick.major.width": 0.6, "xtick.minor.width": 0.4, "ytick.minor.width": 0.4,
    "xtick.major.size": 2.5, "ytick.major.size": 2.5, "xtick.minor.size": 1.5,
    "ytick.minor.size": 1.5, "legend.frameon": True, "legend.framealpha": 0.9,
    "legend.edgecolor": "0.8", "legend.handlelength": 2.0, "legend.borderaxespad": 0.4,
    "axes.titlepad": 3.0, "mathtext.fontset": "dejavusans", "pdf.fonttype": 42,
    "pdf.compression": 9, "savefig.dpi": _DPI, "figure.dpi": 100,
    "axes.unicode_minus": True, "path.simplify": True,
}
TIME_LABEL = "t (gradient-flow time)"


def house_style(plot):
    """Decorator: draw inside the house rc settings, so text added after the axes uses them too.

    Examples
    --------
    >>> @house_style
    ... def plot_note(document):
    ...     fig, (ax,) = new_figure(1.5, 1)
    ...     ax.text(0.5, 0.5, document["note"])
    ...     return fig
    >>> plot_note({"note": "plateau"}).axes[0].texts[0].get_fontsize()  # STYLE's, not 10
    7.0
    """
    import functools

    @functools.wraps(plot)
    def drawn(*args, **kwargs):
        import matplotlib

        with matplotlib.rc_context(STYLE):
            return plot(*args, **kwargs)

    return drawn


def as_array(values) -> np.ndarray:
    """A data file's list as floats, its ``null`` entries as NaN.

    Examples
    --------
    >>> as_array([1, None, 2.5]).tolist()
    [1.0, nan, 2.5]
    """
    return np.array([math.nan if v is None else v for v in values], dtype=float)


def parse_formats(text: str | Sequence[str]) -> list[str]:
    """``"png,pdf"`` -> ``["png", "pdf"]``, each checked.

    Examples
    --------
    >>> parse_formats("pdf,png")
    ['pdf', 'png']
    """
    items = text.split(",") if isinstance(text, str) else list(text)
    formats = [f.strip().lower().lstrip(".") for f in items if f.strip()]
    if not formats or any(f not in FORMATS for f in formats):
        raise ParameterError(f"format={text!r}; allowed: a comma-separated list of "
                             f"{', '.join(FORMATS)}")
    return list(dict.fromkeys(formats))


def new_figure(height: float, nrows: int, *, ncols: int = 1, sharex: bool = False,
               heights=None, width: float = COLUMN_WIDTH):
    """A constrained-layout figure in the house style and its axes (always an array).

    Examples
    --------
    >>> fig, axes = new_figure(2.0, 2, sharex=True)
    >>> len(axes), fig.get_size_inches().tolist()  # one column wide
    (2, [3.4, 2.0])
    """
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    with matplotlib.rc_context(STYLE):
        fig = Figure(figsize=(width, height), layout="constrained")
        FigureCanvasAgg(fig)
        axes = fig.subplots(nrows, ncols, sharex=sharex,
                            gridspec_kw={"height_ratios": heights} if heights else None)
    fig.get_layout_engine().set(h_pad=0.04, w_pad=0.04, hspace=0.04)
    return fig, np.atleast_1d(axes)


def sci(value: float) -> str:
    """``1e-4`` as mathtext ``10^{-4}`` (mantissa kept when it is not 1).

    Examples
    --------
    >>> sci(1e-4), sci(2.5e3)
    ('10^{-4}', '2.5\\\\times10^{3}')
    """
    mantissa, exponent = f"{value:.6e}".split("e")
    mantissa = mantissa.rstrip("0").rstrip(".")
    power = f"10^{{{int(exponent)}}}"
    return power if mantissa == "1" else fr"{mantissa}\times{power}"


def stamp(fig, name: str, *, subject: str = "", keywords: Sequence[str] = (),
          versions: Mapping | None = None, data: Sequence[str] = ()) -> None:
    """Attach the provenance (title, subject, keywords) that :func:`save_figure` writes.

    Examples
    --------
    >>> fig, _ = new_figure(1.5, 1)
    >>> stamp(fig, "stages", subject="losses", keywords=["model=toy"], data=["stages.json"])
    >>> fig._reduced_odes_meta["keywords"][1:]
    ['figure=stages', 'model=toy', 'data=stages.json']
    """
    words = [f"reduced-odes {__version__}", f"figure={name}", *keywords]
    if versions:
        words += [f"{k} {v}" for k, v in sorted(versions.items()) if k != "reduced-odes"]
    words += [f"data={d}" for d in data]
    text = f"reduced-odes {__version__} figure '{name}'" + (f", {subject}" if subject else "")
    fig._reduced_odes_meta = {"title": name, "subject": text, "keywords": words}


def log_x(ax, lo: float, hi: float) -> None:
    """Logarithmic x axis on ``[lo, hi]`` with unlabelled minor ticks.

    Examples
    --------
    >>> fig, (ax,) = new_figure(1.5, 1)
    >>> log_x(ax, 1e-3, 1e2)
    >>> ax.get_xscale(), [float(x) for x in ax.get_xlim()]
    ('log', [0.001, 100.0])
    """
    from matplotlib.ticker import LogLocator, NullFormatter

    ax.set_xscale("log")
    ax.set_xlim(lo, hi)
    ax.xaxis.set_minor_locator(LogLocator(base=10, subs=np.arange(2, 10) * 0.1, numticks=12))
    ax.xaxis.set_minor_formatter(NullFormatter())


def log_time_axis(ax, lo: float, hi: float) -> None:
    """:func:`log_x` with a major tick at every decade.

    Examples
    --------
    >>> fig, (ax,) = new_figure(1.5, 1)
    >>> log_time_axis(ax, 1e-2, 1e4)
    >>> [float(x) for x in ax.get_xticks() if 1e-2 <= x <= 1e4]
    [0.01, 0.1, 1.0, 10.0, 100.0, 1000.0, 10000.0]
    """
    from matplotlib.ticker import LogLocator

    log_x(ax, lo, hi)
    ax.xaxis.set_major_locator(LogLocator(base=10, numticks=12))


def shade_spans(ax, edges: Sequence[float], names: Sequence[str], labels: bool = True) -> bool:
    """Shade consecutive stages ``[edges[k], edges[k+1]]`` on a log-time axis, named ``names[k]``.

    A boundary earlier than the one before it is moved up to it (so a band can
    be empty); a non-finite boundary ends the shading.  Returns whether the
    given boundaries were finite and in order.

    Examples
    --------
    >>> fig, (ax,) = new_figure(1.5, 1)
    >>> log_time_axis(ax, 1e-2, 1e4)
    >>> shade_spans(ax, [1e-2, 1.0, 50.0, 1e4], ["I", "plateau", "II"])
    True
    >>> [text.get_text() for text in ax.texts]
    ['I', 'plateau', 'II']
    >>> shade_spans(ax, [1e-2, 60.0, 50.0, 1e4], ["I", "plateau", "II"], labels=False)
    False
    """
    inner = list(edges[1:-1])
    in_order = all(math.isfinite(v) for v in inner) and inner == sorted(inner)
    bounds = [edges[0]]
    for value in edges[1:]:
        bounds.append(max(bounds[-1], value) if math.isfinite(value) else value)
    span = math.log(bounds[-1] / bounds[0])
    for k, name in enumerate(names):
        a, b = bounds[k], bounds[k + 1]
        if not (math.isfinite(a) and math.isfinite(b)) or b <= a:
            continue
        ax.axvspan(a, b, color=SHADES[k % len(SHADES)], lw=0, zorder=0)
        if labels:
            wide = math.log(b / a) / span > 0.16
            ax.text(math.sqrt(a * b), 0.975, name.replace(" ", "\n", 1) if wide else name,
                    transform=ax.get_xaxis_transform(), ha="center", va="top",
                    rotation=0 if wide else 90, fontsize=6.0, color="0.15", linespacing=1.0,
                    zorder=1)
    return in_order


def render(fig, fmt: str) -> bytes:
    """The figure as PNG or PDF bytes, with fixed metadata and no timestamps.

    Examples
    --------
    >>> fig, (ax,) = new_figure(1.5, 1)
    >>> _ = ax.plot([1, 2], [3, 4])
    >>> pdf = render(fig, "pdf")
    >>> pdf[:5], b"/CreationDate" in pdf, render(fig, "pdf") == pdf
    (b'%PDF-', False, True)
    """
    import matplotlib

    if fmt not in FORMATS:
        raise ParameterError(f"format={fmt!r}; allowed: {', '.join(FORMATS)}")
    meta = getattr(fig, "_reduced_odes_meta", None) or {
        "title": "figure", "subject": f"reduced-odes {__version__}", "keywords": []}
    software = f"reduced-odes {__version__} (matplotlib {matplotlib.__version__})"
    if fmt == "png":
        metadata = {"Title": meta["title"], "Software": software,
                    "Description": meta["subject"] + "; " + "; ".join(meta["keywords"])}
    else:
        metadata = {"Title": meta["title"], "Subject": meta["subject"],
                    "Keywords": "; ".join(meta["keywords"]), "Creator": software,
                    "Producer": software, "CreationDate": None, "ModDate": None}
    buffer = io.BytesIO()
    with matplotlib.rc_context(STYLE):
        fig.savefig(buffer, format=fmt, dpi=_DPI, metadata=metadata)
    return buffer.getvalue()


def save_figure(fig, path_stem: str | Path, formats: Sequence[str] = FORMATS) -> list[Path]:
    """Write ``<path_stem>.<fmt>`` for each format; unchanged bytes are not rewritten.

    Examples
    --------
    >>> import tempfile
    >>> fig, (ax,) = new_figure(1.5, 1)
    >>> _ = ax.plot([1, 2], [3, 4])
    >>> [p.name for p in save_figure(fig, f"{tempfile.mkdtemp()}/line", ["png", "pdf"])]
    ['line.png', 'line.pdf']
    """
    paths = []
    for fmt in formats:
        data = render(fig, fmt)
        path = Path(f"{path_stem}.{fmt}")
        path.parent.mkdir(parents=True, exist_ok=True)
        if not (path.exists() and path.read_bytes() == data):
            atomic_write(path, data)
        paths.append(path)
    return paths


def save_each_format(draw: Callable[[], Any], path_stem: str | Path,
                     formats: Sequence[str] = FORMATS) -> list[Path]:
    """:func:`save_figure` of a freshly drawn figure (``draw()``) per format: a layout
    settled by one renderer shifts the next one's clip rectangles by ~1e-10 pt, so a
    format's bytes would otherwise depend on the formats drawn before it (``figures
    --format pdf`` against ``png,pdf``).

    Examples
    --------
    >>> import tempfile
    >>> def draw():
    ...     fig, (ax,) = new_figure(1.5, 1)
    ...     ax.plot([1, 2], [3, 4])
    ...     return fig
    >>> [p.name for p in save_each_format(draw, f"{tempfile.mkdtemp()}/line", ["png", "pdf"])]
    ['line.png', 'line.pdf']
    """
    return [path for fmt in formats for path in save_figure(draw(), path_stem, [fmt])]


def draw_from_data(figures: Mapping, out: str | Path, data: str | Path,
                   formats: Sequence[str], model: str,
                   compute_missing=None) -> list[Path]:
    """Draw a model's figures from its data files: ``figures`` maps a name to
    ``(plot, data file, subject)``; ``plot(document) -> Figure``.

    Missing data files are computed first by ``compute_missing(data, names)``.
    Each format gets a freshly drawn figure (:func:`save_each_format`).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from reduced_odes.author import write_json
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> def compute_missing(data, names):
    ...     for name in names:
    ...         write_json(data / name, {"t": [1, 10, 100], "u": [0.1, 0.5, 0.9]})
    >>> @house_style
    ... def plot_u(document):
    ...     fig, (ax,) = new_figure(1.5, 1)
    ...     ax.plot(document["t"], document["u"])
    ...     return fig
    >>> figures = {"u": (plot_u, "u.json", "u against t")}
    >>> paths = draw_from_data(figures, root / "figures", root / "data", ["png"], "toy",
    ...                        compute_missing)
    >>> [p.name for p in paths], [p.name for p in (root / "data").iterdir()]
    (['u.png'], ['u.json'])
    """
    out, data = Path(out), Path(data)
    missing = sorted({source for _, source, _ in figures.values()
                      if not (data / source).exists()})
    if missing and compute_missing is not None:
        compute_missing(data, missing)
    written = []
    for name, (plot, source, subject) in figures.items():
        document = read_json(data / source)

        def draw(plot=plot, document=document, name=name, subject=subject, source=source):
            fig = plot(document)
            stamp(fig, name, subject=subject, keywords=[f"model={model}"], data=[source])
            return fig

        written += save_each_format(draw, out / name, formats)
    return written


@dataclass(frozen=True)
class DataFigures:
    """A model's figures, each drawn from one data file: its ``figures`` role.

    :meth:`draw` is the model's ``figures`` hook: :func:`draw_from_data` over the
    declared figures, so that no model writes that function again.

    Parameters
    ----------
    model : str
        The model's name, stamped into every figure.
    figures : mapping
        Figure name -> ``(plot, data file, subject)``, as in :func:`draw_from_data`.
    compute_missing : callable, optional
        ``compute_missing(data, names)`` writes the missing data files ``names``.

    Examples
    --------
    A model's ``figures`` module declares its figures and names the hook:

    >>> import pathlib, tempfile
    >>> from reduced_odes.author import write_json
    >>> def plot_u(document):
    ...     fig, (ax,) = new_figure(1.5, 1)
    ...     ax.plot(document["t"], document["u"])
    ...     return fig
    >>> def write_data(data, names):
    ...     for name in names:
    ...         write_json(data / name, {"t": [1, 10], "u": [0.1, 0.9]})
    >>> draw_figures = DataFigures("toy", {"u": (plot_u, "u.json", "u against t")},
    ...                            write_data).draw
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> [p.name for p in draw_figures(root / "figures", root / "data", ["png"])]
    ['u.png']
    """

    model: str
    figures: Mapping[str, tuple[Callable[[Any], Any], str, str]]
    compute_missing: Callable[[Path, list[str]], object] | None = None

    def draw(self, out: str | Path, data: str | Path,
             formats: Sequence[str] = FORMATS) -> list[Path]:
        """Draw every figure into ``out`` from the files in ``data``, computing only the
        missing files first: the ``figures`` hook (:func:`draw_from_data`)."""
        return draw_from_data(self.figures, out, data, formats, self.model, self.compute_missing)
