"""The native backend agrees with the pure-Python path (skipped without numba).

Both are asked the same question through one verb, ``solve``, differing only in
``SolverConfig(backend=...)``; the pure path is the reference.
"""

from __future__ import annotations

import math
import types
from pathlib import Path

import numpy as np
import pytest

from reduced_odes import SettledRule, SolverConfig, solve
from reduced_odes._backend import native_available
from reduced_odes.models import get_model

from ._numba_cache import compiled_in_order

pytestmark = pytest.mark.skipif(not native_available(),
                                reason="numba is not installed (the [fast] extra)")

#: Native and pure phase times at rtol 1e-10 (the pure path's default; the native BDF runs at
#: a tenth of it): they differ by the pure path's own error, up to 4.7e-9 here (two_mixture's
#: T_thetaII, whose slow approach magnifies it; LSODA misses an rtol 1e-13 reference by
#: 4.6e-9 there).  test_backend_contract.py holds them to 1e-9 or to their error estimates.
PHASE_RTOL = 1e-8


def _native() -> SolverConfig:
    """Built per test: without numba the configuration itself is refused (test_backend.py)."""
    return SolverConfig(backend="numba")


def _assert_same_phases(native, pure):
    assert native.phases.keys() == pure.phases.keys()
    for name, expected in pure.phases.items():
        if math.isnan(expected):
            assert math.isnan(native.phases[name]), name
        else:
            assert native.phases[name] == pytest.approx(expected, rel=PHASE_RTOL), name


MODELS = ["deep_linear", "induction_head", "two_stage_features", "two_mixture"]


@pytest.mark.parametrize("name", MODELS)
def test_every_model_agrees_at_its_defaults(name):
    model = get_model(name)
    for variant in model.variants:
        params = model.make_params({})
        pure = solve(params, variant, model=model)
        native = solve(params, variant, _native(), model=model)
        assert (native.solver.backend, pure.solver.backend) == ("numba", "python")
        _assert_same_phases(native, pure)
        # The run ends at (1 + tail) t_settle; a stop rule's threshold can sit a few
        # tolerances from its fixed point, so t_settle is only as sharp as rtol/threshold:
        # two_stage_features' pure t_settle is 1.8e-3 from rtol 1e-12's (native: 3e-4).
        assert native.t[-1] == pytest.approx(pure.t[-1], rel=3e-3)


@pytest.mark.parametrize("name", ["deep_linear", "induction_head", "two_stage_features",
                                  "two_mixture"])
def test_compiled_rule_equals_its_python_evaluation(name):
    from reduced_odes._compile import load_system
    from reduced_odes._native._twin import load_twin

    model = get_model(name)
    params, variant = model.make_params({}), model.variants[0]
    rule = model.settled(params, variant)
    assert isinstance(rule, SettledRule)
    system = load_system(model, variant)
    twin = load_twin(system, rule)
    args = model.parameter_values(params, variant)
    python_rule = rule.function(system.coordinate_names, system.observable_names,
                                system.observables, args)
    run = solve(params, variant, model=model)
    constants = np.array(list(rule.constants.values()))
    for t, y in zip(run.t[::20], run.at(run.t[::20]).T, strict=True):
        # Same expression, same operations: only the observables' kernels may differ in an ulp.
        assert twin.settled(t, y, np.array(args, dtype=float), constants) == pytest.approx(
            python_rule(t, y), rel=1e-12, abs=1e-15)


GRID = [dict(L=50, sigma=1e-2, wstar=0.05), dict(L=200, sigma=1e-4, wstar=0.3),
        dict(L=1e5, sigma=1e-12, wstar=0.45), dict(L=1e3, alpha=0.2, sigma=1e-6, wstar=0.2)]


@pytest.mark.parametrize("setting", GRID)
def test_induction_head_grid(setting):
    model = get_model("induction_head")
    params = model.make_params(setting)
    _assert_same_phases(solve(params, solver=_native(), model=model), solve(params, model=model))


MODEL_GRID = [
    *(("two_stage_features", variant, setting) for variant in ("relu", "linear")
      for setting in (dict(sigma=1e-6), dict(pi_P=0.7, N=8), dict(gamma=2.0, mu=0.5),
                      dict(train_value=False))),
    *(("two_mixture", variant, setting) for variant in ("square", "logistic")
      for setting in (dict(train="neurons"), dict(train="attention"), dict(mu=2.0))),
    ("two_mixture", "square", dict(sigma=1e-3, kappa=1.0)),
    ("two_mixture", "logistic", dict(sigma=1e-3, kappa=1.0))]


