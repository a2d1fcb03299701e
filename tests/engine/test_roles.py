"""Hooks by role (``_roles``): the mapping each role spells, and the built-in models' roles
resolving to real functions."""

from __future__ import annotations

import pytest

from reduced_odes import registered_models
from reduced_odes._contract import FORWARDABLE
from reduced_odes._roles import ROLES, roles


def test_every_role_serves_forwardable_hooks_once():
    served = [hook for hooks in ROLES.values() for hook in hooks]
    assert len(served) == len(set(served)) and set(served) <= set(FORWARDABLE)


def test_roles_spell_module_and_function():
    assert roles("claims") == {hook: f".claims:{hook}" for hook in ROLES["claims"]}
    hooks = roles("derivation", compare=".ground_truth", functions={"compare": "run"})
    assert hooks == {"derive": ".derivation:derivation", "compare": ".ground_truth:run",
                     "format_compare": ".ground_truth:format_compare"}


@pytest.mark.parametrize("call, match", [
    (lambda: roles("claim"), "roles \\['claim'\\] are no roles; allowed: derivation"),
    (lambda: roles("figures", functions={"measure": "m"}), "functions for \\['measure'\\]"),
])
def test_a_misspelt_role_or_function_is_refused(call, match):
    with pytest.raises(TypeError, match=match):
        call()


@pytest.mark.parametrize("model", registered_models(), ids=lambda m: m.name)
def test_each_role_of_a_built_in_model_is_a_function_of_its_package(model):
    for hook in type(model).hooks:
        assert callable(getattr(model, hook)), hook  # a function (some behind a cache)


def test_the_built_in_models_declare_their_documents_and_data_figures_once():
    """Every built-in export hook is a :class:`DerivationDocuments`' ``export`` (no model
    writes the render-and-write pair again); every figures hook but the induction head's
    (whose figures are drawn per closure from several files) a :class:`DataFigures`'
    ``draw``."""
    from reduced_odes.author import DataFigures, DerivationDocuments

    exports = [m for m in registered_models() if m.supports("export_derivations")]
    figures = [m for m in registered_models()
               if m.supports("figures") and m.name != "induction_head"]
    assert len(exports) >= 4 and len(figures) >= 3  # the five built-in models' roles
    for model in exports:
        hook = model.export_derivations
        assert isinstance(getattr(hook, "__self__", None), DerivationDocuments), model.name
        assert hook.__self__.stem == model.name
    for model in figures:
        hook = model.figures
        assert isinstance(getattr(hook, "__self__", None), DataFigures), model.name
        assert hook.__self__.model == model.name
