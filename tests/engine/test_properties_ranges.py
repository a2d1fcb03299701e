"""Every declared range is honoured, for every registered model (a new one is picked up).

Drawn from each model's own declarations (``Params.declared()``) and SolverConfig's: inside
a range, ``solve`` exits 0 or 3 with one strict JSON document, or 2 with one line naming a
parameter (a run that cannot be done says which setting); never a traceback, never a hang.
Just outside, it exits 2 with one line naming the parameter, before any work.  The Python
API raises only ParameterError or DomainError.

The default run pins the parameters that select another derived system (the committee
machine's K, M, and eta > 0, which adds the learning-rate term), and draws no variant of
``_ranges.SLOW_VARIANTS``: each new system is seconds to minutes of SymPy, beyond the
suite's budget.  The slow variants draw them too (K, M up to
3: a K = M = 5 derivation alone takes minutes).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from reduced_odes import DomainError, ParameterError, SolverConfig, registered_models, solve

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from . import _ranges  # noqa: E402

MODELS = registered_models()
IDS = [m.name for m in MODELS]
#: Drawn settings per model in the default run: a few, the suite's budget (~10 s a model).
#: No shrinking: a draw is a whole run (seconds), and shrinking a failure re-ran hundreds
#: of them (minutes); the failing draw is reported as drawn, with its command line.
FEW = dict(max_examples=8, deadline=None, derandomize=True, database=None,
           phases=(Phase.explicit, Phase.reuse, Phase.generate), report_multiple_bugs=False,
           suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
MANY = {**FEW, "max_examples": 150, "derandomize": False}
#: The largest structural integer (K, M) the slow run draws: K = M = 5 derives for minutes.
SLOW_STRUCTURAL_MAX = 3


def _pinned(model, slow: bool) -> frozenset:
    return frozenset() if slow else frozenset(_ranges.structural(model))


def _bounded(model, setting: dict) -> dict:
    """The slow run's structural integers at most SLOW_STRUCTURAL_MAX."""
    values = {k: (min(v, SLOW_STRUCTURAL_MAX) if k in model.structural else v)
              for k, v in setting["values"].items()}
    return {**setting, "values": values}


def _names(model) -> tuple[str, ...]:
    return (*_ranges.declared(model.Params), *_ranges.SOLVER_NAMES)


def _inside(model, data, slow: bool) -> None:
    setting = data.draw(_ranges.settings(model, _pinned(model, slow), slow=slow),
                        label="setting")
    words = _ranges.argv(model, _bounded(model, setting))
    code, out, err = _ranges.run_cli(words)
    _ranges.check_outcome(code, out, err, _names(model), words)


def _outside(model, data) -> None:
    ranges = {**_ranges.declared(model.Params),
              **{k: v for k, v in _ranges.declared(SolverConfig).items()
                 if k in ("method", "rtol", "atol")}}
    name = data.draw(st.sampled_from(sorted(ranges)), label="parameter")
    value = data.draw(_ranges.outside(ranges[name]), label="value")
    words = ["solve", "--model", model.name, "--json", "--backend", "python", f"--{name}={value}"]

    def no_work(*args, **kwargs):
        raise AssertionError(f"work started for {' '.join(words)}")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("reduced_odes.cli.solve", no_work)
        code, out, err = _ranges.run_cli(words)
    assert code == 2, (words, code, err)
    _ranges.check_outcome(code, out, err, [name], words)


def _as_numpy(value, wrap: bool):
    """``value`` as the NumPy scalar of its kind (a flag stays a flag), if ``wrap``."""
    if not wrap:
        return value
    if isinstance(value, bool):
        return np.bool_(value)
    if isinstance(value, int):
        return np.int64(value)
    return np.float64(value) if isinstance(value, float) else np.str_(value)


def _api(model, data, slow: bool) -> None:
    setting = _bounded(model, data.draw(_ranges.settings(model, _pinned(model, slow),
                                                         solver=False, slow=slow),
                                        label="setting"))
    wrap = data.draw(st.booleans(), label="as NumPy scalars")
    values = {k: _as_numpy(v, wrap) for k, v in setting["values"].items()}
    try:
        params = model.make_params(values)
        model.check(params, setting["variant"])
    except ParameterError:  # a condition across parameters, named in its message
        return
    horizon = model.horizon(params, setting["variant"])
    assert 0 < horizon < math.inf, (setting, horizon)  # the drivers step forward to it
    try:
        solve(params, setting["variant"], SolverConfig(backend="python"), model=model)
    except (ParameterError, DomainError):
        pass


#: Default run: a few settings each; slow run (``-m slow``): many, structure not pinned.
SIZES = [pytest.param(False, id="few"), pytest.param(True, id="many", marks=pytest.mark.slow)]


def _drawn(check, many: bool, examples: int = FEW["max_examples"]):
    """``check(data)`` under Hypothesis, with the default run's or the slow run's settings."""
    return settings(**(MANY if many else {**FEW, "max_examples": examples}))(
        given(data=st.data())(check))


@pytest.mark.parametrize("many", SIZES)
@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_inside_every_range_solve_runs_or_says_why_in_one_line(model, many):
    _drawn(lambda data: _inside(model, data, slow=many), many)()


@pytest.mark.parametrize("many", SIZES)
@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_just_outside_a_range_solve_exits_2_naming_it_before_any_work(model, many):
    _drawn(lambda data: _outside(model, data), many, examples=6)()


@pytest.mark.parametrize("many", SIZES)
@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_inside_every_range_the_api_raises_only_parameter_or_domain_errors(model, many):
    _drawn(lambda data: _api(model, data, slow=many), many, examples=6)()
