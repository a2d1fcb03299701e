"""Everything a model author uses: the contract, parameters, symbolic helpers, claims, figures.

A model, built-in or a user's, imports only :mod:`reduced_odes` (to run
things: :func:`~reduced_odes.solve`, :class:`~reduced_odes.SolverConfig`,
:func:`~reduced_odes.load_system`, ...) and this module (to write one).  The
built-in models under :mod:`reduced_odes.models` import nothing else of the
engine, so a user's model can do everything a built-in one does.

Every name is imported on first use, as in :mod:`reduced_odes`: importing this
module costs nothing, and a model that imports its contract names from here at
module level still never imports SymPy on a warm ``solve`` (the symbolic
helpers load SymPy when a derivation first asks for them).

Stability
---------
The names in :data:`STABLE` follow semantic versioning from 1.0: within a
major version they are neither removed nor changed incompatibly (a name to be
removed is first deprecated for a minor release).  That covers the model
contract (:class:`Model`, its numbered hooks and their signatures), the
parameters, the symbolic helpers and the verdict rows.  The names in
:data:`PROVISIONAL` (the sweep, I/O, progress and figure helpers the built-in
models share) are public and documented, but may change in a minor release,
with a note in the changelog; pin the minor version if you depend on them.

Order parameters of trained weights follow a gradient flow under the
pull-back mobility (:func:`pullback_mobility`, :func:`declare_order_parameters`),
terms that are no gradient are :class:`Drift` terms, and the activations'
Gaussian expectations (:func:`activation`, ``gaussian_expectation(...,
covariance=...)``) are derived; :func:`online_sgd_reduction` puts them together
for teacher–student online learning.

Examples
--------
>>> from reduced_odes import get_model
>>> from reduced_odes.author import Crossing, Model
>>> Crossing("T_half", "u", 0.5).level
0.5
>>> isinstance(get_model("deep_linear"), Model)
True
>>> "Model" in STABLE and "run_sweep" in PROVISIONAL
True
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reduced_odes import _lazy

#: Name -> engine module, for the names that follow semantic versioning.
_STABLE = {
    # The contract: what a model is and owes the engine.
    **dict.fromkeys(("Model",), "_contract"),
    **dict.fromkeys(("Crossing", "SettledRule"), "_stop_rules"),
    # Hooks by role: the modules of a model's package and the jobs they do.
    **dict.fromkeys(("ROLES", "roles"), "_roles"),
    **dict.fromkeys(("DerivationError",), "_errors"),
    # Parameters: declared fields with ranges, and the one error of bad input.
    **dict.fromkeys(("ParameterError", "Parameters", "Range", "choice", "flag", "integer",
                     "interval", "parameter", "positive"), "_params"),
    # The symbolic pipeline: expectations, gradient flows under a metric, asserted identities.
    **dict.fromkeys(("Block", "CoordinateChange", "Derivation", "Drift", "Identity",
                     "assert_conserved", "assert_same", "declare_order_parameters",
                     "gradient_flow", "log_coordinate", "metric_gradient", "mixture_expectation",
                     "mobility_gradient", "relu"), "_symbolic"),
    **dict.fromkeys(("GaussianExpectation", "gaussian_expectation"), "_gaussian"),
    # Activations and their Gaussian expectations; online SGD of teacher-student pairs.
    **dict.fromkeys(("ACTIVATIONS", "Activation", "activation", "register_activation"),
                    "_activations"),
    **dict.fromkeys(("OnlineSGD", "SymmetricSGD", "online_sgd_reduction", "pullback_mobility",
                     "symmetric_online_sgd"), "_teacher_student"),
    **dict.fromkeys(("indexed_online_sgd",), "_unit_sums"),
    **dict.fromkeys(("SecondLayerSGD", "online_sgd_second_layer"), "_second_layer"),
    **dict.fromkeys(("StructuredSystem",), "_structured"),
    # Sums over sequence positions (attention readouts) and their expectations.
    **dict.fromkeys(("Fixed", "Index", "PositionSum", "SEQ_LEN", "SUM_INDEX", "expect_product",
                     "expect_product_explicit", "geometric_sum", "token"), "_positions"),
    # A model's own symbolic results, cached on disk beside its compiled systems.
    **dict.fromkeys(("cached_symbolic",), "_compile"),
    # Verdict rows of ``verify``.
    **dict.fromkeys(("Claim",), "_claims"),
    **dict.fromkeys(("informative", "worst"), "_verify"),
    # Where plug-in models register (``[project.entry-points."reduced_odes.models"]``).
    **dict.fromkeys(("ENTRY_POINT_GROUP",), "_registry"),
}

#: Name -> engine module, for the shared helpers that may change in a minor release.
_PROVISIONAL = {
    # What the test suite checks of a model's committed figures and their data; the
    # tolerances of a model's claims, read from its data file.
    **dict.fromkeys(("CommittedFigures", "load_tolerances"), "_claims"),
    # Running many settings: the resumable sweep, a process pool, progress on stderr.
    **dict.fromkeys(("run_sweep",), "_sweep"),
    **dict.fromkeys(("load_grid",), "_grid"),
    **dict.fromkeys(("process_pool",), "_pool"),
    **dict.fromkeys(("read_results",), "_results_file"),
    **dict.fromkeys(("setting_key",), "_results"),
    **dict.fromkeys(("Progress",), "_progress"),
    **dict.fromkeys(("first_crossing",), "_crossing"),
    **dict.fromkeys(("t_interval",), "_stats"),
    # Result files: JSON documents, trajectories, derivation documents, provenance.
    **dict.fromkeys(("read_json", "trajectory_record", "write_json"), "_results"),
    **dict.fromkeys(("DerivationDocuments", "render_documents", "write_documents"),
                    "_documents"),
    **dict.fromkeys(("versions",), "_provenance"),
    # One Gaussian kernel as numbers (closed form or numerical), for rates summed by index.
    **dict.fromkeys(("KernelFunctions", "gaussian_kernel", "numerical_function"),
                    "_kernel_functions"),
    # The analysis of a flow: fixed points, continuation, scaling laws (for claims).
    **dict.fromkeys(("Flow", "classify", "find_fixed_points", "newton"), "_fixed_points"),
    **dict.fromkeys(("Continuation", "continue_branch"), "_continuation"),
    **dict.fromkeys(("fit_law",), "_scaling"),
    **dict.fromkeys(("plateau_predictions",), "_plateaus"),
    **dict.fromkeys(("PredictionClaims", "prediction_claims"), "_prediction_claims"),
    # The one JSON-safe encoding (rounded to significant digits if asked).
    **dict.fromkeys(("json_safe",), "_io"),
    **dict.fromkeys(("FIGURE_DIGITS",), "_reproduce"),
    # Figures in the house style, with deterministic bytes.
    **dict.fromkeys(("COLUMN_WIDTH", "DataFigures", "FORMATS", "OKABE_ITO", "SERIES", "SHADES",
                     "STYLE", "TIME_LABEL", "as_array", "draw_from_data", "house_style",
                     "log_time_axis", "log_x", "new_figure", "parse_formats", "render",
                     "save_each_format", "save_figure", "sci", "shade_spans", "stamp"),
                    "_figstyle"),
}

#: The names under semantic versioning (see the module docstring).
STABLE = tuple(sorted(_STABLE))
#: The names that may change in a minor release.
PROVISIONAL = tuple(sorted(_PROVISIONAL))
_LAZY = {**_STABLE, **_PROVISIONAL}

if TYPE_CHECKING:  # the names as a type checker sees them (``X as X``: re-exported);
    # at run time each is imported on first use (``__getattr__``)
    from reduced_odes import ACTIVATIONS as ACTIVATIONS
    from reduced_odes import Activation as Activation
    from reduced_odes import Block as Block
    from reduced_odes import Claim as Claim
    from reduced_odes import Continuation as Continuation
    from reduced_odes import CoordinateChange as CoordinateChange
    from reduced_odes import Crossing as Crossing
    from reduced_odes import Derivation as Derivation
    from reduced_odes import DerivationError as DerivationError
    from reduced_odes import Drift as Drift
    from reduced_odes import Fixed as Fixed
    from reduced_odes import Flow as Flow
    from reduced_odes import GaussianExpectation as GaussianExpectation
    from reduced_odes import Identity as Identity
    from reduced_odes import Index as Index
    from reduced_odes import Model as Model
    from reduced_odes import OnlineSGD as OnlineSGD
    from reduced_odes import ParameterError as ParameterError
    from reduced_odes import Parameters as Parameters
    from reduced_odes import PositionSum as PositionSum
    from reduced_odes import PredictionClaims as PredictionClaims
    from reduced_odes import Range as Range
    from reduced_odes import SecondLayerSGD as SecondLayerSGD
    from reduced_odes import SettledRule as SettledRule
    from reduced_odes import StructuredSystem as StructuredSystem
    from reduced_odes import SymmetricSGD as SymmetricSGD
    from reduced_odes import activation as activation
    from reduced_odes import assert_conserved as assert_conserved
    from reduced_odes import assert_same as assert_same
    from reduced_odes import choice as choice
    from reduced_odes import continue_branch as continue_branch
    from reduced_odes import declare_order_parameters as declare_order_parameters
    from reduced_odes import expect_product as expect_product
    from reduced_odes import expect_product_explicit as expect_product_explicit
    from reduced_odes import find_fixed_points as find_fixed_points
    from reduced_odes import fit_law as fit_law
    from reduced_odes import flag as flag
    from reduced_odes import gaussian_expectation as gaussian_expectation
    from reduced_odes import geometric_sum as geometric_sum
    from reduced_odes import gradient_flow as gradient_flow
    from reduced_odes import indexed_online_sgd as indexed_online_sgd
    from reduced_odes import integer as integer
    from reduced_odes import interval as interval
    from reduced_odes import load_grid as load_grid
    from reduced_odes import log_coordinate as log_coordinate
    from reduced_odes import metric_gradient as metric_gradient
    from reduced_odes import mixture_expectation as mixture_expectation
    from reduced_odes import mobility_gradient as mobility_gradient
    from reduced_odes import online_sgd_reduction as online_sgd_reduction
    from reduced_odes import online_sgd_second_layer as online_sgd_second_layer
    from reduced_odes import parameter as parameter
    from reduced_odes import plateau_predictions as plateau_predictions
    from reduced_odes import positive as positive
    from reduced_odes import prediction_claims as prediction_claims
    from reduced_odes import pullback_mobility as pullback_mobility
    from reduced_odes import read_results as read_results
    from reduced_odes import register_activation as register_activation
    from reduced_odes import relu as relu
    from reduced_odes import run_sweep as run_sweep
    from reduced_odes import symmetric_online_sgd as symmetric_online_sgd
    from reduced_odes import token as token
    from reduced_odes import versions as versions
    from reduced_odes._claims import CommittedFigures as CommittedFigures
    from reduced_odes._claims import load_tolerances as load_tolerances
    from reduced_odes._compile import cached_symbolic as cached_symbolic
    from reduced_odes._crossing import first_crossing as first_crossing
    from reduced_odes._documents import DerivationDocuments as DerivationDocuments
    from reduced_odes._documents import render_documents as render_documents
    from reduced_odes._documents import write_documents as write_documents
    from reduced_odes._figstyle import COLUMN_WIDTH as COLUMN_WIDTH
    from reduced_odes._figstyle import FORMATS as FORMATS
    from reduced_odes._figstyle import OKABE_ITO as OKABE_ITO
    from reduced_odes._figstyle import SERIES as SERIES
    from reduced_odes._figstyle import SHADES as SHADES
    from reduced_odes._figstyle import STYLE as STYLE
    from reduced_odes._figstyle import TIME_LABEL as TIME_LABEL
    from reduced_odes._figstyle import DataFigures as DataFigures
    from reduced_odes._figstyle import as_array as as_array
    from reduced_odes._figstyle import draw_from_data as draw_from_data
    from reduced_odes._figstyle import house_style as house_style
    from reduced_odes._figstyle import log_time_axis as log_time_axis
    from reduced_odes._figstyle import log_x as log_x
    from reduced_odes._figstyle import new_figure as new_figure
    from reduced_odes._figstyle import parse_formats as parse_formats
    from reduced_odes._figstyle import render as render
    from reduced_odes._figstyle import save_each_format as save_each_format
    from reduced_odes._figstyle import save_figure as save_figure
    from reduced_odes._figstyle import sci as sci
    from reduced_odes._figstyle import shade_spans as shade_spans
    from reduced_odes._figstyle import stamp as stamp
    from reduced_odes._fixed_points import classify as classify
    from reduced_odes._fixed_points import newton as newton
    from reduced_odes._io import json_safe as json_safe
    from reduced_odes._kernel_functions import KernelFunctions as KernelFunctions
    from reduced_odes._kernel_functions import gaussian_kernel as gaussian_kernel
    from reduced_odes._kernel_functions import numerical_function as numerical_function
    from reduced_odes._pool import process_pool as process_pool
    from reduced_odes._positions import SEQ_LEN as SEQ_LEN
    from reduced_odes._positions import SUM_INDEX as SUM_INDEX
    from reduced_odes._progress import Progress as Progress
    from reduced_odes._registry import ENTRY_POINT_GROUP as ENTRY_POINT_GROUP
    from reduced_odes._reproduce import FIGURE_DIGITS as FIGURE_DIGITS
    from reduced_odes._results import read_json as read_json
    from reduced_odes._results import setting_key as setting_key
    from reduced_odes._results import trajectory_record as trajectory_record
    from reduced_odes._results import write_json as write_json
    from reduced_odes._roles import ROLES as ROLES
    from reduced_odes._roles import roles as roles
    from reduced_odes._stats import t_interval as t_interval
    from reduced_odes._verify import informative as informative
    from reduced_odes._verify import worst as worst


# Not cached, as in reduced_odes: a patched engine attribute is always the one read.
__getattr__, __dir__ = _lazy.lazy_attributes(__name__, _LAZY, globals())


__all__ = sorted([*_LAZY, "PROVISIONAL", "STABLE"])  # noqa: PLE0604
