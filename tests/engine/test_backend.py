"""Backend selection: ``auto`` decided per job, ``numba`` refused cleanly without numba.

These run without numba (the CI installs ``[test]`` only); the native answers
themselves are checked in ``test_native.py``.
"""

from __future__ import annotations

import math

import pytest

from reduced_odes import ParameterError, SettledRule, SolverConfig, _backend, _params, solve
from reduced_odes._compile import load_system
from reduced_odes.cli import EXIT_BAD_INPUT, main
from reduced_odes.models import get_model


def test_a_trajectory_records_the_backend_that_ran_it():
    model = get_model("deep_linear")
    assert SolverConfig().backend == "auto"
    assert solve(model.make_params({}), model=model).solver.backend == "python"


def test_numba_without_numba_is_one_parameter_error(without_numba):
    with pytest.raises(ParameterError, match=r"backend='numba' needs numba.*\[fast\]"):
        SolverConfig(backend="numba")


@pytest.mark.parametrize("command", [["solve"], ["sweep", "--grid", "missing.toml"],
                                     ["verify", "--grid", "quick"]])
def test_cli_numba_without_numba_exits_2_before_any_work(without_numba, capsys, tmp_path,
                                                           command):
    argv = [*command, "--backend", "numba"]
    if command[0] != "solve":
        argv += ["--out", str(tmp_path / "out")]
    code = main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == EXIT_BAD_INPUT and len(err) == 1 and "backend='numba'" in err[0], err
    assert not list(tmp_path.iterdir())  # nothing written


def test_auto_is_python_for_small_jobs_and_says_fast_exists_for_large(without_numba, capsys):
    assert _backend.for_job("auto", _backend.NATIVE_MIN_SETTINGS - 1) == "python"
    assert capsys.readouterr().err == ""
    assert _backend.for_job("auto", _backend.NATIVE_MIN_SETTINGS) == "python"
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "reduced-odes[fast]" in err[0]


def test_auto_prefers_numba_for_large_jobs_when_installed(monkeypatch):
    monkeypatch.setattr(_params, "native_available", lambda: True)
    assert _backend.for_job("auto", _backend.NATIVE_MIN_SETTINGS) == "numba"
    assert _backend.for_job("python", 10**6) == "python"


def test_a_jobs_preference_resolves_auto_and_is_restored():
    with _backend.preferred_backend("python"):
        assert _backend.resolve("auto") == "python"
    assert _backend.resolve("auto") == "python"


def test_settled_rule_is_the_python_rule_it_replaced():
    """The induction head's rule as an expression, against the same rule written out."""
    from reduced_odes.models.induction_head.model import (
        FOUR_GRAM_FLOOR,
        FOUR_GRAM_TAIL,
        NEAR_FIXED_POINT,
        PhaseThresholds,
    )

    model = get_model("induction_head")
    params = model.make_params({})
    system = load_system(model, "linear")
    args = model.parameter_values(params, "linear")
    rule = model.settled(params, "linear")
    assert isinstance(rule, SettledRule)
    evaluate = rule.function(system.coordinate_names, system.observable_names,
                             system.observables, args)
    g4 = system.observable_names.index("L_G4")
    learned = PhaseThresholds().four_gram * system.observables(
        model.initial_state(params, "linear"), *args)[g4]

    def written_out(t, y):
        loss = system.observables(y, *args)[g4]
        four_gram = -1.0 if loss <= FOUR_GRAM_FLOOR else max(
            abs(4 * t * loss - 1) - FOUR_GRAM_TAIL, loss - learned)
        return max(abs(y[3] - math.log(params.wstar)) - NEAR_FIXED_POINT, four_gram)

    run = solve(params, model=model)
    for t, y in zip(run.t[::25], run.at(run.t[::25]).T, strict=True):
        assert evaluate(t, y) == written_out(t, y)  # the same operations in the same order
    assert evaluate(1.0, [0.1, 0.0, 0.1, 5.0]) == math.inf  # w_kq > 1/2: outside the domain
