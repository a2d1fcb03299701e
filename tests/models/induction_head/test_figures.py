"""Figures (reduced_odes._figures): drawn from data files, labelled, deterministic, headless.

Small settings throughout (L <= 50), so the whole module runs in well under a minute.
"""

from __future__ import annotations

import argparse
import io
import json
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from reduced_odes import ParameterError
from reduced_odes._results import read_json
from reduced_odes.models.induction_head import ModelParams
from reduced_odes.models.induction_head import figures as F

PARAMS = ModelParams(L=20, alpha=0.5, wstar=0.3, sigma=1e-3)
SCALING = {"L": [20, 50], "sigma": [1e-2, 1e-3, 1e-4]}
TIME = "t (gradient-flow time)"


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """A data directory with the linear trajectory, scaling records and predictions,
    and the meanfield trajectory without predictions (the closures figure needs none)."""
    d = tmp_path_factory.mktemp("data")
    F.trajectory_data("linear", PARAMS, d, n_output=300, n_tail=200)
    F.trajectory_data("meanfield", PARAMS, d, n_output=300, n_tail=200, with_predictions=False)
    with ThreadPoolExecutor(2) as pool:
        records = F.scaling_records("linear", d, "quick", L=SCALING["L"],
                                    sigma=SCALING["sigma"], executor=pool, progress=False)
    F.predictions_data("linear", d, L=SCALING["L"], sigma=SCALING["sigma"])
    assert len(records) == 6
    return d


def _no_integration(*args, **kwargs):
    raise AssertionError("the figures must be drawn from the data files alone")


@pytest.fixture(scope="module")
def default_grid(data, tmp_path_factory):
    """A copy of ``data`` whose verify file is the default grid's (what the CLI reads); the
    data the command adds to it (the meanfield scaling records) serve both tests of it."""
    target = tmp_path_factory.mktemp("default-grid")
    for path in data.iterdir():
        (target / path.name.replace("verify-quick", "verify-default")).write_bytes(
            path.read_bytes())
    return target


@pytest.fixture(scope="module")
def made(default_grid, tmp_path_factory):
    """Every figure in both formats, drawn with integration made impossible: the figures need
    only the data files.  From the default grid's copy, as the command draws them (the data
    files' names are in the figures' metadata)."""
    import reduced_odes._integrate
    from reduced_odes.models.induction_head import claims

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(reduced_odes._integrate, "solve", _no_integration)
        mp.setattr(claims, "measure_setting", _no_integration)
        return F.make_figures(tmp_path_factory.mktemp("figs"), default_grid, "png,pdf", "linear",
                              "default", params=PARAMS, scaling_L=SCALING["L"],
                              scaling_sigma=SCALING["sigma"])


def _record(data, closure="linear"):
    return read_json(F.trajectory_path(data, closure, PARAMS))


def _scaling(data):
    records = F.scaling_records("linear", data, "quick", L=SCALING["L"], sigma=SCALING["sigma"])
    return records, read_json(F.predictions_path(data, "linear", 0.5, 0.3))


def test_data_files_exist_and_hold_what_figures_need(data):
    record = _record(data)
    assert {"series", "phases", "phase_IV", "predictions", "versions", "solver"} <= set(record)
    assert record["series"]["t"][0] == 0 and len(record["series"]["t"]) == 301
    assert record["phase_IV"]["t"][0] == pytest.approx(record["phases"]["T_III"])
    assert "predictions" not in _record(data, "meanfield")
    assert (data / "verify-quick.jsonl").exists()
    pred = read_json(F.predictions_path(data, "linear", 0.5, 0.3))
    assert set(SCALING["L"]) <= set(pred["L"]) and set(SCALING["sigma"]) <= set(pred["sigma"])


def test_every_figure_is_written_non_empty(made):
    names = sorted(p.name for p in made)
    assert names == sorted(f"{n}.{fmt}" for n in ("phases", "convergence", "plateau_scaling")
                           for fmt in ("png", "pdf"))
    for path in made:
        head = path.read_bytes()[:8]
        assert path.stat().st_size > 10_000, path
        assert head.startswith(b"\x89PNG" if path.suffix == ".png" else b"%PDF"), path


def test_pngs_are_not_blank(made):
    from matplotlib.image import imread

    for path in (p for p in made if p.suffix == ".png"):
        image = imread(path)
        assert image.shape[1] == pytest.approx(F.COLUMN_WIDTH * 300, abs=2)  # 3.4 in at 300 dpi
        grey = image[..., :3].mean(axis=2)
        assert grey.var() > 0.01, path  # a blank or single-colour image has ~0
        assert (grey < 0.5).mean() > 0.01, path  # some dark ink: lines, text


