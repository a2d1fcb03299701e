"""The two backends are one contract: they agree on success and on phase times, or the
result says why not (a retry, an ill-conditioned phase, a run that stopped part-way).

Engine-generic: the settings are generated from every registered model's declared
parameter ranges (``Model.Params.declared()``), one parameter at a time from the defaults.
"""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from reduced_odes import DomainError, ParameterError, Setting, SolverConfig, solve
from reduced_odes._backend import native_available
from reduced_odes._cross_check import ILL_CONDITIONED, PHASE_AGREEMENT, cross_checked
from reduced_odes._integrate import _solve_on
from reduced_odes._registry import registered_models
from reduced_odes.cli import EXIT_NOT_REACHED, EXIT_OK, main
from reduced_odes.models import get_model

from ._ranges import default_run_variants

needs_numba = pytest.mark.skipif(not native_available(),
                                 reason="numba is not installed (the [fast] extra)")
#: Where a range is open, the probe sits this far inside its end (in log10 for a range of
#: positive numbers spanning more than three decades, else as a fraction of its width).
INSET = 1e-3


def _ends_and_middle(item) -> list:
    """A declared parameter's probes: just inside each end of its range, and its middle (a
    choice or a flag: every value but the default)."""
    allowed, default = item.metadata["allowed"], item.default
    if allowed.kind in ("choice", "flag"):
        values = allowed.options if allowed.kind == "choice" else (True, False)
        return [v for v in values if v != default]
    lo, hi = allowed.lo, allowed.hi
    if math.isinf(hi):  # no upper end: a thousand times the default stands in for it
        hi = 1e3 * max(default, 1)
    if allowed.kind == "integer":
        return sorted({int(lo), round(math.sqrt(max(lo, 1) * hi)), int(hi)})
    if lo > 0 and hi / lo >= 1e3 or lo == 0 and default > 0 and hi / default >= 1e3:
        lo = lo if lo > 0 else default * 1e-3  # no lower end but 0: a thousandth of the default
        low, high = math.log10(lo), math.log10(hi)
        inset = 0 if not allowed.lo_open else INSET * (high - low)
        return [10 ** (low + inset), 10 ** ((low + high) / 2),
                10 ** (high - (INSET * (high - low) if allowed.hi_open else 0))]
    width = hi - lo
    return [lo + (INSET * width if allowed.lo_open else 0), lo + width / 2,
            hi - (INSET * width if allowed.hi_open else 0)]


def _probes(model, variants=None) -> list[tuple[str, str, dict]]:
    """``(model name, variant, setting)``: each declared parameter at its probes, the others at
    their defaults; settings the model refuses (a condition across parameters) are left out."""
    found = []
    for variant in variants or model.variants:
        for item in model.Params.declared():
            for value in _ends_and_middle(item):
                try:
                    model.make_params({item.name: value})
                except ParameterError:
                    continue
                found.append((model.name, variant, {item.name: value}))
    return found


def _cross_checked(plain, params, variant: str, model):
    """What ``solve`` returns with ``cross_check=True``, from its plain run ``plain``: the same
    first run (deterministic), then the tighter one (``solve`` does exactly this:
    ``cross_checked(result, setting, _solve_on)``; the plain run is not solved twice, and
    test_the_cross_check_is_the_plain_run_then_the_tighter_one holds the two equal)."""
    setting = Setting.of(params, variant, SolverConfig(backend=plain.solver.backend,
                                                       cross_check=True), model=model)
    return cross_checked(plain, setting, _solve_on)


def _relative(value: float, reference: float) -> float:
    """``value``'s relative distance from ``reference`` (absolute at a phase reached at 0)."""
    return abs(value / reference - 1) if reference else abs(value)


