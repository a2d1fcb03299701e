"""The built-in reduced models, one subpackage each, and the model registry.

Each subpackage defines ``MODEL``, an instance of :class:`reduced_odes.author.Model`,
and has one shape: ``model`` (the :class:`~reduced_odes.author.Model` subclass),
``params``, ``derivation`` (SymPy), ``numerics`` (predictions and closed forms as
numbers), ``claims`` (``verify``), ``ground_truth`` (the unreduced model by Monte
Carlo or SGD; ``compare``), ``figures`` and ``export`` (the derivation documents),
each where the model has that role, beside private helper modules.  A model
imports only :mod:`reduced_odes`, :mod:`reduced_odes.author`, its own package
and third-party libraries, so a user's model can do all that these do.
:func:`get_model` finds a model by name, as it finds entry-point plug-ins and
user files (``path/to/file.py:OBJECT``).  The tests reuse these sample systems.

Examples
--------
>>> from reduced_odes.models import get_model
>>> get_model("deep_linear").description
'two-layer scalar linear network (Saxe, McClelland & Ganguli 2014)'
"""

from reduced_odes import get_model, model_for, registered_models
from reduced_odes.author import ENTRY_POINT_GROUP

__all__ = ["ENTRY_POINT_GROUP", "get_model", "model_for", "registered_models"]
