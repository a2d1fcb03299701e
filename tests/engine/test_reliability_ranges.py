"""Settings that once crashed, hung or failed without saying why, one line each: every one
now runs, or exits 2 with one line naming the parameter (and, for a run that cannot be
done, the model, variant, every parameter and the solver)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

from reduced_odes import (
    DomainError,
    ParameterError,
    SolverConfig,
    get_model,
    registered_models,
    solve,
)
from reduced_odes.models.deep_linear import DeepLinearParams

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from . import _ranges  # noqa: E402

# (model, extra options, the words the one stderr line must hold); each exits 2.
REJECTED = [
    ("two_stage_features", ["--gamma", "1e300"], ["gamma=1e+300", "[0.1, 10]"]),  # OverflowError
    ("two_stage_features", ["--pi_P", "1e-99"], ["pi_P=1e-99", "[0.05, 0.95]"]),  # ZeroDivision
    ("two_stage_features", ["--v0", "1e300"], ["v0=1e+300"]),  # the v0 check overflowed
    ("two_stage_features", ["--N", "1e18"], ["N=1e+18"]),  # ZeroDivision in the optimum
    ("two_stage_features", ["--gamma", "1e30"], ["gamma=1e+30"]),  # log(0) in the stop rule
    ("two_stage_features", ["--sigma", "1e300"], ["sigma=1e+300"]),
    ("deep_linear", ["--sigma", "5e-324"], ["sigma=5e-324", "[1e-100, 0.1)"]),  # ZeroDivision
    ("deep_linear", ["--sigma", "1e-200"], ["sigma=1e-200"]),  # overflow of exp(-ln a)
    ("deep_linear", ["--s", "1e-300"], ["s=1e-300"]),  # did not settle by t = 1e18
    ("deep_linear", ["--s", "1e149"], ["s=1e+149"]),  # LSODA could not start
    ("induction_head", ["--sigma", "1e300"], ["sigma=1e+300", "(0, 0.5]"]),  # Overflow, margins
    ("induction_head", ["--sigma", "1e5"], ["sigma=100000.0"]),  # start outside the domain
    ("induction_head", ["--wstar", "1e-16"], ["wstar=1e-16"]),  # stalled at round-off
    ("two_mixture", ["--sigma", "1e-300"], ["sigma=1e-300"]),  # ZeroDivision, initial state
    ("two_mixture", ["--sigma_att", "1e-200"], ["sigma_att=1e-200"]),  # ZeroDivision, horizon
    ("two_mixture", ["--init", "random", "--A_I", "5e-324"], ["A_I=5e-324"]),  # brentq failed
    ("two_mixture", ["--protocol", "algorithm1", "--A_I", "1e-8"], ["A_I=1e-08", "start"]),
    ("two_mixture", ["--loss", "logistic", "--mu", "100"], ["theta2=0.5", "mu=100.0"]),
    ("two_mixture", ["--loss", "logistic", "--theta2", "0.99"], ["theta2=0.99"]),
    ("committee_machine", ["--activation", "relu", "--asymmetry", "1e-30"], ["asymmetry=1e-30"]),
    ("committee_machine", ["--activation", "linear", "--eta", "2"], ["eta=2.0", "plateau"]),
    ("committee_machine", ["--activation", "relu", "--M", "1"], ["eta=0.0", "M=1", "plateau"]),
    ("deep_linear", ["--atol", "8.99e299"], ["atol=8.99e+299", "[1e-30, 0.001]"]),  # Overflow
    ("deep_linear", ["--atol", "5e-324"], ["atol=5e-324"]),  # 1e5 steps
    ("two_mixture", ["--rtol", "1e-16"], ["rtol=1e-16", "[1e-13, 0.01]"]),  # istate -8
    ("induction_head", ["--rtol", "0.9999999999999999"], ["rtol=0.9999999999999999"]),
]


@pytest.mark.parametrize("model, options, words", REJECTED,
                         ids=[" ".join(options) for _, options, _ in REJECTED])
def test_once_crashing_settings_exit_2_naming_the_parameter(model, options, words):
    argv = ["solve", "--model", model, "--json", "--backend", "python", *options]
    code, out, err = _ranges.run_cli(argv)
    _ranges.check_outcome(code, out, err, [w.split("=")[0] for w in words[:1]], argv)
    assert code == 2
    for word in words:
        assert word in err, (word, err)


# (model, extra options): each runs to exit 0 or 3 (a phase not reached, with its reason).
RUNS = [
    ("deep_linear", ["--s", "1e-3", "--sigma", "0.06"]),  # integrated backwards before
    ("deep_linear", ["--s", "9.9e99", "--sigma", "1e-100"]),
    ("deep_linear", ["--s", "1e-12", "--sigma", "1e-100"]),
    ("committee_machine", ["--K", "1"]),  # did not settle by t = 1e18 (K < M)
    ("committee_machine", ["--activation", "relu", "--asymmetry", "1e-16"]),
    ("two_stage_features", ["--sigma", "1e-300", "--gamma", "10", "--mu", "0.1"]),
    ("induction_head", ["--wstar", "1e-8", "--L", "10000000000", "--alpha", "0.99"]),
    ("two_mixture", ["--loss", "logistic", "--mu", "20", "--kappa", "1", "--theta2", "0.5"]),
]


@pytest.mark.parametrize("model, options", RUNS, ids=[" ".join(o) for _, o in RUNS])
def test_once_failing_settings_run(model, options):
    argv = ["solve", "--model", model, "--json", "--backend", "python", *options]
    code, out, err = _ranges.run_cli(argv)
    assert code in (0, 3), err  # it runs: no parameter may be refused
    _ranges.check_outcome(code, out, err, [], argv)


def test_a_start_above_the_target_decays_forward_as_the_closed_form():
    """sigma^2 > e s made the horizon negative and the run went backwards.  u = a b obeys
    du/dt = 2u(s - u): u(t) = s / (1 + (s/u0 - 1) exp(-2 s t)), here from u0 = 3.6 s."""
    s, sigma = 1e-3, 0.06
    traj = solve(DeepLinearParams(s=s, sigma=sigma), solver=SolverConfig(backend="python"))
    t, u, u0 = np.asarray(traj.t), np.asarray(traj.series["u"]), sigma**2
    assert t[-1] > 0 and np.all(np.diff(t) > 0)
    exact = s / (1 + (s / u0 - 1) * np.exp(-2 * s * t))
    assert np.max(np.abs(u / exact - 1)) < 1e-7  # rtol 1e-10 per step, over ~1e3 steps
    assert traj.phases["T_half"] == 0.0  # u starts above s/2: the first crossing is at t = 0


@pytest.mark.parametrize("values, words", [
    ({"kappa": np.True_}, ["kappa=True", "not a number"]),  # was accepted as 1.0
    ({"protocol": np.array(["joint", "algorithm1"])}, ["protocol=array"]),  # was a ValueError
    ({"protocol": np.array(["joint"])}, ["protocol=array"]),  # was accepted as 'joint'
    ({"mu": np.array([1.0, 2.0])}, ["mu=array", "not a number"]),
    ({"mu": np.ones((2, 2))}, ["mu=array([[1., 1.], [1., 1.]])"]),  # one line, not two
])
def test_numpy_values_are_judged_as_their_kind(values, words):
    with pytest.raises(ParameterError) as info:
        get_model("two_mixture").make_params(values)
    assert "\n" not in str(info.value)
    for word in words:
        assert word in str(info.value), (word, str(info.value))


def test_numpy_scalars_of_the_right_kind_are_plain_values():
    params = get_model("two_mixture").make_params(
        {"protocol": np.str_("joint"), "width": np.int64(4), "mu": np.float64(2.0)})
    assert (type(params.protocol), type(params.width), type(params.mu)) == (str, int, float)
    flags = get_model("two_stage_features").make_params({"train_value": np.False_})
    assert flags.train_value is False


@pytest.mark.parametrize("failure", ["steps", "overflow"])
def test_a_solver_failure_names_model_variant_parameters_and_solver(monkeypatch, without_numba,
                                                                    failure):
    """A driver's failure names the setting; an overflow escaping a driver is a DomainError
    with it, not a traceback (without_numba: no retry, the pure path's own message)."""
    def failing(problem):
        raise OverflowError("math range error")

    if failure == "steps":
        monkeypatch.setattr("reduced_odes._lsoda._MAX_STEPS", 20)  # LSODA's own message
    else:
        monkeypatch.setattr("reduced_odes._lsoda._lsoda_run", failing)
    argv = ["solve", "--model", "deep_linear", "--s", "2", "--json", "--backend", "python"]
    code, out, err = _ranges.run_cli(argv)
    # Steps spent: a partial run, its phase not reached (3); an overflow: nothing to show (2).
    assert code == (3 if failure == "steps" else 2) and len(err.strip().splitlines()) == 1, err
    for word in ("deep_linear", "variant 'default'", "s=2.0", "sigma=0.001", "LSODA",
                 "rtol=1e-10", "atol=1e-12"):
        assert word in err, (word, err)


def test_an_error_message_with_a_newline_is_printed_on_one_line(monkeypatch):
    def failing(*args, **kwargs):
        raise DomainError("first line\nsecond line")

    monkeypatch.setattr("reduced_odes.cli.solve", failing)
    code, out, err = _ranges.run_cli(["solve", "--model", "deep_linear"])
    assert (code, err) == (2, "reduced-odes solve: error: first line second line\n")


@pytest.mark.parametrize("slow", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_every_horizon_is_a_finite_time_after_0_at_the_corners_of_the_ranges(slow):
    """The drivers step forward from t = 0 to the horizon: each model's, at every corner
    of its real ranges that its checks accept, is finite and > 0 (in the default run, for
    the variants but ``_ranges.SLOW_VARIANTS``: a check may derive the variant's flow)."""
    import itertools

    for model in registered_models():
        ranges = {k: v for k, v in _ranges.declared(model.Params).items() if v.kind == "real"}
        corners = [_ranges.edges(r) for r in ranges.values()]
        for values in itertools.product(*corners):
            for variant in model.variants if slow else _ranges.default_run_variants(model):
                try:
                    params = model.make_params(dict(zip(ranges, values, strict=True)))
                    model.check(params, variant)
                except ParameterError:
                    continue
                horizon = model.horizon(params, variant)
                assert 0 < horizon < math.inf, (model.name, values, horizon)
