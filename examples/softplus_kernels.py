"""Numeric kernels of ``examples/logistic_margin.py``: ``math`` only, no SymPy.

``softplus(x) = ln(1 + e^x)`` and its derivative ``sigmoid(x)``, written so that neither
overflows: ``e^x`` is never formed for ``x > 0``.  The fused kernel
:func:`softplus_sigmoid` returns both from one exponential; the engine calls it wherever
the generated code needs either, and the native backend compiles this same code with
numba.
"""

import math

__all__ = ["FUSED_KERNELS", "NUMERIC_IMPLEMENTATIONS", "sigmoid", "softplus",
           "softplus_sigmoid"]


def softplus_sigmoid(x):
    """``(softplus(x), sigmoid(x))`` from the one exponential ``e^-|x|``.

    Examples
    --------
    >>> softplus_sigmoid(800.0)  # ln(1 + e^800) would overflow
    (800.0, 1.0)
    >>> [round(v, 12) for v in softplus_sigmoid(0.0)]
    [0.69314718056, 0.5]
    """
    e = math.exp(-abs(x))
    return max(x, 0.0) + math.log1p(e), (1.0 if x >= 0 else e) / (1.0 + e)


def softplus(x):
    """``ln(1 + e^x)``."""
    return softplus_sigmoid(x)[0]


def sigmoid(x):
    """``1 / (1 + e^-x)``."""
    return softplus_sigmoid(x)[1]


#: SymPy class name -> the plain function of one value: what the compiler looks for.
NUMERIC_IMPLEMENTATIONS = {"Softplus": softplus, "Sigmoid": sigmoid}
#: Fused kernels, cheapest first: name -> the class names of the values it returns, in order.
FUSED_KERNELS = {"softplus_sigmoid": ("Softplus", "Sigmoid")}
