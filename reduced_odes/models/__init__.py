"""The built-in reduced models, one subpackage each, and the model registry.

Each subpackage defines ``MODEL``, an instance of :class:`reduced_odes.Model`;
:func:`get_model` finds it by name, as it finds entry-point plug-ins and user
files (``path/to/file.py:OBJECT``).  The tests reuse these sample systems.

Examples
--------
>>> from reduced_odes.models import get_model
>>> get_model("deep_linear").description
'two-layer scalar linear network (Saxe, McClelland & Ganguli 2014)'
"""

from .._registry import ENTRY_POINT_GROUP, get_model, model_for, registered_models

__all__ = ["ENTRY_POINT_GROUP", "get_model", "model_for", "registered_models"]