def _agree_or_marked(name: str, variant: str, setting: dict) -> dict:
    """Solve ``setting`` on both backends, as the ``solve`` command does (cross-checked):
    every phase both reach agrees to PHASE_AGREEMENT, or a cross-check marks it (on either
    backend), or both runs fail.  The plain runs (no cross-check, the API's default) agree
    within the accuracy a plain run claims, ILL_CONDITIONED * rtol each.  The counts."""
    model = get_model(name)
    params = model.make_params(setting)
    runs = {}
    for backend in ("python", "numba"):
        try:
            plain = solve(params, variant, SolverConfig(backend=backend), model=model)
            runs[backend, False] = plain
            runs[backend, True] = _cross_checked(plain, params, variant, model)
        except ParameterError:  # refused before any work (a condition of this variant)
            return {}
        except Exception as exc:  # noqa: BLE001 - a model's own failure: the same on both
            runs.setdefault((backend, False), exc)
            runs[backend, True] = exc
    failures = {key: type(run) for key, run in runs.items() if isinstance(run, Exception)}
    if failures:
        # A DomainError was retried on the other backend: both failed, or neither did; any
        # other failure is the model's (a hook), and the same on both.
        assert len(failures) == len(runs) and len(set(failures.values())) == 1, (
            name, variant, setting, runs)
        return {"failed": 1}
    counts = {"compared": 0, "marked": 0}
    rtol = SolverConfig().rtol
    for phase in runs["python", True].phases:
        pure, native = (runs[b, True] for b in ("python", "numba"))
        if any(run.conditioning[phase]["ill_conditioned"] for run in (pure, native)):
            counts["marked"] += 1
            continue
        expected, got = pure.phases[phase], native.phases[phase]
        if math.isnan(expected) and math.isnan(got):
            continue
        difference = _relative(got, expected)
        counts["compared"] += 1
        # The contract: a well-conditioned phase, cross-checked, is the same on both backends.
        assert difference <= PHASE_AGREEMENT, (name, variant, setting, phase, expected, got,
                                               pure.conditioning[phase],
                                               native.conditioning[phase])
        plain = [runs[b, False].phases[phase] for b in ("python", "numba")]
        # Each plain run is within the ILL_CONDITIONED * rtol an unmarked phase's error is.
        assert _relative(plain[1], plain[0]) <= 2 * ILL_CONDITIONED * rtol, (
            name, variant, setting, phase, plain)
    return counts


MODELS = [m.name for m in registered_models()]


def _same_system(name: str, setting: dict) -> bool:
    """Whether ``setting`` integrates the system of the model's defaults (no new compile)."""
    model = get_model(name)
    return model.structure(model.make_params(setting)) == model.structure(model.make_params({}))


#: The default run: each model's first variant, each parameter at the ends of its range, where
#: the system stays that of the defaults (a new system costs two compiles, ~20 s natively).
QUICK = [p for name in MODELS for p in _probes(get_model(name), get_model(name).variants[:1])
         if _same_system(name, p[2])]


@needs_numba
@pytest.mark.parametrize("name", MODELS)
def test_backends_agree_or_mark_at_the_ends_of_every_range(name):
    """Default run: the first variant; the full grid is below (slow)."""
    model = get_model(name)
    probes = [p for p in QUICK if p[0] == name]
    # The middle of each range is the slow test's: the ends are where integrators part.
    ends = [p for p in probes if _is_end(model, p[2])]
    results = [_agree_or_marked(*p) for p in ends]  # every end run, then the check
    assert any(r.get("compared") or r.get("marked") or r.get("failed") for r in results)


def _is_end(model, setting: dict) -> bool:
    (key, value), = setting.items()
    item = next(f for f in model.Params.declared() if f.name == key)
    values = _ends_and_middle(item)
    return item.metadata["allowed"].kind in ("choice", "flag") or value in (values[0],
                                                                           values[-1])


@needs_numba
@pytest.mark.slow
@pytest.mark.parametrize("name, variant, setting", [
    p for name in MODELS for p in _probes(get_model(name))])
def test_backends_agree_or_mark_over_every_range(name, variant, setting):
    _agree_or_marked(name, variant, setting)