@pytest.mark.parametrize("name, variant, setting", MODEL_GRID)
def test_the_other_models_grids(name, variant, setting):
    """Away from the defaults, including each block trained alone and a value frozen."""
    model = get_model(name)
    params = model.make_params(setting)
    _assert_same_phases(solve(params, variant, _native(), model=model),
                        solve(params, variant, model=model))


def test_output_grid_and_series_match():
    model = get_model("induction_head")
    params = model.make_params({})
    pure = solve(params, model=model)
    native = solve(params, solver=_native(), model=model)
    assert native.t.size == pure.t.size and set(native.series) == set(pure.series)
    # The grids end at each run's (1 + tail) t_settle, which differ by ~1e-6 (see above), so
    # the series are compared at the pure run's times, through the native dense output.
    y = native.at(pure.t)
    system, args = native.system, native.system_args
    at_pure = {name: y[i] for i, name in enumerate(system.coordinate_names)}
    at_pure.update(zip(system.state_names, np.array([system.state(c, *args) for c in y.T]).T,
                       strict=True))
    at_pure.update(native.observables_at(pure.t))
    for name in model.nonnegative:
        at_pure[name] = np.maximum(at_pure[name], 0.0)
    for name, values in pure.series.items():
        # Interpolants of two integrators at rtol 1e-10: agree to ~1e-8 of the series' scale.
        scale = np.max(np.abs(values)) + 1e-300
        assert np.max(np.abs(at_pure[name][1:-1] - values[1:-1])) <= 1e-7 * scale, name
        # Its own grid: the native series are its dense output there.
        assert native.series[name][0] == pytest.approx(values[0], rel=1e-12), name


def test_dense_output_serves_times_in_any_order():
    """Increasing times walk each block's steps once; times out of order are served by
    bisection, to the same bits."""
    model = get_model("induction_head")
    native = solve(model.make_params({}), solver=_native(), model=model)
    t = np.geomspace(1e-3, native.t[-1], 500)
    order = np.random.default_rng(0).permutation(t.size)
    np.testing.assert_array_equal(native.at(t[order]), native.at(t)[:, order])


def test_a_fixed_end_is_reached_exactly():
    model = get_model("deep_linear")
    params = model.make_params({})
    native = solve(params, solver=SolverConfig(t_end=3.0, backend="numba"), model=model)
    assert native.t[-1] == 3.0
    pure = solve(params, solver=SolverConfig(t_end=3.0), model=model)
    s, u0 = params.s, params.sigma**2  # the logistic law u(t) = s / (1 + (s/u0 - 1) e^{-2st})
    exact = s / (1 + (s / u0 - 1) * math.exp(-2 * s * 3.0))
    # Interpolated end states at rtol 1e-10, u at 4e-4 of its way up the jump: the pure
    # path misses by 1.8e-8 (relative), the native one (at a tenth of rtol) by 2.5e-9.
    assert native.final["u"] == pytest.approx(exact, rel=5e-9)
    assert pure.final["u"] == pytest.approx(exact, rel=3e-8)


def test_a_stop_rule_in_python_is_applied_between_chunks_of_native_steps():
    """No registered model's rule is a plain function any more; the example's is, so the
    native run stops on it in Python after each chunk of native steps."""
    example = Path(__file__).resolve().parents[2] / "examples" / "incremental_learning.py"
    model = get_model(f"{example}:MODEL")
    params = model.make_params({})
    assert not isinstance(model.settled(params, model.variants[0]), SettledRule)
    pure, native = solve(params, model=model), solve(params, solver=_native(), model=model)
    _assert_same_phases(native, pure)
    # t_settle is as sharp as the rule's 1e-9 threshold allows over two integrators'
    # errors (~1e-10 each): 1e-3 of the run (as in the test over every model above).
    assert native.t[-1] == pytest.approx(pure.t[-1], rel=1e-3)
    from reduced_odes._native._solve import _CHUNK

    assert native.stats.steps > _CHUNK  # more than one chunk


@pytest.mark.parametrize("name", ["induction_head", "two_stage_features", "two_mixture"])
def test_verify_gives_the_same_verdict_natively(name, tmp_path):
    from reduced_odes._verify import verify

    model = get_model(name)
    pure = verify(model, "quick", out=tmp_path / "python", max_workers=1, backend="python")
    native = verify(model, "quick", out=tmp_path / "numba", max_workers=1, backend="numba")
    assert [(c.name, c.passed) for c in native.claims] == [(c.name, c.passed)
                                                          for c in pure.claims]
    for mine, reference in zip(native.claims, pure.claims, strict=True):
        if math.isnan(reference.error):  # a row without an error (a count, a note)
            assert math.isnan(mine.error), mine.name
            continue
        # Errors of the two integrators' measurements (at rtol 1e-10, see PHASE_RTOL) against
        # the same prediction: where the prediction is exact the error is the integrator's
        # own (~1e-9), else the two differ by a few thousandths of the tolerance: a late rate
        # is fitted over a window ending at the run's end, (1 + tail) t_settle, which the
        # pure path places 1.8e-3 late at two_stage_features' defaults (against rtol 1e-12;
        # native 3e-4), and the two fits differ by 2.4e-3 of their 1e-2 tolerance there.
        # (The worst case's setting may differ where two settings' errors tie.)
        assert abs(mine.error - reference.error) <= max(5e-3 * reference.tolerance,
                                                       10 * PHASE_RTOL), mine.name