def test_metadata_is_stamped_and_has_no_timestamp(made):
    from PIL import Image

    from reduced_odes import __version__

    png = next(p for p in made if p.name == "phases.png")
    info = Image.open(png).info
    assert info["Software"].startswith(f"reduced-odes {__version__}")
    assert "L=20" in info["Description"] and "sigma=0.001" in info["Description"]
    pdf = next(p for p in made if p.name == "phases.pdf").read_bytes()
    assert b"/CreationDate" not in pdf and b"/ModDate" not in pdf
    assert f"reduced-odes {__version__}".encode() in pdf and b"wstar=0.3" in pdf


def _labels(ax):
    return ax.get_xlabel(), ax.get_ylabel()


def test_phases_axes_are_labelled(data):
    fig = F.plot_phases(_record(data))
    losses, params, slope = fig.axes
    assert losses.get_yscale() == "log" and losses.get_xscale() == "log"
    assert "loss" in losses.get_ylabel() and params.get_xlabel() == TIME
    assert "$w_{kq}/w^*$" in params.get_ylabel() and "slope $p$" in slope.get_ylabel()
    texts = " ".join(t.get_text() for t in losses.texts)
    for name in F.PHASE_NAMES[:2]:  # bands I and II are wide at this setting
        assert name in texts
    labels = [t.get_text() for t in losses.get_legend().get_texts()]
    assert any("4-gram" in s for s in labels) and any("induction head" in s for s in labels)
    assert "L=20" in fig.get_suptitle() and "10^{-3}" in fig.get_suptitle()
    # Mechanism colours: L_G4 blue, L_IH vermillion.
    colours = [line.get_color() for line in losses.get_lines()[:2]]
    assert colours == [F.MECHANISM_COLOURS["4-gram"], F.MECHANISM_COLOURS["induction head"]]


def test_phases_out_of_order_are_flagged(data):
    record = _record(data)
    record["phases"] = {**record["phases"], "T_I": 2 * record["phases"]["T_III"]}
    fig = F.plot_phases(record)
    assert any("out of order" in t.get_text() for t in fig.axes[0].texts)
    in_order = F.plot_phases(_record(data))
    assert not any("out of order" in t.get_text() for t in in_order.axes[0].texts)


def test_convergence_axes_and_prediction_lines(data):
    record = _record(data)
    fig = F.plot_convergence(record)
    tail, decay = fig.axes
    assert tail.get_xlabel() == TIME and decay.get_xlabel().startswith(TIME)
    assert "L_{\\mathrm{G4}}" in tail.get_ylabel() and "ln" in decay.get_ylabel()
    quarter = [line for line in tail.get_lines() if line.get_label().startswith("predicted")]
    assert quarter and np.allclose(quarter[0].get_ydata(), 0.25)
    line = next(ln for ln in decay.get_lines() if "predicted" in ln.get_label())
    x, y = (np.asarray(v, float) for v in line.get_data())
    slope = (y[1] - y[0]) / (x[1] - x[0])
    assert slope == pytest.approx(-record["predictions"]["L_IH_decay_rate"], rel=1e-12)


def test_plateau_scaling_markers_and_lines(data):
    records, pred = _scaling(data)
    fig = F.plot_plateau_scaling(records, pred)
    emergence, per_token, excess = fig.axes
    assert emergence.get_xlabel() == excess.get_xlabel() == r"$\ln(1/\sigma)$ (dimensionless)"
    assert "gradient-flow time" in emergence.get_ylabel()
    assert "(tokens)" in per_token.get_xlabel() and "per token" in per_token.get_ylabel()
    labels = [t.get_text() for t in emergence.get_legend().get_texts()]
    assert "$L=20$" in labels and "$L=50$" in labels
    # Markers are the measured T_em.
    marker_y = sorted(y for ln in emergence.get_lines() if ln.get_linestyle() == "None"
                      for y in ln.get_ydata())
    assert marker_y == pytest.approx(sorted(r["result"]["phases"]["T_em"] for r in records))
    # The excess over the leading order is O(L): a few time units per token, flat in sigma.
    values = [y for ln in excess.get_lines() for y in ln.get_ydata()]
    assert 0 < min(values) and max(values) < 10


