"""reduced-odes: exact reduced training dynamics of toy neural networks and transformers.

The engine names no model.  A model (:class:`Model`; the built-in ones are in
:mod:`reduced_odes.models`) declares its state, parameters and loss; the
engine then runs the pipeline, one module per arrow::

    declaration -> expectations (_gaussian, _expectation, _quadrature, _positions)
    -> gradient flow under a metric, asserted identities, coordinates, Jacobian (_symbolic)
    -> compiled RHS/Jacobian/observables, cached on disk (_compile, _codegen)
    -> a problem, a stepper's run, its trajectory and phase crossings (_problem, the
       steppers of _steppers: _lsoda, _ivp, _native; _driver, _crossing; _integrate)
    -> sweeps, claims, derivations, figures (_sweep, _verify, _reproduce, _figstyle)

(docs/architecture.md shows the layers and every module.)

The public API is re-exported here explicitly; every name is imported on first
use, so integrating from a warm compile cache never imports SymPy.
"""

from typing import TYPE_CHECKING

from . import _lazy
from ._blas import pin_kernel
from ._version import __version__ as __version__  # re-exported

# Before NumPy loads OpenBLAS: the same kernel, and so the same bits, on every x86-64 CPU
# with AVX2 (see reduced_odes._blas).
pin_kernel()

_LAZY = {
    **dict.fromkeys(("Model",), "_contract"),
    **dict.fromkeys(("Claim",), "_claims"),
    **dict.fromkeys(("Crossing", "SettledRule"), "_stop_rules"),
    **dict.fromkeys(("DerivationError",), "_errors"),
    **dict.fromkeys(("METHODS", "ParameterError", "Parameters", "Range", "SolverConfig",
                     "choice", "flag", "integer", "interval", "parameter", "positive"),
                    "_params"),
    **dict.fromkeys(("Block", "CoordinateChange", "Derivation", "Drift", "Identity",
                     "assert_conserved", "assert_same", "declare_order_parameters",
                     "gradient_flow", "log_coordinate", "metric_gradient", "mixture_expectation",
                     "mobility_gradient", "relu"), "_symbolic"),
    **dict.fromkeys(("OnlineSGD", "SymmetricSGD", "online_sgd_reduction", "pullback_mobility",
                     "symmetric_online_sgd"), "_teacher_student"),
    **dict.fromkeys(("indexed_online_sgd",), "_unit_sums"),
    **dict.fromkeys(("SecondLayerSGD", "online_sgd_second_layer"), "_second_layer"),
    **dict.fromkeys(("StructuredSystem",), "_structured"),
    **dict.fromkeys(("GaussianExpectation", "gaussian_expectation"), "_gaussian"),
    **dict.fromkeys(("ACTIVATIONS", "Activation", "activation", "register_activation"),
                    "_activations"),
    **dict.fromkeys(("Fixed", "Index", "PositionSum", "expect_product",
                     "expect_product_explicit", "geometric_sum", "token"), "_positions"),
    **dict.fromkeys(("CompiledSystem", "cache_dir", "load_system"), "_compile"),
    **dict.fromkeys(("DomainError", "SolverStats", "Trajectory", "solve"), "_integrate"),
    **dict.fromkeys(("get_model", "model_for", "registered_models"), "_registry"),
    **dict.fromkeys(("SweepReport", "run_sweep"), "_sweep"),
    **dict.fromkeys(("expand_grid", "load_grid"), "_grid"),
    **dict.fromkeys(("read_results",), "_results_file"),
    **dict.fromkeys(("solve_setting",), "_sweep_command"),
    **dict.fromkeys(("Setting",), "_setting"),
    **dict.fromkeys(("VerifyReport", "verify"), "_verify"),
    **dict.fromkeys(("versions",), "_provenance"),
    **dict.fromkeys(("FixedPoint", "Flow", "find_fixed_points"), "_fixed_points"),
    **dict.fromkeys(("Branch", "Continuation", "continue_branch"), "_continuation"),
    **dict.fromkeys(("ScalingFit", "fit_law", "measure_scaling"), "_scaling"),
    **dict.fromkeys(("plateau_predictions",), "_plateaus"),
    **dict.fromkeys(("PredictionClaims", "prediction_claims"), "_prediction_claims"),
    **dict.fromkeys(("Axis", "draw_phase_diagram", "phase_diagram"), "_phase_diagram"),
    **dict.fromkeys(("draw_bifurcation_diagram", "draw_scaling_fit"), "_analysis_figures"),
}

