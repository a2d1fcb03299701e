"""The model contract, checked on every registered model (built-in and plug-in alike).

For each model and variant: the derived flow is the negative metric gradient of
the derived loss; the compiled right-hand side, Jacobian and loss equal SymPy's
evaluation; the loss does not increase along the trajectory from the model's
default start; the phases come out in the declared order; and every parameter
outside its declared range raises ``ParameterError``.  For each model: the hooks
it names resolve to functions that take the hook's arguments (its committed
outputs: tests/engine/test_model_outputs.py).  For each file of the built-in
models: it imports no private engine module.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import math
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

import reduced_odes
import reduced_odes.author as author
from reduced_odes import ParameterError, assert_same, load_system, metric_gradient, solve
from reduced_odes._contract import FORWARDABLE
from reduced_odes._registry import _references, get_model
from reduced_odes.author import Model

from ._ranges import SLOW_VARIANTS, default_run_variants

ROOT = Path(__file__).resolve().parents[2]
MODELS = list(_references())
#: Every variant; those of ``_ranges.SLOW_VARIANTS`` (the same rules as one checked here)
#: under ``-m slow``.
VARIANTS = [pytest.param(name, variant, marks=[pytest.mark.slow] * ((name, variant) in
                                                                   SLOW_VARIANTS))
            for name in MODELS for variant in get_model(name).variants]


def _point(model, variant):
    """The default parameters, their values, and the default start in the coordinates."""
    params = model.Params()
    args = tuple(float(a) for a in model.parameter_values(params, variant))
    return params, args, np.array(model.initial_state(params, variant), dtype=float)


def _sympy_values(derivation, exprs, y, args) -> np.ndarray:
    """``exprs`` evaluated by SymPy at 30 digits at coordinates ``y`` and parameters ``args``."""
    subs = {**dict(zip(derivation.coordinates, map(sp.Float, y), strict=True)),
            **dict(zip(derivation.parameters, map(sp.Float, args), strict=True))}
    return np.array([float(sp.sympify(e).xreplace(subs).evalf(30)) for e in exprs])


@pytest.mark.parametrize("name, variant", VARIANTS)
def test_flow_is_the_negative_metric_gradient_of_the_loss_plus_its_drifts(name, variant):
    model = get_model(name)
    d = model.derive(variant, **model.structure(model.Params()))
    gradient = (metric_gradient(d.loss, d.state, d.metric) if d.mobility is None
                else -d.mobility * sp.Matrix([sp.diff(d.loss, v) for v in d.state]))
    expected = gradient + sum((sp.Matrix(term.rate) for term in d.drifts),
                              sp.zeros(len(d.state), 1))
    for i in range(len(d.state)):
        # 30-digit evaluation at random points: identities hold to round-off of 1e-25.
        assert_same(d.rhs[i], expected[i], symbolic=False, points=2)


@pytest.mark.parametrize("name, variant", VARIANTS)
def test_compiled_rhs_jacobian_and_loss_match_sympy(name, variant):
    model = get_model(name)
    structure = model.structure(model.Params())
    d, system = model.derive(variant, **structure), load_system(model, variant)
    _, args, y0 = _point(model, variant)
    # Off the start, so that no coordinate sits at a special value (0, a symmetric point).
    y = y0 + 0.01 * np.arange(1, y0.size + 1) * (1 + np.abs(y0)) * 1e-2
    # Compiled float64 code vs 30-digit SymPy: CSE reorders sums, so agreement is to ~1e-12.
    rtol, atol = 1e-9, 1e-12
    np.testing.assert_allclose(system.rhs(0.0, y, *args),
                               _sympy_values(d, d.coordinate_rhs, y, args), rtol=rtol, atol=atol)
    np.testing.assert_allclose(np.ravel(system.jac(0.0, y, *args)),
                               _sympy_values(d, list(d.jacobian), y, args), rtol=rtol, atol=atol)
    np.testing.assert_allclose(system.loss(y, *args),
                               _sympy_values(d, [d.in_coordinates(d.loss)], y, args),
                               rtol=rtol, atol=atol)


@pytest.fixture(scope="module")
def trajectories():
    return {}


def _trajectory(cache, name, variant):
    if (name, variant) not in cache:
        model = get_model(name)
        cache[name, variant] = solve(model.Params(), variant, model=model)
    return cache[name, variant]


@pytest.mark.parametrize("name, variant", VARIANTS)
def test_loss_does_not_increase_along_the_trajectory(trajectories, name, variant):
    # At the defaults every declared drift vanishes (a model's defaults are its gradient flow).
    traj = _trajectory(trajectories, name, variant)
    args = traj.system_args
    coords = np.column_stack([traj.series[c] for c in traj.system.coordinate_names])
    loss = np.array([traj.system.loss(y, *args)[0] for y in coords])
    assert np.all(np.isfinite(loss))
    # A gradient flow's loss never rises; what may show is round-off, at most the solver's
    # rtol (1e-10) times the loss's scale (near a zero minimum the relative noise is large).
    rises = np.diff(loss) / np.abs(loss).max()
    assert rises.max() <= 1e-9, f"loss rises by {rises.max():.3g} of its scale"
    assert loss[-1] < loss[0]


@pytest.mark.parametrize("name, variant", VARIANTS)
def test_phases_are_finite_and_in_the_declared_order(trajectories, name, variant):
    model = get_model(name)
    traj = _trajectory(trajectories, name, variant)
    order = [traj.phases[p] for p in model.phase_order]
    assert all(math.isfinite(t) for t in order), traj.phases
    assert order == sorted(order), dict(zip(model.phase_order, order, strict=True))


def _outside(allowed):
    """Values just outside a declared range."""
    if allowed.kind == "flag":
        return ["maybe", 1]
    if allowed.kind == "choice":
        return ["nonesuch"]
    bad = [math.nan, math.inf, "1.0", True]
    if math.isfinite(allowed.lo):
        bad.append(allowed.lo - 1.0 if not allowed.lo_open else allowed.lo)
    if math.isfinite(allowed.hi):
        bad.append(allowed.hi + 1.0 if not allowed.hi_open else allowed.hi)
    if allowed.kind == "integer":
        bad.append(max(allowed.lo, 0) + 0.5)
    return bad


@pytest.mark.parametrize("name", MODELS)
def test_bad_parameters_raise_parameter_error_naming_them(name):
    model = get_model(name)
    fields = model.Params.declared()
    assert fields, "a model declares its parameters with reduced_odes.parameter()"
    for item in fields:
        for value in _outside(item.metadata["allowed"]):
            with pytest.raises(ParameterError, match=item.name):
                model.Params(**{item.name: value})


@pytest.mark.parametrize("name", MODELS)
def test_defaults_are_valid_and_every_field_has_help(name):
    model = get_model(name)
    params = model.Params()
    # A check may derive the flow: the others are checked by the slow contract runs above.
    for variant in default_run_variants(model):
        model.check(params, variant)
    for item in model.Params.declared():
        assert item.metadata["help"], item.name
    assert dataclasses.is_dataclass(params)


@pytest.mark.parametrize("name", MODELS)
def test_parameters_as_dict_is_dataclasses_asdict(name):
    """``as_dict`` skips ``asdict``'s deep copy only where nothing needs copying: the same
    dict for every model's parameters and thresholds, and a copied list otherwise."""
    from reduced_odes._params import Parameters

    model = get_model(name)
    for params in (model.Params(), model.Thresholds() if model.Thresholds else None):
        if params is not None:
            assert params.as_dict() == dataclasses.asdict(params)
            assert list(params.as_dict()) == list(dataclasses.asdict(params))

    @dataclasses.dataclass(frozen=True)
    class Listed(Parameters):
        widths: list = dataclasses.field(default_factory=lambda: [1, 2])

    listed = Listed()
    assert listed.as_dict() == {"widths": [1, 2]}
    assert listed.as_dict()["widths"] is not listed.widths


