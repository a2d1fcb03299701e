"""The registry, user models from files, and the engine on models nobody tuned:
``deep_linear`` and ``examples/incremental_learning.py`` against their exact solutions."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reduced_odes import (
    DerivationError,
    ParameterError,
    SolverConfig,
    get_model,
    registered_models,
    solve,
)
from reduced_odes.models.deep_linear import DeepLinearParams

ROOT = Path(__file__).resolve().parents[2]
#: A hang guard only, never a measure of speed (no test depends on the clock): a correct
#: run takes seconds to minutes even on a loaded machine; a hung one fails within CI's time.
HANG_GUARD_S = 1800
EXAMPLE = ROOT / "examples" / "incremental_learning.py"


def _cli(*args, cwd=ROOT):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    return subprocess.run([sys.executable, "-m", "reduced_odes", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=HANG_GUARD_S)


def _t_half(s: float, sigma: float) -> float:
    """The exact logistic solution u(t) = s / (1 + (s/u0 - 1) e^{-2 s t}) at u = s/2."""
    return math.log(s / sigma**2 - 1) / (2 * s)


@pytest.mark.parametrize("method", ["LSODA", "Radau", "BDF"])
@pytest.mark.parametrize("s, sigma", [(1.0, 1e-3), (2.0, 1e-4), (0.3, 1e-100)])
def test_deep_linear_t_half_is_the_exact_solution(method, s, sigma):
    traj = solve(DeepLinearParams(s=s, sigma=sigma), solver=SolverConfig(method=method))
    # Root-finding on the dense output of an rtol-1e-10 run: 1e-8 relative.
    assert traj.phases["T_half"] == pytest.approx(_t_half(s, sigma), rel=1e-8)
    u0 = traj.series["u"][0]
    assert u0 == pytest.approx(sigma**2, rel=1e-12) and traj.final["u"] == pytest.approx(s)


def test_cli_deep_linear_json():
    done = _cli("solve", "--model", "deep_linear", "--s", "2", "--sigma", "1e-4", "--json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    # The bar: 1e-6 relative of the closed form.
    assert document["phases"]["T_half"] == pytest.approx(_t_half(2.0, 1e-4), rel=1e-6)
    assert document["model"] == "deep_linear" and document["solver"]["steps"] > 0


def test_user_model_from_a_file_learns_its_modes_in_turn():
    done = _cli("solve", "--model", f"{EXAMPLE.relative_to(ROOT)}:MODEL", "--json")
    assert done.returncode == 0, done.stderr
    phases = json.loads(done.stdout)["phases"]
    assert phases["T_1"] == pytest.approx(_t_half(2.0, 1e-3), rel=1e-8)
    assert phases["T_2"] == pytest.approx(_t_half(0.5, 1e-3), rel=1e-8)
    model = get_model(f"{EXAMPLE}:MODEL")
    with pytest.raises(ParameterError, match="s1=0.1"):
        model.Params(s1=0.1, s2=0.5)


def test_models_command_lists_every_registered_model():
    done = _cli("models", "--json")
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)
    names = [m["name"] for m in listed]
    assert {"induction_head", "deep_linear"} <= set(names) and names == sorted(names)
    assert all(m["description"] for m in listed)


BROKEN = '''
from dataclasses import dataclass
from reduced_odes import Crossing, Model, Parameters, parameter, positive

@dataclass(frozen=True)
class P(Parameters):
    s: float = parameter(1.0, positive(), "target")

class Broken(Model):
    name = "broken"
    description = "a flow that is not the gradient of its loss"
    Params = P
    def derive(self, variant):
        import sympy as sp
        from reduced_odes import gradient_flow
        a = sp.Symbol("a", real=True)
        s = sp.Symbol("s", positive=True)
        return gradient_flow((a,), (s - a) ** 2 / 2, parameters=(s,), rhs=sp.Matrix([a - s + 1]))
    def parameter_values(self, params, variant): return (params.s,)
    def initial_state(self, params, variant): return (0.0,)
    def phases(self, params, variant, initial, thresholds): return []
    def settled(self, params, variant): return lambda y: 1.0
    def horizon(self, params, variant): return 1.0

MODEL = Broken()
NOT_A_MODEL = 42
'''


@pytest.mark.parametrize("reference, words", [
    ("nonesuch", ["model='nonesuch'", "not registered", "induction_head", "deep_linear"]),
    ("missing.py:MODEL", ["missing.py", "does not exist"]),
    ("broken.py:NOT_A_MODEL", ["NOT_A_MODEL", "int", "not a reduced_odes.Model"]),
    ("broken.py:ABSENT", ["ABSENT"]),
    ("broken.py:MODEL", ["derivation step", "flow of a is the metric gradient"]),
])
def test_bad_model_exits_2_with_one_line(tmp_path, reference, words):
    (tmp_path / "broken.py").write_text(BROKEN)
    done = _cli("solve", "--model", reference, "--out", "x.json", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert all(w in lines[0] for w in words), lines[0]
    assert not (tmp_path / "x.json").exists()  # nothing written


def test_derivation_error_names_the_step(tmp_path):
    (tmp_path / "broken.py").write_text(BROKEN)
    model = get_model(f"{tmp_path / 'broken.py'}:MODEL")
    with pytest.raises(DerivationError) as info:
        solve(model.Params(), model=model)
    assert info.value.step == "flow of a is the metric gradient"


def test_cli_verify_bad_grid_exits_2():
    done = _cli("verify", "--grid", "huge")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "huge" in done.stderr.strip().splitlines()[-1]


def test_commands_a_model_does_not_supply_are_refused():
    done = _cli("verify", "--model", "deep_linear")
    assert done.returncode == 2 and "does not supply 'verify'" in done.stderr


def test_entry_point_plugins_are_registered(monkeypatch):
    import importlib.metadata

    from reduced_odes import _registry

    plugin = importlib.metadata.EntryPoint(
        "plugin_linear", "reduced_odes.models.deep_linear:MODEL", _registry.ENTRY_POINT_GROUP)

    def entry_points(group):
        return [plugin] if group == _registry.ENTRY_POINT_GROUP else []

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    monkeypatch.setattr(_registry, "_LOADED", {})
    assert "plugin_linear" in _registry._references()
    assert get_model("plugin_linear") is get_model("deep_linear")


def test_a_built_in_name_is_found_without_reading_entry_points(monkeypatch):
    import importlib.metadata

    from reduced_odes import _registry

    def entry_points(group):
        raise AssertionError("every distribution's metadata read for a built-in model")

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    monkeypatch.setattr(_registry, "_LOADED", {})
    assert get_model("deep_linear").name == "deep_linear"


def test_a_built_in_models_parameters_find_it_without_reading_entry_points(monkeypatch):
    """``solve(params)`` without ``model=``: a built-in model is loaded by name, and then
    found again by a dictionary lookup alone."""
    import importlib.metadata

    from reduced_odes import _registry, model_for

    def entry_points(group):
        raise AssertionError("every distribution's metadata read for a built-in model")

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    monkeypatch.setattr(_registry, "_LOADED", {})
    monkeypatch.setattr(_registry, "_BY_PARAMS", {})
    params = DeepLinearParams()
    assert model_for(params) is get_model("deep_linear")

    def no_listing():
        raise AssertionError("the models listed again for a model already loaded")

    monkeypatch.setattr(_registry, "_builtin", no_listing)
    assert model_for(params) is get_model("deep_linear")
    assert solve(params).model == "deep_linear"


def test_a_user_model_loaded_by_reference_is_found_by_its_parameters():
    from reduced_odes import model_for

    model = get_model(f"{EXAMPLE}:MODEL")
    assert model_for(model.Params()) is model


def test_parameters_of_no_model_are_one_parameter_error():
    from dataclasses import dataclass

    from reduced_odes import Parameters, model_for

    @dataclass(frozen=True)
    class Orphan(Parameters):
        pass

    with pytest.raises(ParameterError, match=r"belong to no loaded model; pass model="):
        model_for(Orphan())


def test_a_user_models_trajectory_evaluates_its_observables():
    model = get_model(f"{EXAMPLE}:MODEL")
    traj = solve(model.Params(), model=model)
    at_t1 = traj.observables_at([traj.phases["T_1"]])
    # The crossing is a root of the dense output: u1 there is the level, to root-finding accuracy.
    assert at_t1["u1"][0] == pytest.approx(model.Params().s1 / 2, rel=1e-10)


def _python(code: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=HANG_GUARD_S)


HEAVY = ("sympy", "matplotlib", "numba", "scipy")


def test_the_author_api_costs_nothing_to_import():
    """``import reduced_odes.author`` and a model's contract names load no heavy library."""
    done = _python("import sys, reduced_odes.author as a\n"
                   "from reduced_odes.author import Crossing, Model, Parameters, SettledRule\n"
                   "from reduced_odes.author import ParameterError, parameter, positive\n"
                   f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[]"]


def test_a_warm_solve_never_imports_sympy():
    """Once its system is compiled, a model integrates without SymPy: the symbolic half of
    each model (derivation, closed forms) is imported only when derived.  Every registered
    model, in turn, in one process: the first that imports it is named."""
    names = [model.name for model in registered_models()]
    warm = _python(f"from reduced_odes import get_model, load_system\n"
                   f"for name in {names!r}:\n"
                   f"    load_system(get_model(name))")  # the systems the solves integrate
    assert warm.returncode == 0, warm.stderr
    done = _python(f"import sys\nfrom reduced_odes import get_model, solve\n"
                   f"for name in {names!r}:\n"
                   f"    m = get_model(name)\n"
                   f"    solve(m.Params(), model=m)\n"
                   f"    print(name, 'sympy' in sys.modules)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [word for name in names for word in (name, "False")]


def test_the_author_api_exports_what_it_lists():
    import reduced_odes.author as author

    assert set(author.__all__) == {*author.STABLE, *author.PROVISIONAL, "STABLE", "PROVISIONAL"}
    assert not set(author.STABLE) & set(author.PROVISIONAL)
    for name in author.__all__:
        assert getattr(author, name) is not None, name
    with pytest.raises(AttributeError, match="nonesuch"):
        author.nonesuch  # noqa: B018
