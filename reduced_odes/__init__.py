"""reduced-odes: exact reduced training dynamics of toy neural networks and transformers.

The engine names no model.  A model (:class:`Model`; the built-in ones are in
:mod:`reduced_odes.models`) declares its state, parameters and loss; the
engine then runs the pipeline, one module per arrow::

    declaration -> expectations (_gaussian, _positions, _symbolic.mixture_expectation)
    -> gradient flow under a metric, asserted identities, coordinates, Jacobian (_symbolic)
    -> compiled RHS/Jacobian/observables, cached on disk (_compile)
    -> trajectory and phase crossings (_integrate, _lsoda, _ivp, _crossing)
    -> sweeps, claims, derivations, figures (_sweep, _verify, _export, _figstyle)

The public API is re-exported here explicitly; every name is imported on first
use, so integrating from a warm compile cache never imports SymPy.
"""

import importlib

from ._blas import pin_kernel
from ._version import __version__ as __version__  # re-exported

# Before NumPy loads OpenBLAS: the same kernel, and so the same bits, on every x86-64 CPU
# with AVX2 (see reduced_odes._blas).
pin_kernel()

_LAZY = {
    **dict.fromkeys(("Crossing", "Model", "SettledRule"), "_contract"),
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
    **dict.fromkeys(("Claim", "VerifyReport", "verify"), "_verify"),
    **dict.fromkeys(("versions",), "_provenance"),
    **dict.fromkeys(("FixedPoint", "Flow", "find_fixed_points"), "_fixed_points"),
    **dict.fromkeys(("Branch", "Continuation", "continue_branch"), "_continuation"),
    **dict.fromkeys(("ScalingFit", "fit_law", "measure_scaling"), "_scaling"),
    **dict.fromkeys(("plateau_predictions",), "_plateaus"),
    **dict.fromkeys(("prediction_claims",), "_prediction_claims"),
    **dict.fromkeys(("Axis", "draw_phase_diagram", "phase_diagram"), "_phase_diagram"),
    **dict.fromkeys(("draw_bifurcation_diagram", "draw_scaling_fit"), "_analysis_figures"),
}


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # Not cached here: the name always reads its module's current attribute (a test that
    # patches ``_integrate.solve`` must not leave a stale copy behind in this package).
    return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


__all__ = sorted([*_LAZY, "__version__"])  # noqa: PLE0604
