"""The committed outputs of every registered model, as each declares them.

For each model that supplies the hook: its committed derivation documents are
what ``derive`` writes; its committed figures are drawn from the committed data
alone, byte for byte; each figure data file it declares
(:class:`reduced_odes.author.CommittedFigures`) is computed afresh and agrees
with the committed one to its kept digits.
"""

from __future__ import annotations

import math
import re
import shutil
from pathlib import Path

import pytest

import reduced_odes
import reduced_odes._integrate
from reduced_odes._registry import _references, get_model
from reduced_odes.author import FORMATS, read_json

ROOT = Path(__file__).resolve().parents[2]
MODELS = list(_references())


def _supplying(hook: str) -> list[str]:
    return [name for name in MODELS if get_model(name).supports(hook)]


# -- derivation documents -------------------------------------------------------------------
@pytest.mark.parametrize("name", _supplying("export_derivations"))
def test_committed_derivations_are_what_derive_writes(name, tmp_path):
    committed = sorted((ROOT / "derivations").glob(f"{name}.*"))
    if not committed:
        pytest.skip(f"no derivations of {name} are committed")
    written = get_model(name).export_derivations(tmp_path)
    assert sorted(p.name for p in written) == [p.name for p in committed]
    for path in committed:
        assert (tmp_path / path.name).read_bytes() == path.read_bytes(), (
            f"run `reduced-odes derive --model {name}` and commit {path.name}")


# -- figures ----------------------------------------------------------------------------------
def _drawn(slow: bool) -> list:
    """The models whose figures are drawn in the default run (``slow=False``), or every
    model supplying figures, each marked slow where it declares its drawing slow."""
    params = []
    for name in _supplying("figures"):
        slow_drawing = get_model(name).committed_figures.slow_drawing
        if slow or not slow_drawing:
            params.append(pytest.param(name, marks=pytest.mark.slow) if slow_drawing else name)
    return params


def _committed_data(name: str, tmp_path: Path, leave_out: str | None = None) -> Path:
    """A copy of the committed data files of ``name`` (without ``leave_out``): what the
    figures read, and where a computed file would land."""
    committed = ROOT / "figures" / "data" / name
    if not committed.is_dir():
        pytest.skip(f"no figure data of {name} are committed")
    return Path(shutil.copytree(committed, tmp_path / "data",
                                ignore=shutil.ignore_patterns(leave_out) if leave_out else None))


