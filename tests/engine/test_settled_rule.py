"""Tests for SettledRule's names (reduced_odes._stop_rules): a rule that reads a name it
cannot is refused before the run, in one line naming the rule and the names it may use."""

from __future__ import annotations

import textwrap

import pytest

from reduced_odes import ParameterError, SettledRule
from reduced_odes._params import native_available
from reduced_odes.cli import EXIT_BAD_INPUT, main

MODEL = '''
    from dataclasses import dataclass

    from reduced_odes import Crossing, Model, Parameters, SettledRule, parameter, positive


    @dataclass(frozen=True)
    class P(Parameters):
        m0: float = parameter(0.01, positive(1), "the start")


    class Grows(Model):
        name = "grows"
        description = "m grows to 1, integrated as log_m"
        Params = P
        tail = 0.0

        def derive(self, variant):
            import sympy as sp

            from reduced_odes import gradient_flow, log_coordinate

            m = sp.Symbol("m", positive=True)
            return gradient_flow((m,), (m - 1) ** 2 / 2, parameters=(),
                                 coordinates=[log_coordinate(m)],
                                 observables={"gap": 1 - m})

        def parameter_values(self, params, variant):
            return ()

        def initial_state(self, params, variant):
            import math

            return (math.log(params.m0),)

        def phases(self, params, variant, initial, thresholds):
            return [Crossing("T", "log_m", -0.7)]

        def settled(self, params, variant):
            return SettledRule({rule!r}, {constants!r})

        def horizon(self, params, variant):
            return 20.0


    MODEL = Grows()
'''

BACKENDS = ["python", *(["numba"] if native_available() else [])]


def _solve(tmp_path, rule: str, backend: str, constants=None) -> int:
    path = tmp_path / "grows.py"
    path.write_text(textwrap.dedent(MODEL).replace("{rule!r}", repr(rule))
                    .replace("{constants!r}", repr(constants or {})))
    return main(["solve", "--model", f"{path}:MODEL", "--backend", backend])


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_rule_on_a_state_variable_integrated_in_its_log_is_refused_before_the_run(
        tmp_path, capsys, backend):
    """Issue 34 defect 8: ``m`` where the coordinate is ``log_m`` crashed late with a
    NameError (exit 1).  Now exit 2, one line: the rule, what to write, the names."""
    assert _solve(tmp_path, "abs(m - 1) - 1e-9", backend) == EXIT_BAD_INPUT
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1, err
    assert "settled rule 'abs(m - 1) - 1e-9' of model 'grows' reads m" in err[0]
    assert "integrated as log_m: write math.exp(log_m)" in err[0]
    assert "the coordinates (log_m), the observables (gap)" in err[0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_rule_written_in_the_coordinate_or_an_observable_runs(tmp_path, capsys, backend):
    assert _solve(tmp_path, "abs(math.exp(log_m) - 1) - tol", backend, {"tol": 1e-9}) == 0
    assert _solve(tmp_path, "abs(gap) - 1e-9", backend) == 0


@pytest.mark.parametrize("rule, constants, needle", [
    ("abs(x) - 1", {}, "reads x; allowed: t, the coordinates (log_m)"),
    ("abs(log_m -", {}, "is not a Python expression"),
    ("abs(gap) - t", {"gap": 1.0}, "constant(s) ['gap'] are named like series"),
])
def test_other_bad_rules_are_refused_in_one_line(rule, constants, needle):
    with pytest.raises(ParameterError, match=r"settled rule .* of the model") as caught:
        SettledRule(rule, constants).check(("log_m",), ("m",), ("gap",))
    assert needle in str(caught.value) and "\n" not in str(caught.value)
