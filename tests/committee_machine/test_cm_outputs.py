"""Committed outputs of the committee machine: the derivation documents, the figure data and
the figures."""

import functools
import math
import re
from pathlib import Path

import pytest

import reduced_odes
import reduced_odes._integrate
from reduced_odes._reproduce import FIGURE_DIGITS
from reduced_odes._results import read_json
from reduced_odes.models.committee_machine import MODEL
from reduced_odes.models.committee_machine import figures as cm_figures
from reduced_odes.models.committee_machine.export import render_derivations
from reduced_odes.models.committee_machine.figures.data import DATA_FILES, FLOOR

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "figures" / "data" / "committee_machine"
FIGURES = ROOT / "figures" / "committee_machine"
#: 4 significant digits: a value at a rounding edge may flip its last digit between
#: machines (1e-3 relative at most); twice that leaves room for the solver's rtol.
DATA_RTOL = 2 * 10.0 ** (1 - FIGURE_DIGITS)
#: Values within FLOOR of zero are written as 0; one just above it on another machine
#: differs by about FLOOR, ten times that is still far below anything drawn.
DATA_ATOL = 10 * FLOOR


@functools.cache
def _documents() -> dict[str, str]:
    return render_derivations()  # ~7 s of SymPy: once for both files


@pytest.mark.parametrize("name", ["committee_machine.md", "committee_machine.tex"])
def test_committed_derivations_are_regenerated_identically(name):
    committed = (ROOT / "derivations" / name).read_text(encoding="utf-8")
    assert _documents()[name] == committed, "run `reduced-odes derive --model committee_machine`"


@pytest.fixture()
def no_integration(monkeypatch):
    """Any integration or data computation fails the test: figures come from the data files."""
    def refuse(*args, **kwargs):
        raise AssertionError("a figure tried to compute its data")

    # The package attribute first: reading it resolves the lazy name to the real solve,
    # which undo then restores (patched second, it would resolve to ``refuse`` and stay).
    monkeypatch.setattr(reduced_odes, "solve", refuse)
    monkeypatch.setattr(reduced_odes._integrate, "solve", refuse)
    monkeypatch.setattr(cm_figures, "write_data", refuse)


def _matplotlib_of(data: bytes) -> str | None:
    found = re.search(rb"matplotlib (\d[\w.]*)", data)
    return found.group(1).decode() if found else None


def test_figures_are_drawn_from_data_alone_and_deterministic(tmp_path, no_integration):
    import matplotlib

    drawn = MODEL.figures(tmp_path, DATA, ("pdf",))
    assert sorted(p.name for p in drawn) == sorted(f"{n}.pdf" for n in cm_figures.FIGURES)
    for path in drawn:
        committed = (FIGURES / path.name).read_bytes()
        if _matplotlib_of(committed) != matplotlib.__version__:
            continue  # other renderer versions write other bytes; they are per version
        assert path.read_bytes() == committed, f"redraw {path.name}: `reduced-odes figures`"
    again = MODEL.figures(tmp_path / "again", DATA, ("pdf",))
    assert [p.read_bytes() for p in again] == [p.read_bytes() for p in drawn]


@pytest.mark.slow
def test_png_figures_are_byte_identical(tmp_path, no_integration):
    import matplotlib

    for path in MODEL.figures(tmp_path, DATA, ("png",)):
        committed = (FIGURES / path.name).read_bytes()
        if _matplotlib_of(committed) == matplotlib.__version__:
            assert path.read_bytes() == committed, path.name


def _assert_close(fresh, committed, where: str = "") -> None:
    if isinstance(committed, dict):
        assert sorted(fresh) == sorted(committed), where
        for key in committed:
            _assert_close(fresh[key], committed[key], f"{where}/{key}")
    elif isinstance(committed, list):
        assert len(fresh) == len(committed), where
        for k, (x, y) in enumerate(zip(fresh, committed, strict=True)):
            _assert_close(x, y, f"{where}[{k}]")
    elif isinstance(committed, float):
        assert fresh == pytest.approx(committed, rel=DATA_RTOL, abs=DATA_ATOL), where
    else:
        assert fresh == committed, where


@pytest.mark.parametrize("name", ["plateau.json", "escape.json"])
def test_committed_figure_data_is_regenerated(name):
    _assert_close(DATA_FILES[name](), read_json(DATA / name), name)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["eta.json", "noise.json"])
def test_committed_figure_data_is_regenerated_slow(name):
    # Slow only from a cold cache: the learning-rate term's derivations (~10 s and ~25 s).
    _assert_close(DATA_FILES[name](), read_json(DATA / name), name)


def test_the_drawn_plateau_is_saad_and_sollas():
    """The plateau line of ``plateau`` is the closed form eps* at K = 2 (to the data's 4
    digits), and the overlaps the legend pairs up coincide, as the symmetry of the start
    (students and teachers swapped together) says they must."""
    doc = read_json(DATA / "plateau.json")
    eps_star = 2 / math.pi * (math.pi / 6 - 2 * math.asin(1 / 4))
    assert doc["plateau"]["eps_p"] == pytest.approx(eps_star, rel=DATA_RTOL)
    series = doc["series"]
    for a, b in (("Q_1_1", "Q_2_2"), ("R_1_1", "R_2_2"), ("R_1_2", "R_2_1")):
        assert series[a] == series[b], (a, b)


def test_escape_data_approaches_the_slope_one_over_lambda_from_above():
    """The local slopes the ``escape`` figure annotates fall, stay above 1/lambda, and end
    within 5% of it (the verified claim's tolerance)."""
    doc = read_json(DATA / "escape.json")
    slopes, target = doc["local"]["slope"], doc["slope"]
    assert all(b < a for a, b in zip(slopes, slopes[1:], strict=False))
    assert all(s > target for s in slopes)
    assert slopes[-1] == pytest.approx(target, rel=0.05)
    assert doc["slope"] == pytest.approx(1 / doc["lambda"], rel=DATA_RTOL)
