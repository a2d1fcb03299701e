"""Phase diagrams: the deep linear network's exact T_half over (s, sigma), resumed by a
rerun, and bad axes refused before any work."""

from __future__ import annotations

import json
import math

import pytest

from reduced_odes import ParameterError
from reduced_odes._phase_diagram import Axis, phase_diagram
from reduced_odes.cli import main


def _exact(s: float, sigma: float) -> float:
    return math.log(s / sigma**2 - 1) / (2 * s)


def test_values_are_the_exact_times_and_a_rerun_resumes(tmp_path):
    x, y = Axis("s", 0.5, 2.0, 3), Axis("sigma", 1e-6, 1e-2, 3, log=True)
    data = phase_diagram("deep_linear", x, y, "T_half", tmp_path, max_workers=1,
                         progress=False)
    for j, sigma in enumerate(y.values()):
        for i, s in enumerate(x.values()):
            # 1e-8: root-finding on an rtol-1e-10 dense output (as the model's own claims).
            assert data["values"][j][i] == pytest.approx(_exact(s, sigma), rel=1e-8)
    lines = (tmp_path / "results.jsonl").read_text().splitlines()
    again = phase_diagram("deep_linear", x, y, "T_half", tmp_path, max_workers=1,
                          progress=False)
    assert again == data and (tmp_path / "results.jsonl").read_text().splitlines() == lines


def test_final_value_of_a_series(tmp_path):
    data = phase_diagram("deep_linear", Axis("s", 1.0, 3.0, 2), Axis("sigma", 1e-3, 1e-2, 2),
                         "u", tmp_path, max_workers=1, progress=False)
    # 1e-8: the run settles within 1e-9 (relative) of u = s.
    assert data["values"][0] == pytest.approx([1.0, 3.0], rel=1e-8)


def test_bad_axes():
    with pytest.raises(ParameterError, match="axis sigma"):
        Axis("sigma", 1e-2, 1e-6, 3).values()
    with pytest.raises(ParameterError, match="axis 'q'"):
        phase_diagram("deep_linear", Axis("q", 1, 2, 2), Axis("s", 1, 2, 2), "T_half", "/tmp")


def test_command_writes_data_and_figure(tmp_path, capsys):
    out = tmp_path / "pd"
    assert main(["phase-diagram", "--model", "deep_linear", "--x", "s", "--x-from", "1",
                 "--x-to", "2", "--x-num", "2", "--y", "sigma", "--y-from", "1e-4",
                 "--y-to", "1e-2", "--y-num", "2", "--y-log", "--quantity", "T_half",
                 "--out", str(out), "--workers", "1", "--no-progress", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["x"]["values"] == [1.0, 2.0] and (out / "phase_diagram.png").exists()
    assert main(["phase-diagram", "--model", "deep_linear", "--x", "s", "--x-from", "2",
                 "--x-to", "1", "--y", "sigma", "--y-from", "1e-4", "--y-to", "1e-2",
                 "--quantity", "T_half", "--out", str(out)]) == 2
    assert capsys.readouterr().err.count("\n") == 1
