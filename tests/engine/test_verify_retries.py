"""Tests for reduced_odes._verify and _retries: a setting whose run was retried on another
backend or stepper says so in the raw results, the claims file and the verdict table."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import reduced_odes._integrate as integrate
from reduced_odes import verify
from reduced_odes._results_file import read_results
from reduced_odes._trajectory import DomainError


@pytest.fixture()
def first_run_fails(monkeypatch):
    """The first run of the process fails as a native run can (a step size that became too
    small) and is retried (on the same backend here, so that no twin is compiled)."""
    real, calls = integrate._solve_on, []

    def flaky(setting):
        calls.append(setting.solver.backend)
        if len(calls) == 1:
            raise DomainError("the step size became too small (injected)")
        return real(setting)

    monkeypatch.setattr(integrate, "_solve_on", flaky)
    monkeypatch.setattr(integrate, "_other_backend", lambda backend: backend)
    return calls


def test_verify_says_which_setting_was_retried_and_why(first_run_fails, tmp_path):
    """Issue 34 defect 9: ``solve --json`` had ``solver.retried``; ``verify`` showed no
    retry anywhere."""
    with ThreadPoolExecutor(1) as pool:
        report = verify("committee_machine", "quick", "linear", out=tmp_path, executor=pool,
                        progress=False, backend="python")
    assert report.passed and len(first_run_fails) >= 2
    (row,) = report.retried
    assert row["setting"]["variant"] == "linear"
    assert len(row["retries"]) == 1
    assert "backend python: the step size became too small (injected)" in row["retries"][0]
    table = report.table()
    assert "Retried on another backend or stepper: 1 setting(s)" in table
    assert "the step size became too small (injected)" in table
    assert (tmp_path / "verify-quick.md").read_text() == table + "\n"
    claims = json.loads((tmp_path / "verify-quick.json").read_text())
    assert claims["retried"] == report.retried
    (raw,) = read_results(Path(report.files["raw"]))
    assert raw["result"]["retried"] == row["retries"]
    assert "retried" not in report.records[0]["result"]  # the model's claims see its own


def test_a_verify_without_retries_writes_what_it_wrote_before(tmp_path):
    """No retry: no ``retried`` member anywhere, so committed verdicts stay bit for bit."""
    with ThreadPoolExecutor(1) as pool:
        report = verify("committee_machine", "quick", "linear", out=tmp_path, executor=pool,
                        progress=False, backend="python")
    assert report.retried == [] and "Retried" not in report.table()
    assert "retried" not in json.loads((tmp_path / "verify-quick.json").read_text())
    assert "retried" not in read_results(Path(report.files["raw"]))[0]["result"]