@pytest.mark.parametrize("t_end", [1e-6, 0.01, 1.0, 5e4 * math.pi, 2e17])
@pytest.mark.parametrize("n_output", [2, 3, 400])
def test_output_grid_is_numpys_geomspace_to_the_bit(t_end, n_output):
    """The output grid computes np.geomspace's arithmetic itself (without its checks): every
    committed series depends on these exact times."""
    from reduced_odes._trajectory import output_times

    expected = np.concatenate([[0.0], np.geomspace(min(1e-3, t_end / 10), t_end, n_output)])
    np.testing.assert_array_equal(output_times(t_end, n_output), expected)


#: Arguments each hook is called with by the engine (see reduced_odes.cli and _verify),
#: without ``self``: positional names, then keyword names.
HOOK_CALLS = {
    "derive": (["variant"], []), "check": (["params", "variant"], []),
    "check_start": (["params", "variant", "start"], []),
    "integrate": (["params", "variant", "solver", "thresholds", "initial"], []),
    "verify_settings": (["grid", "variants"], []), "measure": (["setting"], []),
    "claims": (["records", "variants"], []), "verify_metadata": ([], []),
    "export_derivations": (["directory"], []), "figures": (["out", "data", "formats"], []),
    "compare": ([], ["quick", "out"]), "format_compare": (["result"], []),
    "command_options": (["command", "parser"], []),
}


def test_every_forwardable_hook_has_its_engine_call():
    assert set(HOOK_CALLS) == set(FORWARDABLE)
    for hook, (positional, keywords) in HOOK_CALLS.items():
        declared = inspect.signature(getattr(Model, hook))
        declared.bind(None, *positional, **dict.fromkeys(keywords))


@pytest.mark.parametrize("name", MODELS)
def test_named_hooks_resolve_to_functions_taking_the_hooks_arguments(name):
    model = get_model(name)
    for hook, where in type(model).hooks.items():
        function = getattr(model, hook)
        assert callable(function) and model.supports(hook), (hook, where)
        positional, keywords = HOOK_CALLS[hook]
        inspect.signature(function).bind(*positional, **dict.fromkeys(keywords))


