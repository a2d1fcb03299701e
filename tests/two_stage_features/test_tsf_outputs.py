"""Committed outputs: the figures with their data files (the derivation documents: the
contract tests, tests/engine/test_contract.py)."""

import re
from pathlib import Path

import numpy as np
import pytest

import reduced_odes
import reduced_odes._integrate
from reduced_odes.models.two_stage_features import MODEL
from reduced_odes.models.two_stage_features import figures as tsf_figures
from reduced_odes.models.two_stage_features.figures.data import DATA_FILES, rounded

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "figures" / "data" / "two_stage_features"
FIGURES = ROOT / "figures" / "two_stage_features"
#: The data files keep 5 significant digits: a value at a rounding edge may flip its last digit
#: between machines, 1e-4 relative at most; twice that leaves room for the solver's rtol.
DATA_RTOL = 2e-4


@pytest.fixture()
def no_integration(monkeypatch):
    """Any integration or data computation fails the test: figures come from the data files only."""
    def refuse(*args, **kwargs):
        raise AssertionError("a figure tried to compute its data")

    # The package attribute first: it resolves lazily to the one in _integrate.
    monkeypatch.setattr(reduced_odes, "solve", refuse)
    monkeypatch.setattr(reduced_odes._integrate, "solve", refuse)
    monkeypatch.setattr(tsf_figures, "write_data", refuse)


def _matplotlib_of(png: bytes) -> str | None:
    found = re.search(rb"matplotlib (\d[\w.]*)", png)
    return found.group(1).decode() if found else None


def test_figures_are_drawn_from_data_alone_and_deterministic(tmp_path, no_integration):
    import matplotlib

    first = MODEL.figures(tmp_path / "a", DATA, ("png", "pdf"))
    assert sorted(p.name for p in first) == sorted(f"{n}.{f}" for n in tsf_figures.FIGURES
                                                   for f in ("png", "pdf"))
    # One figure drawn twice more, as PDF (where creation dates would hide): the same bytes.
    from reduced_odes._figstyle import render
    from reduced_odes._results import read_json

    plot, source, _ = tsf_figures.FIGURES["scaling"]
    pdfs = [render(plot(read_json(DATA / source)), "pdf") for _ in range(2)]
    assert pdfs[0] == pdfs[1]
    for path in first:
        committed = (FIGURES / path.name).read_bytes()
        if _matplotlib_of(committed) != matplotlib.__version__:
            continue  # other renderer versions rasterise differently; bytes are per version
        assert path.read_bytes() == committed, f"redraw {path.name}: `reduced-odes figures`"


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
        assert fresh == pytest.approx(committed, rel=DATA_RTOL), where
    else:
        assert fresh == committed, where


@pytest.mark.parametrize("name", sorted(DATA_FILES))
def test_committed_figure_data_is_regenerated(name):
    from reduced_odes._results import read_json

    committed = read_json(DATA / name)
    fresh = rounded(DATA_FILES[name]())
    _assert_close(fresh, committed, name)


def test_rounding_keeps_five_digits_and_integers():
    assert rounded(np.array([123456.7, 0.000123456])) == [123460.0, 0.00012346]
    assert rounded({"N": 32, "flag": True}) == {"N": 32, "flag": True}
