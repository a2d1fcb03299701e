"""The ``closure_errors`` figure: drawn from a ``compare --grid`` table, only when it exists.

Everything here is synthetic and runs in a few seconds: the grid is written by hand
(2 L x 2 sigma x 2 w*, one setting with T_II = 0), and the ``make_figures`` test
stubs the other figures' data and drawing, which integrate (tests/models/induction_head/
test_figures.py covers those).
"""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from reduced_odes import ParameterError
from reduced_odes._figstyle import new_figure
from reduced_odes.models.induction_head import ModelParams
from reduced_odes.models.induction_head import figures as F
from reduced_odes.models.induction_head.figures.closure_errors import (
    COMPARE_GRID_FILE,
    closure_error_points,
)
from reduced_odes.models.induction_head.figures.closures import _CLOSURE_STYLE

LENGTHS, SIGMAS, WSTARS = (20, 50), (0.1, 0.01), (0.1, 0.3)
T_III_SETTING = (20, 0.1, 0.1)  # (L, sigma, w*): sigma^2 = 0.1 w*, so T_II = 0
OFFSET = {"linear": 0.0, "meanfield": -0.03}


def _ratio(value: float) -> dict:
    # Asymmetric bars (lo 0.01 below, hi 0.02 above), so a swapped lo/hi is caught.
    return {"value": round(value, 4), "lo": round(value - 0.01, 4), "hi": round(value + 0.02, 4)}


def _row(L: int, sigma: float, wstar: float, *, window_in_t3: bool = False) -> dict:
    t3 = (L, sigma, wstar) == T_III_SETTING
    row = {"L": L, "sigma": sigma, "wstar": wstar, "alpha": 0.5,
           "exact": {"T_em": 400.0, "T_em_se": 0.4, "window": 500.0, "window_se": 0.5,
                     "T_II": 0.0 if t3 else 160.0, "T_III": 680.0, "T_I": 200.0,
                     "window_is_T_III": t3, "intervals": {}}}
    for closure, offset in OFFSET.items():
        base = 0.8 + L / 1000 + wstar / 10 + offset  # depends on L and w*, not on sigma
        ratios = {"T_em": _ratio(base), "T_III": _ratio(base - 0.05)}
        if not t3 or window_in_t3:
            ratios["window"] = _ratio(base - 0.1)
        row[closure] = {"T_em": 350.0, "window": 400.0, "ratio_to_exact": ratios}
    return row


def _grid(**kwargs) -> dict:
    rows = [_row(L, s, w, **kwargs) for L in LENGTHS for s in SIGMAS for w in WSTARS]
    return {"rows": rows, "metadata": {"estimator": "population", "versions": {"numpy": "0"},
                                       "tables": [{"settings": {"confidence": 0.95}}]}}


def _points(ax) -> list[tuple[float, float]]:
    """(x, y) of every plotted point: the data line of each errorbar container."""
    return [(x, y) for c in ax.containers
            for x, y in zip(*c.lines[0].get_data(), strict=True)]


def test_points_per_panel_and_window_panel_leaves_out_t3():
    fig = F.plot_closure_errors(_grid())
    t_em, window = fig.axes
    n_rows = len(LENGTHS) * len(SIGMAS) * len(WSTARS)
    assert len(_points(t_em)) == 2 * n_rows  # both closures at every setting
    assert len(_points(window)) == 2 * (n_rows - 1)  # not the T_II = 0 setting
    title = window.get_title(loc="left")
    assert "1 setting " in title and "left out" in title
    assert "left out" not in t_em.get_title(loc="left")
    # One series per (closure, w*, sigma), in both panels.
    assert len(t_em.containers) == len(window.containers) == 2 * len(SIGMAS) * len(WSTARS)


def test_t3_rows_are_left_out_by_their_flag_alone():
    # Even if a writer kept a window ratio at a T_II = 0 setting, it is not a window.
    fig = F.plot_closure_errors(_grid(window_in_t3=True))
    n_rows = len(LENGTHS) * len(SIGMAS) * len(WSTARS)
    assert len(_points(fig.axes[1])) == 2 * (n_rows - 1)


def test_values_and_error_bars_come_from_the_ratios():
    doc = _grid()
    fig = F.plot_closure_errors(doc)
    for ax, quantity in zip(fig.axes, ("T_em", "window"), strict=True):
        expected = sorted((r[c]["ratio_to_exact"][quantity]["lo"],
                           r[c]["ratio_to_exact"][quantity]["hi"])
                          for r in doc["rows"] for c in OFFSET
                          if quantity in r[c]["ratio_to_exact"])
        bars = sorted((seg[0][1], seg[1][1]) for c in ax.containers
                      for seg in c.lines[2][0].get_segments())
        flat = [v for pair in bars for v in pair]  # approx compares flat sequences only
        assert flat == pytest.approx([v for pair in expected for v in pair])
        values = sorted(y for _, y in _points(ax))
        assert values == pytest.approx(sorted(
            r[c]["ratio_to_exact"][quantity]["value"] for r in doc["rows"] for c in OFFSET
            if quantity in r[c]["ratio_to_exact"]))