if TYPE_CHECKING:  # the names as a type checker sees them (``X as X``: re-exported);
    # at run time each is imported on first use (``__getattr__``)
    from ._activations import ACTIVATIONS as ACTIVATIONS
    from ._activations import Activation as Activation
    from ._activations import activation as activation
    from ._activations import register_activation as register_activation
    from ._analysis_figures import draw_bifurcation_diagram as draw_bifurcation_diagram
    from ._analysis_figures import draw_scaling_fit as draw_scaling_fit
    from ._claims import Claim as Claim
    from ._compile import CompiledSystem as CompiledSystem
    from ._compile import cache_dir as cache_dir
    from ._compile import load_system as load_system
    from ._continuation import Branch as Branch
    from ._continuation import Continuation as Continuation
    from ._continuation import continue_branch as continue_branch
    from ._contract import Model as Model
    from ._errors import DerivationError as DerivationError
    from ._fixed_points import FixedPoint as FixedPoint
    from ._fixed_points import Flow as Flow
    from ._fixed_points import find_fixed_points as find_fixed_points
    from ._gaussian import GaussianExpectation as GaussianExpectation
    from ._gaussian import gaussian_expectation as gaussian_expectation
    from ._grid import expand_grid as expand_grid
    from ._grid import load_grid as load_grid
    from ._integrate import DomainError as DomainError
    from ._integrate import SolverStats as SolverStats
    from ._integrate import Trajectory as Trajectory
    from ._integrate import solve as solve
    from ._params import METHODS as METHODS
    from ._params import ParameterError as ParameterError
    from ._params import Parameters as Parameters
    from ._params import Range as Range
    from ._params import SolverConfig as SolverConfig
    from ._params import choice as choice
    from ._params import flag as flag
    from ._params import integer as integer
    from ._params import interval as interval
    from ._params import parameter as parameter
    from ._params import positive as positive
    from ._phase_diagram import Axis as Axis
    from ._phase_diagram import draw_phase_diagram as draw_phase_diagram
    from ._phase_diagram import phase_diagram as phase_diagram
    from ._plateaus import plateau_predictions as plateau_predictions
    from ._positions import Fixed as Fixed
    from ._positions import Index as Index
    from ._positions import PositionSum as PositionSum
    from ._positions import expect_product as expect_product
    from ._positions import expect_product_explicit as expect_product_explicit
    from ._positions import geometric_sum as geometric_sum
    from ._positions import token as token
    from ._prediction_claims import PredictionClaims as PredictionClaims
    from ._prediction_claims import prediction_claims as prediction_claims
    from ._provenance import versions as versions
    from ._registry import get_model as get_model
    from ._registry import model_for as model_for
    from ._registry import registered_models as registered_models
    from ._results_file import read_results as read_results
    from ._scaling import ScalingFit as ScalingFit
    from ._scaling import fit_law as fit_law
    from ._scaling import measure_scaling as measure_scaling
    from ._second_layer import SecondLayerSGD as SecondLayerSGD
    from ._second_layer import online_sgd_second_layer as online_sgd_second_layer
    from ._setting import Setting as Setting
    from ._stop_rules import Crossing as Crossing
    from ._stop_rules import SettledRule as SettledRule
    from ._structured import StructuredSystem as StructuredSystem
    from ._sweep import SweepReport as SweepReport
    from ._sweep import run_sweep as run_sweep
    from ._sweep_command import solve_setting as solve_setting
    from ._symbolic import Block as Block
    from ._symbolic import CoordinateChange as CoordinateChange
    from ._symbolic import Derivation as Derivation
    from ._symbolic import Drift as Drift
    from ._symbolic import Identity as Identity
    from ._symbolic import assert_conserved as assert_conserved
    from ._symbolic import assert_same as assert_same
    from ._symbolic import declare_order_parameters as declare_order_parameters
    from ._symbolic import gradient_flow as gradient_flow
    from ._symbolic import log_coordinate as log_coordinate
    from ._symbolic import metric_gradient as metric_gradient
    from ._symbolic import mixture_expectation as mixture_expectation
    from ._symbolic import mobility_gradient as mobility_gradient
    from ._symbolic import relu as relu
    from ._teacher_student import OnlineSGD as OnlineSGD
    from ._teacher_student import SymmetricSGD as SymmetricSGD
    from ._teacher_student import online_sgd_reduction as online_sgd_reduction
    from ._teacher_student import pullback_mobility as pullback_mobility
    from ._teacher_student import symmetric_online_sgd as symmetric_online_sgd
    from ._unit_sums import indexed_online_sgd as indexed_online_sgd
    from ._verify import VerifyReport as VerifyReport
    from ._verify import verify as verify


__getattr__, __dir__ = _lazy.lazy_attributes(__name__, _LAZY, globals())


__all__ = sorted([*_LAZY, "__version__"])  # noqa: PLE0604
