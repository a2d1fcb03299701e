"""reduced-odes: exact reduced training dynamics of toy transformers.

The pipeline, one module per arrow::

    model (_model) -> Gaussian expectation (_gaussian, _positions) -> loss (_losses)
    -> gradient flow (_flow) -> compiled RHS/Jacobian (_compile) -> trajectory (_integrate)
    -> phases (_phases)

The public API is re-exported here explicitly.
"""

import importlib

from ._compile import CompiledSystem, cache_dir, load_system
from ._integrate import STATE_NAMES, DomainError, SolverStats, Trajectory, solve
from ._params import ModelParams, ParameterError, PhaseThresholds, SolverConfig
from ._provenance import versions
from ._version import __version__

#: The symbolic half of the API, imported on first use: integrating from a warm
#: compile cache then never imports SymPy (see benchmarks/bench_solve.py).
_LAZY = {
    **dict.fromkeys(("GradientFlow", "derive_flow", "derive_stage1_flow"), "_flow"),
    **dict.fromkeys(("GaussianExpectation", "gaussian_expectation"), "_gaussian"),
    **dict.fromkeys(("InductionHeadLosses", "derive_losses", "derive_stage1_loss",
                     "partial_loss"), "_losses"),
    **dict.fromkeys(("CLOSURES", "Closure", "Readout", "induction_head_readouts",
                     "stage1_readout"), "_model"),
    **dict.fromkeys(("Fixed", "Index", "PositionSum", "expect_product",
                     "expect_product_explicit", "geometric_sum", "token"), "_positions"),
}


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))

__all__ = [
    "CLOSURES",
    "STATE_NAMES",
    "Closure",
    "CompiledSystem",
    "DomainError",
    "Fixed",
    "GaussianExpectation",
    "GradientFlow",
    "Index",
    "InductionHeadLosses",
    "ModelParams",
    "ParameterError",
    "PhaseThresholds",
    "PositionSum",
    "Readout",
    "SolverConfig",
    "SolverStats",
    "Trajectory",
    "__version__",
    "cache_dir",
    "derive_flow",
    "derive_losses",
    "derive_stage1_flow",
    "derive_stage1_loss",
    "expect_product",
    "expect_product_explicit",
    "gaussian_expectation",
    "geometric_sum",
    "induction_head_readouts",
    "load_system",
    "partial_loss",
    "solve",
    "stage1_readout",
    "token",
    "versions",
]
