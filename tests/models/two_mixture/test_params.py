"""Bad input (spec section 8): a ParameterError naming the parameter, its value and the range."""

import json
import math

import pytest

from reduced_odes import ParameterError, SolverConfig, solve
from reduced_odes.models.two_mixture import MODEL, TwoMixtureParams


@pytest.mark.parametrize("field, value, allowed", [
    ("mu", 0.0, "[0.001, 1000]"), ("mu", -1.0, "[0.001, 1000]"),
    ("kappa", math.nan, "[0.001, 1000]"), ("sigma", 0.0, "[1e-20, 1)"),
    ("sigma_att", math.inf, "[1e-100, 1)"),
    ("init", "uniform", "averaged, random"), ("protocol", "greedy", "joint, algorithm1"),
    ("theta2", 1.0, "[1e-12, 0.95]"), ("A_I", 0.0, "[1e-12, 1)"),
    ("theta_II", 1.5, "[1e-12, 0.95]"), ("L3", -0.1, "[1e-12, inf)"), ("A1", 0.0, "[1e-12, 10]"),
    ("width", 3, "even"), ("width", 0, "[2, "),
    ("d_att", 3, "[4, "), ("d_val", 1, "[2, "),
])
def test_bad_field_names_parameter_value_and_range(field, value, allowed):
    with pytest.raises(ParameterError) as info:
        TwoMixtureParams(**{field: value})
    message = str(info.value)
    assert message.startswith(f"{field}=") and repr(value) in message and allowed in message


@pytest.mark.parametrize("field, value, variant, allowed", [
    ("A1", 1.0001, "square", "A*(theta0)"),  # A* is 1 + O(theta0): just above 1 is unreachable
    ("A_I", 0.99, "square", None),            # below A*: accepted
    ("L3", 0.5, "square", "L(0)"),            # the square loss starts just below 1/2
    ("L3", 0.7, "logistic", "L(0)"),          # the logistic loss starts at ln 2 = 0.693
])
def test_thresholds_the_loss_cannot_reach(field, value, variant, allowed):
    params = TwoMixtureParams(**{field: value})
    if allowed is None:
        MODEL.check(params, variant)
        return
    with pytest.raises(ParameterError) as info:
        MODEL.check(params, variant)
    assert str(info.value).startswith(f"{field}={value!r} ") and allowed in str(info.value)


def test_unknown_loss_names_the_variants():
    with pytest.raises(ParameterError, match="loss='hinge'; allowed: square, logistic"):
        MODEL.resolve_variant("hinge")


def test_staged_protocol_chooses_the_trained_block():
    with pytest.raises(ParameterError, match="train='neurons' with protocol='algorithm1'"):
        solve(TwoMixtureParams(protocol="algorithm1", train="neurons"))


def test_staged_run_must_outlast_stages_one_and_two():
    with pytest.raises(ParameterError, match="t_end=100.0 must exceed"):
        solve(TwoMixtureParams(protocol="algorithm1"), solver=SolverConfig(t_end=100.0))


def test_algorithm1_through_the_command_line(capsys):
    from reduced_odes.cli import main

    assert main(["solve", "--model", "two_mixture", "--protocol", "algorithm1", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert {"stage_I", "stage_II", "stage_III", "T1", "T2", "T3"} <= set(document["phases"])
    floor = 0.25 * (1 - 0.9) ** 2 / (1 + 0.9**2)  # L*(theta_II): neurons alone stop there
    assert document["final"]["loss"] == pytest.approx(floor, rel=1e-6)  # converged stage III


def test_bad_stage_three_factor():
    with pytest.raises(ParameterError, match=r"stage3_factor=0.0 .*\[0.001, 1e\+06\)"):
        TwoMixtureParams(stage3_factor=0.0)


def test_horizon_must_be_positive():
    with pytest.raises(ParameterError, match="t_end"):
        SolverConfig(t_end=0.0)