def test_supports_names_what_a_model_overrides_or_names_in_hooks():
    two_mixture, deep_linear = get_model("two_mixture"), get_model("deep_linear")
    assert two_mixture.supports("integrate") and two_mixture.supports("claims")
    assert not deep_linear.supports("claims") and not deep_linear.supports("integrate")
    assert deep_linear.supports("derive")
    assert deep_linear.verify_metadata() == {}
    with pytest.raises(NotImplementedError, match="deep_linear.*claims"):
        deep_linear.claims([], ["default"])


def test_a_hook_name_that_is_no_hook_is_refused_when_the_class_is_made():
    with pytest.raises(TypeError, match="verify_setting.*no hook"):
        type("Typo", (Model,), {"__module__": __name__, "hooks": {"verify_setting": ".x"}})
    with pytest.raises(TypeError, match="defines 'claims' and names it"):
        type("Twice", (Model,), {"__module__": __name__, "hooks": {"claims": ".x"},
                                 "claims": lambda self, records, variants: []})


#: What a built-in model may import of the engine: the names of the public API and of the
#: author API (modules other than these two, and their private names, are off limits).
PUBLIC = {"reduced_odes": set(reduced_odes.__all__), "reduced_odes.author": set(author.__all__)}
MODEL_FILES = sorted((ROOT / "reduced_odes" / "models").rglob("*.py"))


def _imports(path: Path, source: str | None = None) -> list[tuple[int, str]]:
    """``(line, module.name)`` of every import in ``path`` (or in ``source``, as if it were
    that file's), function-level ones included, relative ones resolved; a ``from`` import
    gives one entry per name, an ``import`` one entry for the module."""
    package = path.relative_to(ROOT).with_suffix("").parts[:-1]  # the module's package
    source = path.read_text(encoding="utf-8") if source is None else source
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                stem = package[:len(package) - node.level + 1]
                base = ".".join([*stem, *([node.module] if node.module else [])])
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return found


def _allowed(name: str, own: str) -> bool:
    """A name of the public or the author API, of the model's own package, or not ours."""
    if name.split(".")[0] != "reduced_odes" or name == own or name.startswith(own + "."):
        return True
    if name in PUBLIC:  # ``import reduced_odes.author``
        return True
    module, _, attribute = name.rpartition(".")
    return attribute in PUBLIC.get(module, ())


@pytest.mark.parametrize("path", [*MODEL_FILES, ROOT / "examples" / "incremental_learning.py"],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_models_import_only_the_public_and_author_api(path):
    relative = path.relative_to(ROOT).with_suffix("").parts
    # The model's own package: reduced_odes.models.<name> (the registry package: itself).
    own = ".".join(relative[:3]) if relative[:2] == ("reduced_odes", "models") else "-"
    if relative[-1] == "__init__" and len(relative) == 3:
        own = "reduced_odes.models"
    private = [f"line {line}: {name}" for line, name in _imports(path)
               if not _allowed(name, own)]
    assert not private, f"{path.relative_to(ROOT)} reaches into the engine: {private}"


def test_the_import_rule_sees_private_reach_in_every_form():
    """The check itself, on imports it must refuse and ones it must allow."""
    path = ROOT / "reduced_odes" / "models" / "example" / "module.py"
    cases = {"from ..._params import Parameters": False, "from ... import _params": False,
             "import reduced_odes._integrate": False, "from reduced_odes import _backend": False,
             "from reduced_odes.author import Model": True, "from reduced_odes import solve": True,
             "from .params import P": True, "from ..deep_linear import MODEL": False,
             "from ... import solve": True, "import reduced_odes.models.deep_linear": False,
             "from reduced_odes import models": False, "from reduced_odes import cli": False,
             "def f():\n    from ..._compile import load_system": False}
    for source, allowed in cases.items():
        names = [name for _, name in _imports(path, source)]
        verdict = all(_allowed(name, "reduced_odes.models.example") for name in names)
        assert verdict is allowed, (source, names)


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle of ``graph`` (module -> modules it imports), or [] if there is none."""
    state: dict[str, str] = {}
    path: list[str] = []

    def visit(module: str) -> list[str]:
        state[module] = "open"
        path.append(module)
        for target in sorted(graph[module]):
            if state.get(target) == "open":
                return [*path[path.index(target):], target]
            if target not in state and (found := visit(target)):
                return found
        state[module] = "done"
        path.pop()
        return []

    for module in sorted(graph):
        if module not in state and (found := visit(module)):
            return found
    return []


def test_model_packages_have_no_import_cycle():
    """No module of a model package imports one that imports it back, function-level
    imports included.  (Importing ``pkg.module`` also runs ``pkg/__init__``, which
    re-exports the model; that implicit import is not an edge.)"""
    modules = {_module_name(path): path for path in MODEL_FILES}
    graph = {}
    for module, path in modules.items():
        targets = set()
        for _, name in _imports(path):
            while name and name not in modules:  # a name imported from a module: the module
                name = name.rpartition(".")[0]
            if name and name != module:
                targets.add(name)
        graph[module] = targets
    assert _cycle(graph) == []
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
