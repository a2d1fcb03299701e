"""The two-layer scalar linear network of Saxe, McClelland & Ganguli (2014).

``f(x) = a b x`` learns the target ``s x`` from ``x ~ N(0, 1)`` under the
loss ``1/2 E[(s x - a b x)^2]``.  From ``a = b = sigma`` the product
``u = a b`` follows the logistic law ``u(t) = s / (1 + (s/u0 - 1) e^{-2 s t})``
with ``u0 = sigma^2``: a plateau of length ``~ ln(s/sigma^2)/(2s)`` and then
a sigmoidal jump.  The exact solution is the engine's contract test.

Modules: ``params`` (the parameters), ``derivation`` (the loss and its
gradient flow, by SymPy) and ``model`` (the :class:`~reduced_odes.author.Model`).
"""

from .model import MODEL, DeepLinear
from .params import DeepLinearParams

__all__ = ["MODEL", "DeepLinear", "DeepLinearParams"]
