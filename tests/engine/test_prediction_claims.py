"""Claims declared as data: a user's model (``saddle_model.py``) names its settings and
tolerances in a :class:`~reduced_odes.PredictionClaims`, writes no hook, and ``verify``
holds the predicted escape from its saddle and its convergence rate against the run."""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from reduced_odes import ParameterError, PredictionClaims, get_model, verify
from reduced_odes.cli import main

MODEL = f"{Path(__file__).with_name('saddle_model.py')}:MODEL"


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    with ThreadPoolExecutor(1) as pool:
        return verify(MODEL, "quick", out=tmp_path_factory.mktemp("verify"), executor=pool,
                      progress=False)


def test_verify_runs_the_declared_claims(report):
    assert report.passed, [c.as_dict() for c in report.claims]
    assert [c.name for c in report.claims] == [
        "T_half from the saddle (delta=1e-06)",
        "convergence rate from the slowest eigenvalue (delta=1e-06)",
        "T_half from the saddle (delta=1e-09, s=2.0)",
        "convergence rate from the slowest eigenvalue (delta=1e-09, s=2.0)"]


def test_the_predictions_are_the_exact_eigenvalues(report):
    """The saddle at the origin grows at s, the learnt line a b = s decays at 2 s (closed
    forms of the Jacobian [[-b^2, s - 2ab], [s - 2ab, -a^2]])."""
    for record in report.records:
        s = record["setting"].get("s", 1.0)
        predictions = record["result"]["predictions"]
        (plateau,) = predictions["plateaus"]
        # 1e-12: Newton's fixed point and the eigenvalues of the exact Jacobian, round-off.
        assert plateau["eigenvalue"] == pytest.approx(s, rel=1e-12)
        assert plateau["saddle"] == pytest.approx({"a": 0.0, "b": 0.0}, abs=1e-12)
        assert predictions["convergence"]["predicted_rate"] == pytest.approx(2 * s, rel=1e-12)


def test_a_tighter_declaration_fails():
    model = get_model(MODEL)
    strict = dataclasses.replace(model.claimed_predictions, escape_rtol=1e-9)
    record = strict.measure(model, {"delta": 1e-6})
    rows = strict.claims([{"setting": {"delta": 1e-6}, "result": record}])
    # The escape is predicted to ~1e-6 (linear theory at the nearest approach): not to 1e-9.
    assert [r.passed for r in rows] == [False, True]


def test_bad_declarations_and_grids(capsys):
    with pytest.raises(ParameterError, match="escape_rtol=2"):
        PredictionClaims({"quick": []}, escape_rtol=2)
    with pytest.raises(ParameterError, match="grid='full'"):
        get_model(MODEL).verify_settings("full", ["default"])
    with pytest.raises(SystemExit) as exit_status:  # the command's choices are the grids
        main(["verify", "--model", MODEL, "--grid", "full"])
    assert exit_status.value.code == 2 and capsys.readouterr().err.count("\n") == 1
