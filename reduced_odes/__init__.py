"""reduced-odes: exact reduced training dynamics of toy transformers.

The pipeline, one module per arrow::

    model (_model) -> Gaussian expectation (_gaussian, _positions) -> loss (_losses)
    -> gradient flow (_flow) -> compiled RHS/Jacobian (_compile) -> trajectory (_integrate)
    -> phases (_phases)

The public API is re-exported here explicitly.
"""

from ._compile import CompiledSystem, cache_dir, load_system
from ._flow import GradientFlow, derive_flow, derive_stage1_flow
from ._gaussian import GaussianExpectation, gaussian_expectation
from ._integrate import STATE_NAMES, DomainError, SolverStats, Trajectory, solve
from ._losses import InductionHeadLosses, derive_losses, derive_stage1_loss, partial_loss
from ._model import CLOSURES, Closure, Readout, induction_head_readouts, stage1_readout
from ._params import ModelParams, ParameterError, PhaseThresholds, SolverConfig
from ._positions import (
    Fixed,
    Index,
    PositionSum,
    expect_product,
    expect_product_explicit,
    geometric_sum,
    token,
)
from ._provenance import versions
from ._version import __version__

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
