"""A Setting carries a model's parameters, variant, solver, thresholds and start through
solve, sweeps and the cross-check: built once, checked once, the same run either way."""

from __future__ import annotations

import pytest

from reduced_odes import ParameterError, Setting, SolverConfig, solve
from reduced_odes._registry import registered_models
from reduced_odes._sweep_command import solve_setting
from reduced_odes.models import get_model

from ._ranges import default_run_variants

MODELS = [m.name for m in registered_models()]


@pytest.mark.parametrize("name", MODELS)
def test_a_mapping_and_back_is_the_same_setting_for_every_model(name):
    model = get_model(name)
    # A setting is checked, and a check may derive the variant's flow: the default run's.
    for variant in default_run_variants(model):
        setting = Setting.from_mapping({model.variant_option: variant, "rtol": 1e-9}, model)
        mapping = setting.as_mapping()
        assert mapping["model"] == name and mapping[model.variant_option] == variant
        assert Setting.from_mapping(mapping) == setting


def test_solve_of_a_setting_is_solve_of_its_parts():
    model = get_model("deep_linear")
    params = model.make_params({"s": 2.0, "sigma": 1e-4})
    config = SolverConfig(rtol=1e-9)
    parts = solve(params, None, config, model=model)
    whole = solve(Setting.of(params, solver=config))
    assert whole.phases == parts.phases and (whole.t == parts.t).all()  # one code path
    # A sweep's line is the same setting, read from its flat mapping.
    line = solve_setting({"model": "deep_linear", "s": 2.0, "sigma": 1e-4, "rtol": 1e-9})
    assert line["phases"] == parts.to_dict()["phases"]


def test_a_setting_takes_no_second_copy_of_its_parts():
    setting = Setting.from_mapping({"model": "deep_linear"})
    with pytest.raises(ParameterError, match="takes no solver, variant"):
        solve(setting, "default", SolverConfig())


@pytest.mark.parametrize("mapping, needle", [
    ({"model": "deep_linear", "sigma": 1.0}, "sigma=1.0"),  # a parameter's range
    ({"model": "deep_linear", "variant": "other"}, "variant='other'"),  # the variants
    ({"model": "deep_linear", "rtol": 2.0}, "rtol=2.0"),  # the solver's ranges
    ({"model": "deep_linear", "s2": 1.0}, "unknown grid key(s) ['s2']"),  # the keys
    ({"model": "no_such_model"}, "no_such_model"),  # the model
])
def test_every_part_is_checked_when_the_setting_is_built(mapping, needle):
    with pytest.raises(ParameterError) as caught:
        Setting.from_mapping(mapping)
    assert needle in str(caught.value) and "\n" not in str(caught.value)


def test_the_wrong_parameters_for_the_model_are_refused():
    params = get_model("deep_linear").make_params({})
    with pytest.raises(ParameterError, match="must be a CommitteeParams"):
        Setting.of(params, model="committee_machine")
