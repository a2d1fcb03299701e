"""The analysis commands on the command line: one JSON document, or exit 2 with one line."""

from __future__ import annotations

import json

import pytest

from reduced_odes.cli import main


def test_fixed_points_json(capsys):
    assert main(["fixed-points", "--model", "deep_linear", "--s", "4", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    [point] = document["fixed_points"]
    assert point["kind"] == "stable" and set(point) >= {"state", "eigenvalues", "observables"}
    # 1e-12: Newton to round-off on rates ~ s = 4; the run starts at a = b, so a = b = 2.
    assert point["observables"]["u"] == pytest.approx(4.0, rel=1e-12)
    assert point["eigenvalues"] == pytest.approx([0.0, -8.0], abs=1e-9)


def test_fixed_points_table(capsys):
    assert main(["fixed-points", "--model", "deep_linear", "--no-trajectory",
                 "--seed", "a=1,b=2"]) == 0
    assert "stable" in capsys.readouterr().out


def test_continue_json(capsys):
    assert main(["continue", "--model", "deep_linear", "--s", "1", "--param", "s", "--to", "3",
                 "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["bifurcations"] == [] and len(document["branches"]) == 1
    last = document["branches"][0]["points"][-1]
    assert last["s"] == 3.0
    # 1e-12: the corrector ends at round-off (on the line a b = s; where on it, the
    # arclength decides, not the balance law).
    assert last["state"]["a"] * last["state"]["b"] == pytest.approx(3.0, rel=1e-12)


@pytest.mark.parametrize(("argv", "names"), [
    (["continue", "--model", "deep_linear", "--param", "t", "--to", "2"], "param='t'"),
    (["continue", "--model", "deep_linear", "--param", "s", "--to", "-2"], "s=-2"),
    (["continue", "--model", "deep_linear", "--param", "s", "--to", "nan"], "nan"),
    (["fixed-points", "--model", "deep_linear", "--seed", "a=1"], "initial="),
    (["fixed-points", "--model", "deep_linear", "--seed", "a"], "seed='a'"),
])
def test_bad_input_exits_2_with_one_line(capsys, argv, names):
    try:
        status = main(argv)
    except SystemExit as exc:  # a usage error: argparse exits (status 2, one line)
        status = exc.code
    assert status == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and names in err


def test_scaling_json(capsys):
    assert main(["scaling", "--model", "deep_linear", "--param", "sigma", "--from", "1e-12",
                 "--to", "1e-4", "--phase", "T_half", "--per-decade", "1", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    # T = ln(s/sigma^2 - 1)/(2s) = -ln(sigma) + O(sigma^2) at s = 1: a logarithm, A = -1.
    assert document["law"] == "log" and document["exponent"] == 0.0
    assert document["coefficients"]["A"] == pytest.approx(-1.0, rel=1e-6)


def test_continue_draws_the_bifurcation_diagram(tmp_path, capsys):
    stem = tmp_path / "bif"
    assert main(["continue", "--model", "deep_linear", "--s", "1", "--param", "s", "--to", "2",
                 "--figure", str(stem), "--observable", "u"]) == 0
    assert (tmp_path / "bif.png").exists() and (tmp_path / "bif.json").exists()
    assert "bif.png" in capsys.readouterr().out
