"""reduced-odes: exact reduced training dynamics of toy transformers.

The pipeline, one module per arrow::

    model (_model) -> Gaussian expectation (_gaussian, _positions) -> loss (_losses)
    -> gradient flow (_flow) -> compiled RHS/Jacobian (_compile) -> trajectory (_integrate)
    -> phases (_phases) -> predictions vs measurements (_predictions, _verify)
    -> derivations and figures (_export, _figures)

Beside the pipeline: resumable sweeps (_sweep), the exact-softmax SGD
simulator (_sgd) and the closures' comparison with it (_compare).
The public API is re-exported here explicitly.
"""

import importlib

from ._compile import CompiledSystem, cache_dir, load_system
from ._integrate import STATE_NAMES, DomainError, SolverStats, Trajectory, solve
from ._params import ModelParams, ParameterError, PhaseThresholds, SolverConfig
from ._provenance import versions
from ._sweep import SweepReport, expand_grid, load_grid, read_results, run_sweep
from ._sweep_command import solve_setting
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
    **dict.fromkeys(("Predictions", "derive_predictions"), "_predictions"),
    **dict.fromkeys(("Claim", "VerifyReport", "verify"), "_verify"),
    **dict.fromkeys(("export_derivations", "render_derivations"), "_export"),
    **dict.fromkeys(("SGDConfig", "SGDTrajectory", "simulate_sgd"), "_sgd"),
    **dict.fromkeys(("compare_closures", "validate_simulator"), "_compare"),
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
    "Claim",
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
    "Predictions",
    "Readout",
    "SGDConfig",
    "SGDTrajectory",
    "STATE_NAMES",
    "SolverConfig",
    "SolverStats",
    "SweepReport",
    "Trajectory",
    "VerifyReport",
    "__version__",
    "cache_dir",
    "compare_closures",
    "derive_flow",
    "derive_losses",
    "derive_predictions",
    "derive_stage1_flow",
    "derive_stage1_loss",
    "expand_grid",
    "expect_product",
    "expect_product_explicit",
    "export_derivations",
    "gaussian_expectation",
    "geometric_sum",
    "induction_head_readouts",
    "load_grid",
    "load_system",
    "partial_loss",
    "read_results",
    "render_derivations",
    "run_sweep",
    "simulate_sgd",
    "solve",
    "solve_setting",
    "stage1_readout",
    "token",
    "validate_simulator",
    "verify",
    "versions",
]