def test_closures_figure_with_and_without_overlay(data, tmp_path):
    records = {c: _record(data, c) for c in ("linear", "meanfield")}
    fig = F.plot_closures(records)
    loss, weight = fig.axes
    assert weight.get_xlabel() == TIME and "L_{\\mathrm{IH}}" in loss.get_ylabel()
    assert [t.get_text() for t in loss.get_legend().get_texts()] == \
        ["linear ODE", "meanfield ODE"]
    t = np.linspace(0, 800, 50)
    curve = {"t": t.tolist(), "w_kq": (0.3 * t / 800).tolist(), "label": "exact SGD test",
             "interval": {"w_kq": {"lo": (0.29 * t / 800).tolist(),
                                   "hi": (0.31 * t / 800).tolist()}}}
    path = tmp_path / F.OVERLAY_FILE
    path.write_text(json.dumps({"setting": PARAMS.as_dict(), "curves": [curve]}))
    overlay = F.load_overlay(path)
    assert overlay["setting"] == PARAMS.as_dict() and "L_IH" not in overlay["curves"][0]
    fig = F.plot_closures(records, overlay)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels[-1] == "exact SGD test"
    png = F.render(fig, "png")
    from matplotlib.image import imread

    assert imread(io.BytesIO(png)).var() > 0.01
    assert png == F.render(fig, "png")


def test_overlay_schema_errors(tmp_path):
    assert F.load_overlay(tmp_path / "absent.json") is None
    bad = tmp_path / "bad.json"
    for doc in ({"t": [0, 1]}, {"t": [0, 1], "w_kq": [0.1]}, {"curves": []},
                {"t": [0, 1], "L_IH": [1, 2], "interval": {"L_IH": {"lo": [1]}}}):
        bad.write_text(json.dumps(doc))
        with pytest.raises(ParameterError, match="bad.json"):
            F.load_overlay(bad)
    bad.write_text("{not json")
    with pytest.raises(ParameterError, match="not valid JSON"):
        F.load_overlay(bad)


def test_figures_need_no_integration_once_data_exist(made):
    # ``made`` drew them with the integrator and the claims' measurement replaced by a failure.
    assert sorted(p.suffix for p in made) == [".pdf"] * 3 + [".png"] * 3


@pytest.fixture
def small_defaults(monkeypatch):
    """The CLI's default setting and grids, shrunk to the test's small ones."""
    from reduced_odes.models.induction_head.claims import GRIDS

    monkeypatch.setattr(F, "DEFAULT_PARAMS", PARAMS)
    for grid in ("quick", "default"):
        monkeypatch.setitem(GRIDS, grid, {**GRIDS[grid], **SCALING})


def _same_bytes_as(made, out, fmt):
    """The figures ``out`` shares with ``made`` (in ``fmt``) are byte for byte the same: the
    command, at the same setting and grids, draws what the API drew."""
    shared = [p for p in made if p.suffix == f".{fmt}"]
    assert len(shared) == 3
    for first in shared:
        assert (out / first.name).read_bytes() == first.read_bytes(), first.name


def test_cli_figures_command_draws_the_apis_bytes(made, default_grid, tmp_path, small_defaults,
                                                  capsys):
    from reduced_odes.cli import main

    out = tmp_path / "figs"
    status = main(["figures", "--out", str(out), "--data", str(default_grid), "--format", "png"])
    assert status == 0
    names = {p.name for p in out.iterdir()}
    assert {"convergence.png", "phases.png", "plateau_scaling.png", "closures.png",
            "plateau_scaling-meanfield.png"} <= names
    assert capsys.readouterr().out.count("wrote ") == len(names)
    _same_bytes_as(made, out, "png")
    assert main(["figures", "--out", str(out), "--data", str(default_grid), "--format",
                 "svg"]) == 2
    assert "format='svg'" in capsys.readouterr().err


def test_the_figures_handler_runs_from_its_namespace(made, default_grid, tmp_path,
                                                    small_defaults):
    from reduced_odes.cli import COMMANDS
    from reduced_odes.models.induction_head import MODEL

    # The command's namespace: exactly (model, out, data, format, model_options).
    handler = COMMANDS["figures"].handler
    # PNG: the PDFs' bytes are held to committed ones for the other models (test_model_outputs)
    # and this model's to no timestamp (above); a PDF costs twice a PNG here.
    status = handler(argparse.Namespace(model=MODEL, out=str(tmp_path / "figs"),
                                        data=str(default_grid), format="png", model_options=[]))
    assert status == 0
    _same_bytes_as(made, tmp_path / "figs", "png")


def test_missing_data_are_created(tmp_path):
    path = F.trajectory_data("linear", PARAMS, tmp_path, n_output=50, n_tail=20,
                             with_predictions=False)
    assert path.exists() and "predictions" not in read_json(path)
    F.trajectory_data("linear", PARAMS, tmp_path)  # completes the predictions
    assert "predictions" in read_json(path)