def _drawn_setting(draw, model) -> dict:
    """One declared parameter of ``model`` drawn from its range (the others at defaults)."""
    item = draw(st.sampled_from(model.Params.declared()))
    return {item.name: draw(st.sampled_from(_ends_and_middle(item)))}


#: Three draws: each is a sample of the slow grid's probes (every variant, every parameter at
#: its ends and middle, test_backends_agree_or_mark_over_every_range), whose ends in the first
#: variant run in the default run above; a draw is four runs (two backends, plain and checked).
@needs_numba
@settings(max_examples=3, deadline=None, derandomize=True, database=None,
          # A draw is two whole runs: no shrinking storm, the failure reported as drawn.
          phases=(Phase.explicit, Phase.reuse, Phase.generate), report_multiple_bugs=False,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_backends_agree_or_mark_on_drawn_settings(data):
    model = get_model(data.draw(st.sampled_from(MODELS)))
    variant = data.draw(st.sampled_from(default_run_variants(model)))  # all: the slow grid
    setting = _drawn_setting(data.draw, model)
    try:
        model.make_params(setting)
    except ParameterError:
        return
    if not _same_system(model.name, setting):  # a new system is the slow grid's (see QUICK)
        return
    _agree_or_marked(model.name, variant, setting)


# -- retry -----------------------------------------------------------------------------
@needs_numba
@pytest.mark.parametrize("failing, module, message", [
    ("numba", "reduced_odes._native._legs", "native BDF stopped"),
    ("python", "reduced_odes._lsoda", "LSODA stopped")])
def test_a_failure_is_retried_on_the_other_backend_and_says_so(monkeypatch, failing, module,
                                                                message):
    import importlib

    monkeypatch.setattr(importlib.import_module(module), "_MAX_STEPS", 20)  # fails at 20 steps
    model = get_model("deep_linear")
    params = model.make_params({})
    traj = solve(params, solver=SolverConfig(backend=failing), model=model)
    document = traj.to_dict()["solver"]
    other = "python" if failing == "numba" else "numba"
    assert document["backend"] == other and document["retried"]
    assert document["fallback_reason"].startswith(f"backend {failing}: {message}")
    monkeypatch.undo()
    assert traj.phases == solve(params, solver=SolverConfig(backend=other), model=model).phases


def test_without_numba_a_pure_failure_is_reported_as_it_was(monkeypatch, without_numba):
    from reduced_odes import _lsoda

    monkeypatch.setattr(_lsoda, "_MAX_STEPS", 20)
    with pytest.raises(DomainError, match="LSODA stopped"):
        solve(get_model("deep_linear").make_params({}), model="deep_linear")

@pytest.mark.parametrize("method", ["Radau", "BDF"])
def test_solve_ivp_methods_keep_the_step_budget_and_their_phases(monkeypatch, without_numba,
                                                                 method):
    """SciPy's ``solve_ivp`` has no step limit: an ``atol`` far below what the flow resolves
    near its settled state (the log coordinates settle at 0) shrank Radau's steps for minutes
    instead of failing (now the log coordinates' atol is floored at eps, test_problem.py).
    The budget LSODA and native BDF keep stops a run that needs more steps, and the phase
    reached before the stop is kept at an uninterrupted run's time."""
    from reduced_odes import _ivp

    # Past T_half (<= 255 steps to t = 14 at the floored atol), short of the end (>= 997).
    monkeypatch.setattr(_ivp, "_MAX_STEPS", 500)
    model = get_model("deep_linear")
    params = model.make_params({"sigma": 1e-6})
    with pytest.raises(DomainError, match=f"{method} stopped at t=.*more than 500 steps") as e:
        solve(params, solver=SolverConfig(method=method, atol=1e-30), model=model)
    partial = e.value.trajectory
    assert partial is not None and partial.to_dict()["solver"]["steps"] <= 500
    full = solve(params, solver=SolverConfig(method=method, atol=1e-30, t_end=15.0), model=model)
    # The same steps up to the stop, so the same crossing: equal to round-off.
    assert partial.phases["T_half"] == pytest.approx(full.phases["T_half"], rel=1e-12)



@needs_numba
@pytest.mark.parametrize("argv", [["--sigma", "1e-12"], ["--s", "9e99"]])
def test_settings_that_failed_natively_now_run_natively(argv, capsys):
    """A tiny sigma (x10 steps while the flow is exactly linear, then a trial far past the
    jump) and a huge s: a Jacobian from the rejected trial made every smaller step fail."""
    assert main(["solve", "--model", "deep_linear", *argv, "--backend", "numba", "--json",
                 "--cross-check", "false"]) == EXIT_OK
    document = json.loads(capsys.readouterr().out)
    s, sigma = document["params"]["s"], document["params"]["sigma"]
    assert document["solver"]["backend"] == "numba" and not document["solver"]["retried"]
    exact = math.log(s / sigma**2 - 1) / (2 * s)
    # Within the 1e-8 of the model's docstring: both tolerances, a run of ~60 e-folds.
    assert document["phases"]["T_half"] == pytest.approx(exact, rel=1e-8)


# -- ill-conditioned phases ------------------------------------------------------------
def test_a_grazing_crossing_is_marked_ill_conditioned(capsys):
    """two_stage_features at N = 1: the two features are learned alike, and T_cross waits for
    log(b/a) to reach 1e-12 where it settles at round-off: LSODA, BDF and the native backend
    gave 895.5, 901.8 and 1026.5 (or not reached)."""
    assert main(["solve", "--model", "two_stage_features", "--N", "1", "--json"]) == EXIT_OK
    captured = capsys.readouterr()
    outcome = json.loads(captured.out)["phase_outcomes"]
    assert outcome["T_cross"]["ill_conditioned"] and "ill-conditioned" in \
        outcome["T_cross"]["reason"]
    assert not outcome["T_P"]["ill_conditioned"]
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("reduced-odes solve: warning: ") and \
        "T_cross" in lines[0]


@pytest.mark.parametrize("s, sigma", [(1.0, 1e-3), (2.0, 1e-4), (1.0, 1e-12)])
def test_a_well_conditioned_phase_is_not_marked_and_its_estimate_is_honest(s, sigma):
    from reduced_odes.models.deep_linear import DeepLinearParams

    traj = solve(DeepLinearParams(s=s, sigma=sigma), solver=SolverConfig(cross_check=True))
    check = traj.conditioning["T_half"]
    assert not check["ill_conditioned"] and check["reason"] is None
    exact = math.log(s / sigma**2 - 1) / (2 * s)
    plain = solve(DeepLinearParams(s=s, sigma=sigma)).phases["T_half"]
    # The estimate is the distance between the run at the requested tolerance and the one at
    # a hundredth of it: the first run's true error within 20% (the second's own error is
    # ~1e-2 of it), or both at round-off ...
    assert abs(plain / exact - 1) <= 1.2 * check["error_estimate"] + 1e-14
    assert check["error_estimate"] <= 1.2 * abs(plain / exact - 1) + 1e-14
    assert check["error_estimate"] < ILL_CONDITIONED * traj.solver.rtol
    # ... and the reported time is the second run's: well inside its estimate.
    assert abs(traj.phases["T_half"] / exact - 1) <= 0.1 * check["error_estimate"] + 1e-14


def test_the_cross_check_is_off_by_default_and_reports_the_tighter_times():
    from reduced_odes.models.deep_linear import DeepLinearParams

    params = DeepLinearParams(sigma=1e-5)
    plain, checked = solve(params), solve(params, solver=SolverConfig(cross_check=True))
    assert plain.conditioning == {} and "ill_conditioned" not in \
        plain.to_dict()["phase_outcomes"]["T_half"]
    # The same run's series; the phase time is the tighter run's, its estimate the distance.
    assert all((checked.series[k] == v).all() for k, v in plain.series.items())
    first, tighter = plain.phases["T_half"], checked.phases["T_half"]
    # The same formula on the same two times: equal to the bit.
    assert abs(first - tighter) / abs(tighter) == checked.conditioning["T_half"]["error_estimate"]


@pytest.mark.parametrize("backend", ["python", pytest.param("numba", marks=needs_numba)])
@pytest.mark.parametrize("name", ["deep_linear", "two_stage_features"])
def test_the_cross_check_is_the_plain_run_then_the_tighter_one(name, backend):
    """The contract tests above build ``solve(..., cross_check=True)`` from the plain run
    they have already solved (``_cross_checked``): the two are the same result."""
    model = get_model(name)
    params = model.make_params({})
    checked = solve(params, solver=SolverConfig(backend=backend, cross_check=True), model=model)
    plain = solve(params, solver=SolverConfig(backend=backend), model=model)
    built = _cross_checked(plain, params, model.variants[0], model)
    # Deterministic runs, the same policy: equal to the bit, NaN (a phase not reached) too.
    assert json.dumps(built.phases) == json.dumps(checked.phases)
    assert json.dumps(built.conditioning) == json.dumps(checked.conditioning)
    assert all((built.series[k] == v).all() for k, v in checked.series.items())


# -- a run that stops part-way ---------------------------------------------------------
def _stopped_part_way(monkeypatch, module, full, budget: int) -> DomainError:
    """Solve ``full``'s setting again with ``module``'s step budget ``budget``."""
    monkeypatch.setattr(module, "_MAX_STEPS", budget)
    with pytest.raises(DomainError) as caught:
        solve(full.params, solver=full.solver)
    return caught.value


@pytest.mark.parametrize("backend", ["python", pytest.param("numba", marks=needs_numba)])
def test_a_run_that_stops_keeps_the_phases_it_reached(monkeypatch, backend):
    from reduced_odes import _lsoda, _params
    from reduced_odes.models.two_stage_features import TwoStageParams

    if backend == "numba":
        from reduced_odes._native import _legs as module

        # The budget is checked whenever the step record fills: from 16 steps on, not 4096.
        monkeypatch.setattr(module, "_CAPACITY", 16)
    else:
        module = _lsoda
        monkeypatch.setattr(_params, "native_available", lambda: False)  # no retry
    full = solve(TwoStageParams(), solver=SolverConfig(backend=backend))
    if backend == "numba":  # the retry on the pure path would fail as well
        monkeypatch.setattr(_lsoda, "_MAX_STEPS", 10)
    for fraction in (2, 4, 8):  # a budget that stops the run between two phases
        error = _stopped_part_way(monkeypatch, module, full, full.stats.steps // fraction)
        partial = error.trajectory
        assert partial is not None and partial.stopped == str(error)
        reached = {k: v for k, v in partial.phases.items() if math.isfinite(v)}
        if reached and len(reached) < len(full.phases):
            break
    else:
        pytest.fail("no step budget stopped the run between two phases")
    assert reached == {k: full.phases[k] for k in reached}  # to the bit
    for phase in set(full.phases) - set(reached):
        assert "before the run stopped" in partial.unreached[phase]
        assert full.phases[phase] > partial.t[-1]


def test_cli_a_run_that_stops_exits_3_with_the_phases_before(monkeypatch, without_numba,
                                                             capsys):
    from reduced_odes import _lsoda

    monkeypatch.setattr(_lsoda, "_MAX_STEPS", 200)  # of the 672 steps at the defaults
    code = main(["solve", "--model", "two_stage_features", "--json", "--cross-check", "false"])
    captured = capsys.readouterr()
    document = json.loads(captured.out)
    assert code == EXIT_NOT_REACHED and "LSODA stopped" in document["solver"]["stopped"]
    outcomes = document["phase_outcomes"]
    assert outcomes["T_P"]["reached"] and document["phases"]["T_P"] is not None
    assert not outcomes["T_Q"]["reached"] and "LSODA stopped" in outcomes["T_Q"]["reason"]
    assert len(captured.err.strip().splitlines()) == 1
