"""A margin trained on the logistic loss: a model whose loss needs a special function.

A user's model, outside the package: ``reduced-odes solve --model
examples/logistic_margin.py:MODEL --json``.  The margin ``w`` of one example descends
``L(w) = softplus(-w) + lam w^2 / 2`` (``softplus(x) = ln(1 + e^x)``), so
``dw/dt = sigmoid(-w) - lam w``.  Written with ``sp.log(1 + sp.exp(-w))``, the loss would
overflow at a start far on the wrong side (``w0 = -800``); the special functions
``Softplus`` and ``Sigmoid`` are instead evaluated by the kernels module beside this file,
``examples/softplus_kernels.py``, in plain ``math`` on the pure path and compiled by numba
on the native one.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from reduced_odes import Crossing, Model, Parameters, SettledRule, interval, parameter, positive

# The kernels module is named by its import name: the generated code imports it, in this
# process, in the workers and in a later run.  A package names its own module
# ("mypkg.kernels"); a file model puts its directory on the import path.
sys.path.insert(0, str(Path(__file__).resolve().parent))
KERNELS = "softplus_kernels"


@dataclass(frozen=True)
class MarginParams(Parameters):
    """The start and the weight decay."""

    w0: float = parameter(-800.0, interval(-1e4, 1e4), "initial margin")
    lam: float = parameter(0.1, positive(10), "weight decay")


def special_functions():
    """``Softplus`` and ``Sigmoid`` as SymPy functions, with their derivatives (so that the
    engine derives the flow and its Jacobian) and their kernels' names."""
    import sympy as sp

    class Sigmoid(sp.Function):
        def fdiff(self, argindex=1):
            return Sigmoid(self.args[0]) * (1 - Sigmoid(self.args[0]))

    class Softplus(sp.Function):
        def fdiff(self, argindex=1):
            return Sigmoid(self.args[0])

    return Softplus, Sigmoid


class LogisticMargin(Model):
    """``w`` under gradient flow on the regularised logistic loss; phase ``T_correct``: the
    margin becomes positive."""

    name = "logistic_margin"
    description = "a margin under the logistic loss with weight decay (kernels hook)"
    Params = MarginParams
    phase_order = ("T_correct",)
    tail = 0.0

    def derive(self, variant):
        import sympy as sp

        from reduced_odes import gradient_flow

        softplus, _ = special_functions()
        w, lam = sp.symbols("w lam", real=True)
        loss = softplus(-w) + lam * w**2 / 2
        return gradient_flow((w,), loss, parameters=(lam,), observables={"loss": loss},
                             kernels=KERNELS)

    def parameter_values(self, params, variant):
        return (params.lam,)

    def initial_state(self, params, variant):
        return (params.w0,)

    def phases(self, params, variant, initial, thresholds):
        return [Crossing("T_correct", "w", 0.0)]

    def settled(self, params, variant):
        # dw/dt = sigmoid(-w) - lam w within 1e-12 of 0.
        return SettledRule("abs(1 / (1 + math.exp(w)) - lam * w) - 1e-12", {"lam": params.lam})

    def horizon(self, params, variant):
        return 10.0 / params.lam


MODEL = LogisticMargin()
