"""What a user's model met: NumPy scalars in its claims serialise, and a model that declares
no verification grid still runs every command, ``verify`` refusing it in one line."""

from __future__ import annotations

import json

import numpy as np
import pytest

from reduced_odes import Claim, ParameterError, get_model, solve, verify
from reduced_odes.cli import main
from reduced_odes.models.deep_linear import DeepLinearParams


def test_numpy_scalars_in_a_claim_become_python_ones():
    claim = Claim("c", np.float64(1.0), np.float32(1.5), np.float64(0.5), 1.0, np.bool_(True))
    assert type(claim.passed) is bool and type(claim.measured) is float
    assert json.loads(json.dumps(claim.as_dict()))["passed"] is True


@pytest.fixture()
def no_grids(monkeypatch):
    model = get_model("deep_linear")
    monkeypatch.setattr(type(model), "grids", ())
    monkeypatch.setattr(type(model), "claims", lambda self, records, variants: [])
    return model


def test_a_model_without_grids_solves_and_verify_refuses_in_one_line(no_grids, capsys,
                                                                      monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # where verify's default output directory would be made
    assert solve(DeepLinearParams(), model=no_grids).phases["T_half"] > 0
    assert main(["solve", "--model", "deep_linear", "--json"]) == 0
    capsys.readouterr()
    assert main(["verify", "--model", "deep_linear"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "grid" in err[0], err
    assert not (tmp_path / "results").exists()  # refused before any directory is made
    with pytest.raises(ParameterError, match="no verification grid"):
        verify(no_grids, "quick")
