"""Tests for the domain conditions of reduced_odes._symbolic.gradient_flow: every inequality
is read the way it is written, and anything else is refused in one line."""

from __future__ import annotations

import textwrap

import pytest
import sympy as sp

from reduced_odes import DerivationError, gradient_flow
from reduced_odes.cli import EXIT_BAD_INPUT, main

M = sp.Symbol("m", real=True)
LOSS = (M - sp.Rational(1, 4)) ** 2 / 2


@pytest.mark.parametrize("condition", [M < 1, M <= 1, 1 > M, 1 >= M,
                                       sp.Lt(M, 1, evaluate=False), sp.Ge(1, M, evaluate=False)])
def test_every_inequality_for_m_below_1_guards_1_minus_m(condition):
    """Issue 34 defect 7: ``m < 1`` compiled as ``m - 1 > 0``.  Each way of writing
    "m below 1" is the margin ``1 - m`` (what the compiler guards: ``lhs - rhs > 0``)."""
    (kept,) = gradient_flow((M,), LOSS, parameters=(), domain=[condition]).domain
    assert isinstance(kept, sp.StrictGreaterThan)
    assert sp.expand(kept.lhs - kept.rhs - (1 - M)) == 0


@pytest.mark.parametrize("condition", [M > 1, M >= 1, 1 < M, 1 <= M])
def test_every_inequality_for_m_above_1_guards_m_minus_1(condition):
    (kept,) = gradient_flow((M,), LOSS, parameters=(), domain=[condition]).domain
    assert sp.expand(kept.lhs - kept.rhs - (M - 1)) == 0


@pytest.mark.parametrize("condition, kind", [
    (sp.Eq(M, 1), "Equality"), (sp.Ne(M, 1), "Unequality"),
    (sp.And(M > 0, M < 1), "And"), (sp.Or(M > 0, M < -1), "Or"), (M, "Symbol"),
])
def test_a_condition_that_is_no_inequality_is_refused_in_one_line(condition, kind):
    with pytest.raises(DerivationError, match=rf"\({kind}\) is not an inequality; allowed: "
                                              r"a > b, a >= b, a < b or a <= b") as caught:
        gradient_flow((M,), LOSS, parameters=(), domain=[condition])
    assert "\n" not in str(caught.value)


def test_a_condition_that_holds_identically_is_dropped():
    positive = sp.Symbol("v", positive=True)
    flow = gradient_flow((M,), LOSS, parameters=(), domain=[positive > 0, positive >= 0])
    assert flow.domain == ()


MODEL = '''
    from dataclasses import dataclass

    from reduced_odes import Crossing, Model, Parameters, SettledRule, interval, parameter


    @dataclass(frozen=True)
    class P(Parameters):
        m0: float = parameter(0.5, interval(-10, 10), "the start")


    class Below(Model):
        name = "below_one"
        description = "m relaxes to 1/4 inside m below 1"
        Params = P
        tail = 0.0

        def derive(self, variant):
            import sympy as sp

            from reduced_odes import gradient_flow

            m = sp.Symbol("m", real=True)
            return gradient_flow((m,), (m - sp.Rational(1, 4)) ** 2 / 2, parameters=(),
                                 domain=[{relation}])

        def parameter_values(self, params, variant):
            return ()

        def initial_state(self, params, variant):
            return (params.m0,)

        def phases(self, params, variant, initial, thresholds):
            return [Crossing("T", "m", 0.3, direction=-1)]

        def settled(self, params, variant):
            return SettledRule("abs(m - 0.25) - 1e-6")

        def horizon(self, params, variant):
            return 20.0


    MODEL = Below()
'''


@pytest.mark.parametrize("relation", ["m < 1", "m <= 1", "1 > m", "sp.Ge(1, m)"])
def test_a_user_model_with_m_below_1_runs_inside_and_refuses_outside(tmp_path, capsys,
                                                                      relation):
    """End to end, from an author's file: a start inside (m0 = 0.5) runs, and a start on
    the other side (m0 = 2) is refused in one line naming the condition ``1 - m > 0``."""
    path = tmp_path / "below.py"
    path.write_text(textwrap.dedent(MODEL).replace("{relation}", relation))
    model = f"{path}:MODEL"
    assert main(["solve", "--model", model, "--m0", "0.5", "--backend", "python"]) == 0
    capsys.readouterr()
    assert main(["solve", "--model", model, "--m0", "2", "--backend", "python"]) \
        == EXIT_BAD_INPUT
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and "1 - m > 0 fails" in err[0], err
