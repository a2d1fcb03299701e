"""The native backend agrees with the pure-Python path (skipped without numba).

The stop rules that the models can declare natively (``native_settled``) are
defined here for the built-in models and checked against their Python rules;
``with_rule`` lends one to a model for a test, and the benchmark uses it too.
"""

from __future__ import annotations

import contextlib
import math
import os
from pathlib import Path

import numpy as np
import pytest

from reduced_odes import solve
from reduced_odes._native import SettledRule, available
from reduced_odes.models import get_model

pytestmark = pytest.mark.skipif(not available(), reason="numba is not installed (the [fast] extra)")

#: Native and pure phase times are two integrators' answers at rtol 1e-10 (the pure path's
#: default); 1e-8 leaves two orders of magnitude for their different step sequences.
PHASE_RTOL = 1e-8


def _induction_head_rule(model, params, variant) -> SettledRule:
    from reduced_odes._native import _system
    from reduced_odes.models.induction_head import (FOUR_GRAM_FLOOR, FOUR_GRAM_TAIL,
                                                    NEAR_FIXED_POINT, PhaseThresholds)

    system = _system(model, variant)  # load_system, once: it walks the model's sources
    args = model.parameter_values(params, variant)
    g4 = system.observable_names.index("L_G4")
    start = system.observables(model.initial_state(params, variant), *args)[g4]
    return SettledRule(
        "max(abs(log_w_kq - target) - near, -1.0 if L_G4 <= floor else "
        "max(abs(4 * t * L_G4 - 1) - tail, L_G4 - learned))",
        {"target": math.log(params.wstar), "near": NEAR_FIXED_POINT, "floor": FOUR_GRAM_FLOOR,
         "tail": FOUR_GRAM_TAIL, "learned": PhaseThresholds().four_gram * start})


def _deep_linear_rule(model, params, variant) -> SettledRule:
    return SettledRule("abs(log_a + log_b - target) - 1e-9", {"target": math.log(params.s)})


RULES = {"induction_head": _induction_head_rule, "deep_linear": _deep_linear_rule}


@contextlib.contextmanager
def with_rule(model):
    """``model`` with its native stop rule from :data:`RULES` lent for the block."""
    declare = RULES[model.name]
    model.native_settled = lambda params, variant: declare(model, params, variant)
    try:
        yield model
    finally:
        del model.native_settled


def _solve_numba(params, variant, model):
    from reduced_odes._native import solve_numba

    return solve_numba(params, variant, model=model)


def _assert_same_phases(native, pure):
    assert native.phases.keys() == pure.phases.keys()
    for name, expected in pure.phases.items():
        if math.isnan(expected):
            assert math.isnan(native.phases[name]), name
        else:
            assert native.phases[name] == pytest.approx(expected, rel=PHASE_RTOL), name


@pytest.fixture(autouse=True, scope="module")
def _lasting_cache():
    """A compile cache that outlives the session: numba's machine code is kept beside the
    twins, and compiling them afresh each session would take most of a minute.  Every entry
    is keyed by a hash of what it was made from, so sharing it between sessions is safe."""
    mp = pytest.MonkeyPatch()
    lasting = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    mp.setenv("REDUCED_ODES_CACHE", str(lasting / "reduced-odes-native-tests"))
    yield
    mp.undo()


MODELS = ["deep_linear", "induction_head", "two_stage_features", "two_mixture"]


@pytest.mark.parametrize("name", MODELS)
def test_every_model_agrees_at_its_defaults(name):
    model = get_model(name)
    for variant in model.variants:
        params = model.make_params({})
        pure = solve(params, variant, model=model)
        native = _solve_numba(params, variant, model)
        _assert_same_phases(native, pure)
        # The run ends at (1 + tail) t_settle; a stop rule's threshold can sit a few
        # tolerances from its fixed point, so t_settle is only as sharp as rtol/threshold.
        assert native.t[-1] == pytest.approx(pure.t[-1], rel=1e-3)


@pytest.mark.parametrize("name", sorted(RULES))
def test_declared_rule_equals_the_python_rule(name):
    from reduced_odes._compile import load_system
    from reduced_odes._native._twin import load_twin

    model = get_model(name)
    params, variant = model.make_params({}), model.variants[0]
    rule = RULES[name](model, params, variant)
    twin = load_twin(load_system(model, variant), rule)
    python_rule = solve(params, variant, model=model)
    settled = model.settled(params, variant)
    args = np.array(model.parameter_values(params, variant), dtype=float)
    constants = np.array(list(rule.constants.values()))
    for t, y in zip(python_rule.t[::20], python_rule.at(python_rule.t[::20]).T, strict=True):
        expected = settled(t, y) if settled.__code__.co_argcount == 2 else settled(y)
        # Same expression, same operations: only the observables' kernels may differ in an ulp.
        assert twin.settled(t, y, args, constants) == pytest.approx(expected, rel=1e-12, abs=1e-15)


GRID = [dict(L=50, sigma=1e-2, wstar=0.05), dict(L=200, sigma=1e-4, wstar=0.3),
        dict(L=1e5, sigma=1e-12, wstar=0.45), dict(L=1e3, alpha=0.2, sigma=1e-6, wstar=0.2)]


@pytest.mark.parametrize("setting", GRID)
def test_induction_head_grid_with_the_declared_rule(setting):
    model = get_model("induction_head")
    params = model.make_params(setting)
    pure = solve(params, model=model)
    with with_rule(model):
        native = _solve_numba(params, None, model)
    _assert_same_phases(native, pure)


def test_output_grid_and_series_match():
    model = get_model("induction_head")
    params = model.make_params({})
    pure = solve(params, model=model)
    with with_rule(model):
        native = _solve_numba(params, None, model)
    assert native.t.size == pure.t.size and set(native.series) == set(pure.series)
    # The grids end at each run's (1 + tail) t_settle, which differ by ~1e-6 (see above), so
    # the series are compared at the pure run's times, through the native dense output.
    y = native.at(pure.t)
    system, args = native.system, native.system_args
    at_pure = {name: y[i] for i, name in enumerate(system.coordinate_names)}
    at_pure.update(zip(system.state_names, np.array([system.state(c, *args) for c in y.T]).T))
    at_pure.update(native.observables_at(pure.t))
    for name in model.nonnegative:
        at_pure[name] = np.maximum(at_pure[name], 0.0)
    for name, values in pure.series.items():
        # Interpolants of two integrators at rtol 1e-10: agree to ~1e-8 of the series' scale.
        scale = np.max(np.abs(values)) + 1e-300
        assert np.max(np.abs(at_pure[name][1:-1] - values[1:-1])) <= 1e-7 * scale, name
        # Its own grid: the native series are its dense output there.
        assert native.series[name][0] == pytest.approx(values[0], rel=1e-12), name


def test_a_fixed_end_is_reached_exactly():
    model = get_model("deep_linear")
    params = model.make_params({})
    from reduced_odes._params import SolverConfig

    from reduced_odes._native import solve_numba

    native = solve_numba(params, solver=SolverConfig(t_end=3.0), model=model)
    assert native.t[-1] == 3.0
    pure = solve(params, solver=SolverConfig(t_end=3.0), model=model)
    # Interpolated end states of two integrators at rtol 1e-10.
    assert native.final["u"] == pytest.approx(pure.final["u"], rel=1e-8)