def test_encodings_colour_wstar_line_closure_marker_sigma():
    fig = F.plot_closure_errors(_grid())
    for ax in fig.axes:
        assert ax.get_xscale() == "log"
        assert any(np.allclose(line.get_ydata(), 1.0) for line in ax.get_lines())  # reference
        lines = [c.lines[0] for c in ax.containers]
        assert len({line.get_color() for line in lines}) == len(WSTARS)
        assert len({line.get_marker() for line in lines}) == len(SIGMAS)
        assert {line.get_linestyle() for line in lines} == {"-", "--"}
    # At one (closure, w*, L) the sigmas sit side by side (shifted in L), at the same ratio.
    ax = fig.axes[0]
    same = [(x, y) for c in ax.containers for x, y in zip(*c.lines[0].get_data(), strict=True)
            if c.lines[0].get_linestyle() == "-" and x < 35]
    ys = {round(y, 6) for _, y in same}
    assert len(same) == len(SIGMAS) * len(WSTARS) and len(ys) == len(WSTARS)
    assert len({x for x, _ in same}) == len(SIGMAS)
    labels = [t.get_text() for t in fig.legends[0].get_texts() if t.get_text()]
    assert labels == ["$w^*=0.1$", "$w^*=0.3$", *_CLOSURE_STYLE,
                      r"$\sigma=10^{-1}$", r"$\sigma=10^{-2}$"]
    assert "95% interval" in fig.get_suptitle() and r"\alpha=0.5" in fig.get_suptitle()


def test_window_panel_without_any_window():
    doc = _grid()
    for row in doc["rows"]:
        row["exact"]["window_is_T_III"] = True
    fig = F.plot_closure_errors(doc)
    assert len(_points(fig.axes[0])) == 16 and not fig.axes[1].containers
    assert any("no setting" in t.get_text() for t in fig.axes[1].texts)


def test_unusable_tables_are_refused():
    with pytest.raises(ParameterError, match="T_em"):
        F.plot_closure_errors({"rows": []})
    failed = {"rows": [{**_row(20, 0.1, 0.3), "linear": {"error": "x"},
                        "meanfield": {"error": "y"}}]}
    with pytest.raises(ParameterError, match="T_em"):
        F.plot_closure_errors(failed)
    nan = _row(20, 0.1, 0.3)
    nan["linear"]["ratio_to_exact"]["T_em"]["value"] = None  # NaN as written by compare
    assert list(closure_error_points([nan], "T_em")) == [("meanfield", 0.3, 0.1)]


def test_bytes_do_not_depend_on_row_order_or_run():
    doc = _grid()
    first = F.render(F.plot_closure_errors(doc), "png")
    random.Random(0).shuffle(doc["rows"])
    assert first == F.render(F.plot_closure_errors(doc), "png")
    pdf = F.render(F.plot_closure_errors(doc), "pdf")
    assert b"/CreationDate" not in pdf and b"figure=closure_errors" in pdf


@pytest.fixture
def stubbed(monkeypatch, tmp_path):
    """``make_figures`` with the other figures' data and drawing replaced by stand-ins."""
    dummy = tmp_path / "trajectory.json"
    dummy.write_text("{}")

    def blank(*args, **kwargs):
        fig, _ = new_figure(0.5, 1)
        fig._reduced_odes_meta = {"title": "stub", "subject": "stub", "keywords": []}
        return fig

    monkeypatch.setattr(F, "trajectory_data", lambda *args, **kwargs: dummy)
    monkeypatch.setattr(F, "scaling_records", lambda *args, **kwargs: [])
    for name in ("plot_phases", "plot_convergence", "plot_closures"):
        monkeypatch.setattr(F, name, blank)
    return tmp_path


def test_make_figures_draws_closure_errors_only_when_the_table_exists(stubbed):
    from PIL import Image

    data, out = stubbed / "data", stubbed / "figs"
    data.mkdir()
    params = ModelParams(L=20, alpha=0.5, wstar=0.3, sigma=1e-3)

    def make(closure="all"):
        return [p.name for p in F.make_figures(out, data, "png", closure, params=params)]

    assert "closures.png" in make() and not (out / "closure_errors.png").exists()
    (data / COMPARE_GRID_FILE).write_text(json.dumps(_grid()))
    names = make()
    assert names[-2:] == ["closures.png", "closure_errors.png"]
    info = Image.open(out / "closure_errors.png").info
    assert "figure=closure_errors" in info["Description"]
    assert f"data={COMPARE_GRID_FILE}" in info["Description"]
    (out / "closure_errors.png").unlink()
    assert "closure_errors.png" not in make("linear")  # a closure's figures only
    assert not (out / "closure_errors.png").exists()
