"""Which models exist: the built-in ones, entry-point plug-ins, and user files.

A model is named on the command line by

* a registered name: a subpackage of :mod:`reduced_odes.models` that defines
  ``MODEL``, or an entry point of the group ``reduced_odes.models``;
* ``path/to/file.py:OBJECT``: a model defined in a user's file;
* ``package.module:OBJECT``: a model in an importable module.

Every failure is a :class:`~reduced_odes.ParameterError` with one line that
says what is wrong (the CLI turns it into exit status 2).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import pkgutil
import sys
from pathlib import Path

from ._contract import Model
from ._params import ParameterError, Parameters

__all__ = ["DEFAULT_MODEL", "ENTRY_POINT_GROUP", "get_model", "model_for", "reference",
           "registered_models", "registered_names"]

ENTRY_POINT_GROUP = "reduced_odes.models"
#: The model a command (``--model``) or a grid line without a ``model`` key means.
DEFAULT_MODEL = "induction_head"
_BUILTIN_PACKAGE = "reduced_odes.models"
#: Models loaded so far, by reference (name or ``file:OBJECT``).
_LOADED: dict[str, Model] = {}
#: The same models by their ``Params`` class, the first loaded winning: what
#: :func:`model_for` looks up.
_BY_PARAMS: dict[type, Model] = {}


def _builtin() -> dict[str, str]:
    """Built-in name -> ``module:OBJECT``: the subpackages of :mod:`reduced_odes.models`."""
    package = importlib.import_module(_BUILTIN_PACKAGE)
    return {info.name: f"{_BUILTIN_PACKAGE}.{info.name}:MODEL"
            for info in pkgutil.iter_modules(package.__path__) if info.ispkg}


def _references() -> dict[str, str]:
    """Registered name -> ``module:OBJECT``, built-in packages first, then entry points."""
    found = _builtin()
    for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(entry.name, entry.value)
    return dict(sorted(found.items()))


def registered_names() -> list[str]:
    """The names of the registered models (built-in, then entry points), sorted; none is
    imported.

    Examples
    --------
    >>> {"deep_linear", "induction_head"} <= set(registered_names())
    True
    """
    return list(_references())


def registered_models() -> list[Model]:
    """Every registered model, sorted by name.

    Examples
    --------
    >>> "induction_head" in [m.name for m in registered_models()]
    True
    """
    return [get_model(name) for name in _references()]


def _checked(reference: str, value) -> Model:
    if not isinstance(value, Model):
        raise ParameterError(f"model={reference!r} is a {type(value).__name__}, not a "
                             f"reduced_odes.Model instance")
    return value


def _from_module(reference: str, module_name: str, attribute: str) -> Model:
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ParameterError(
            f"model={reference!r}: cannot import {module_name!r} ({exc})") from None
    if not hasattr(module, attribute):
        raise ParameterError(f"model={reference!r}: {module_name} has no attribute {attribute!r}")
    return _checked(reference, getattr(module, attribute))


def _from_file(reference: str, path: Path, attribute: str) -> Model:
    if not path.is_file():
        raise ParameterError(f"model={reference!r}: file {str(path)!r} does not exist")
    name = f"_reduced_odes_user_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look the module up by name
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # the user's file: report, never a traceback
        sys.modules.pop(name, None)
        raise ParameterError(f"model={reference!r}: importing {str(path)!r} failed: "
                             f"{type(exc).__name__}: {exc}") from None
    if not hasattr(module, attribute):
        raise ParameterError(f"model={reference!r}: {str(path)!r} defines no {attribute!r}")
    return _checked(reference, getattr(module, attribute))


def get_model(reference: str | Model) -> Model:
    """The model named by ``reference`` (see the module docstring); models pass through.

    Examples
    --------
    >>> get_model("deep_linear").name
    'deep_linear'
    >>> get_model("nonesuch")
    Traceback (most recent call last):
    ...
    reduced_odes._params.ParameterError: model='nonesuch' is not registered; known: ...
    """
    if isinstance(reference, Model):
        return reference
    if reference in _LOADED:
        return _LOADED[reference]
    # A built-in name wins over an entry point of the same name, so it is looked up
    # without reading every installed distribution's metadata (15 ms here; more with more
    # packages installed).
    references = _builtin()
    if reference not in references:
        references = _references()
    if reference in references:
        module_name, attribute = references[reference].split(":")
        model = _from_module(reference, module_name, attribute)
    elif ":" in reference:
        location, attribute = reference.rsplit(":", 1)
        if location.endswith(".py") or "/" in location or "\\" in location:
            model = _from_file(reference, Path(location), attribute)
        else:
            model = _from_module(reference, location, attribute)
    else:
        raise ParameterError(f"model={reference!r} is not registered; known: "
                             f"{', '.join(references)} (or give path/to/file.py:OBJECT)")
    _LOADED[reference] = model
    params_class = getattr(model, "Params", None)
    if params_class is not None:
        _BY_PARAMS.setdefault(params_class, model)
    return model


def model_for(params: Parameters) -> Model:
    """The model whose ``Params`` class ``params`` is an instance of: a loaded model, else
    a registered one (loaded now).

    A dictionary lookup once the model is loaded (:func:`~reduced_odes.solve` without
    ``model=`` calls it on every trajectory).  Otherwise the built-in models are loaded
    first, without reading the installed packages' entry points; those are read only for
    parameters of no built-in model.

    Examples
    --------
    >>> from reduced_odes.models.deep_linear import DeepLinearParams
    >>> model_for(DeepLinearParams()).name
    'deep_linear'
    """
    model = _BY_PARAMS.get(type(params))
    if model is not None:
        return model
    for names in (_builtin, _references):
        for name in names():
            model = get_model(name)
            if model.Params is type(params):
                return _BY_PARAMS.setdefault(model.Params, model)
    raise ParameterError(f"params={params!r} belong to no loaded model; pass model=...")


def reference(model: Model) -> str:
    """The reference that loads ``model`` again (in a worker process, say).

    Examples
    --------
    >>> reference(get_model("deep_linear"))
    'deep_linear'
    """
    for ref, loaded in _LOADED.items():
        if loaded is model:
            return ref
    if model.name in _references():
        return model.name
    raise ParameterError(f"model {model.name!r} was not loaded by reference; "
                         f"load it with get_model('path/to/file.py:OBJECT')")