def _tree(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


@pytest.fixture()
def no_integration(monkeypatch):
    """Any integration fails the test: figures come from the data files."""
    def refuse(*args, **kwargs):
        raise AssertionError("a figure tried to compute its data")

    # The package attribute first: reading it resolves the lazy name to the real solve,
    # which undo then restores (patched second, it would resolve to ``refuse`` and stay).
    monkeypatch.setattr(reduced_odes, "solve", refuse)
    monkeypatch.setattr(reduced_odes._integrate, "solve", refuse)


def _matplotlib_of(data: bytes) -> str | None:
    found = re.search(rb"matplotlib (\d[\w.]*)", data)
    return found.group(1).decode() if found else None


def _draw_and_compare(name: str, tmp_path: Path, formats) -> list[Path]:
    """Draw the figures of ``name`` in ``formats`` from a copy of its committed data; assert
    they are the committed figures, byte for byte where the same matplotlib wrote those, and
    that no data file was computed.  The figures not compared (another matplotlib's)."""
    import matplotlib

    figures = ROOT / "figures" / name
    if not figures.is_dir():
        pytest.skip(f"no figures of {name} are committed")
    data = _committed_data(name, tmp_path)
    before = _tree(data)
    drawn = get_model(name).figures(tmp_path / "out", data, formats)
    assert _tree(data) == before, "a figure computed a data file: draw from the committed data"
    assert sorted(p.name for p in drawn) == sorted(
        p.name for fmt in formats for p in figures.glob(f"*.{fmt}"))
    uncompared = []
    for path in drawn:
        committed = (figures / path.name).read_bytes()
        if _matplotlib_of(committed) != matplotlib.__version__:
            uncompared.append(path)  # other renderer versions write other bytes
            continue
        assert path.read_bytes() == committed, (
            f"redraw {path.name}: `reduced-odes figures --model {name}`")
    return uncompared


@pytest.mark.parametrize("name", _drawn(slow=False))
def test_figures_are_drawn_from_data_alone_and_deterministic(name, tmp_path, no_integration):
    uncompared = _draw_and_compare(name, tmp_path, ("pdf",))
    # A figure equal to its committed bytes, drawn by another process, is deterministic; one
    # that could not be compared (another matplotlib's) is drawn again here.
    if uncompared:
        again = get_model(name).figures(tmp_path / "again", tmp_path / "data", ("pdf",))
        by_name = {p.name: p.read_bytes() for p in again}
        assert [by_name[p.name] for p in uncompared] == [p.read_bytes() for p in uncompared]


@pytest.mark.slow
@pytest.mark.parametrize("name", _drawn(slow=True))
def test_figures_in_every_format_are_byte_identical(name, tmp_path, no_integration):
    """Every format, drawn in one call as ``reduced-odes figures`` does."""
    _draw_and_compare(name, tmp_path, FORMATS)


# -- figure data ------------------------------------------------------------------------------
def _declared_data() -> list:
    """``(model, data file)`` of every declared data file, the slow ones marked slow."""
    params = []
    for name in _supplying("figures"):
        checks = get_model(name).committed_figures
        params += [pytest.param(name, file, id=f"{name}-{file}") for file in checks.data]
        params += [pytest.param(name, file, id=f"{name}-{file}", marks=pytest.mark.slow)
                   for file in checks.slow_data]
    return params


def _assert_close(fresh, committed, rel: float, atol: float, where: str = "") -> None:
    if isinstance(committed, dict):
        assert sorted(fresh) == sorted(committed), where
        for key in committed:
            _assert_close(fresh[key], committed[key], rel, atol, f"{where}/{key}")
    elif isinstance(committed, list):
        assert len(fresh) == len(committed), where
        for k, (x, y) in enumerate(zip(fresh, committed, strict=True)):
            _assert_close(x, y, rel, atol, f"{where}[{k}]")
    elif isinstance(committed, float):
        assert fresh == pytest.approx(committed, rel=rel, abs=atol), where
    else:
        assert fresh == committed, where


@pytest.mark.parametrize("name, file", _declared_data())
def test_committed_figure_data_is_regenerated(name, file, tmp_path):
    checks = get_model(name).committed_figures
    data = _committed_data(name, tmp_path, leave_out=file)
    # No format: the hook computes the missing file, as before drawing, and draws nothing.
    get_model(name).figures(tmp_path / "out", data, ())
    # A value at a rounding edge may flip its last kept digit between machines (one unit
    # relative at most); twice that leaves room for the solver's rtol.
    rel = 2 * 10.0 ** (1 - checks.digits)
    # Values within the floor of zero are written as 0; one just above it on another machine
    # differs by about the floor, ten times that is still far below anything drawn.
    atol = 10 * checks.floor
    committed = read_json(ROOT / "figures" / "data" / name / file)
    _assert_close(read_json(data / file), committed, rel, atol, file)


def _floats(value):
    if isinstance(value, dict):
        for v in value.values():
            yield from _floats(v)
    elif isinstance(value, list):
        for v in value:
            yield from _floats(v)
    elif isinstance(value, float) and math.isfinite(value) and value != 0.0:
        yield value


def _keeps(value: float, digits: int) -> bool:
    return float(f"{value:.{digits - 1}e}") == value


@pytest.mark.parametrize("name", [n for n in _supplying("figures")
                                  if get_model(n).committed_figures.digits is not None])
def test_committed_figure_data_keep_the_declared_digits(name):
    """The declaration is the data's: every value keeps ``digits`` significant digits (and
    some need them all), and none lies within the floor of zero."""
    checks = get_model(name).committed_figures
    values = [v for file in (*checks.data, *checks.slow_data)
              for v in _floats(read_json(ROOT / "figures" / "data" / name / file))]
    assert all(_keeps(v, checks.digits) for v in values)
    assert not all(_keeps(v, checks.digits - 1) for v in values)
    assert all(abs(v) >= checks.floor for v in values)