def _twin_of_a_run(name: str):
    """The twin that ran ``name`` at its defaults (loaded or compiled in this process)."""
    from reduced_odes._compile import load_system
    from reduced_odes._native._twin import load_twin

    model = get_model(name)
    params, variant = model.make_params({}), model.variants[0]
    solve(params, variant, _native(), model=model)
    rule = model.settled(params, variant)
    return load_twin(load_system(model, variant), rule if isinstance(rule, SettledRule) else None)


@pytest.mark.parametrize("name", ["deep_linear", "induction_head"])
def test_the_scans_compiled_aside_have_the_signatures_of_a_run(name):
    """What the process beside a first compile compiles (``compile_scans``) is what a run
    calls: after a run, it adds no signature to any entry point (else that process would
    compile for nothing, and the run would compile the scans itself)."""
    from reduced_odes._native._solve import compile_scans

    twin = _twin_of_a_run(name)
    engine = twin._engine
    called = {e: set(getattr(engine, e).overloads) for e in
              ("merge", "first_events", "settle_time", "outputs")}
    called = {e: signatures for e, signatures in called.items() if signatures}
    # A run in blocks calls every scan; one of the whole system watches its rule natively.
    assert set(called) >= ({"merge", "outputs"} if name == "deep_linear" else
                           {"merge", "first_events", "settle_time", "outputs"})
    compile_scans(twin)
    assert {e: set(getattr(engine, e).overloads) for e in called} == called


def test_a_twins_compile_lock_waits_for_its_last_callback(tmp_path, monkeypatch):
    """Another process skips a twin's compile lock once ``LAST_CALLBACK`` is cached: it must
    be the callback compiled last, or that process would compile the rest again beside the
    first (the Jacobian, seconds of CPU)."""
    from reduced_odes._compile import load_system
    from reduced_odes._native import _twin

    monkeypatch.setenv("REDUCED_ODES_CACHE", str(tmp_path))  # a cold twin
    monkeypatch.setattr(_twin, "_LOADED", {})
    twin = _twin.load_twin(load_system(get_model("deep_linear")))
    callbacks = [name for name in vars(twin) if name.startswith("c_")]
    order = compiled_in_order(Path(twin.__file__), callbacks)
    assert len(order) == len(callbacks) == 6 and order[-1] == _twin.LAST_CALLBACK


def test_a_first_compile_says_so_once_and_compiles_the_scans_aside(monkeypatch, capsys,
                                                                    tmp_path):
    """One line on stderr, naming the model and the cache, and one process started to
    compile the integrator's scans; none of either once numba's cache holds the twin's
    callbacks and the integrator."""
    from reduced_odes._compile import load_system
    from reduced_odes._native import _engines, _twin

    started = []

    def popen(argv, **_):
        started.append(argv)
        return types.SimpleNamespace(poll=lambda: 0)  # finished at once

    monkeypatch.setattr(_twin.subprocess, "Popen", popen)
    monkeypatch.setattr(_twin, "_ASIDE", [])
    monkeypatch.setattr(_engines, "_numba_cache_dir", lambda path: tmp_path)
    monkeypatch.setattr(_twin, "_interactive", lambda: True)  # the line is for a terminal
    monkeypatch.setattr(_twin, "_idle_core", lambda: True)  # a core free for the aside
    system = load_system(get_model("deep_linear"))
    monkeypatch.setattr(_twin, "_LOADED", {})
    twin = _twin.load_twin(system)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and "'deep_linear'" in lines[0] and str(tmp_path) in lines[0]
    assert len(started) == 1 and started[0][1:4] == ["-m", "reduced_odes._native._precompile",
                                                      str(Path(twin.__file__))]
    engine = Path(twin._engine.__file__).stem
    for stem, entry in [(Path(twin.__file__).stem, _twin.LAST_CALLBACK), (engine, "advance"),
                        (engine, "outputs")]:
        (tmp_path / f"{stem}.{entry}-1.py311.nbi").touch()
    monkeypatch.setattr(_twin, "_LOADED", {})
    _twin.load_twin(system)
    assert capsys.readouterr().err == "" and len(started) == 1
