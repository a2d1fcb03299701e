"""The induction-head model of Wang, Yu, E & Wu (arXiv 2410.11474), section 5.

A two-layer attention-only transformer learns a 4-gram plus an in-context
2-gram.  Training goes through four phases: the 4-gram is learned (T_I), a
long plateau, the abrupt emergence of the induction head (T_II, T_em,
T_III), convergence.  The softmax normaliser has no closed-form expectation,
so two closures (the model's variants) are derived: ``linear`` (the
paper's) and ``meanfield``.

Modules: ``declaration`` (the heads as data), ``losses`` and ``derivation``
(the flow), ``special`` and ``kernels`` (the stable attention functions),
``numerics`` and ``claims`` (Theorem 5.5), ``sgd``, ``attention``,
``population`` and ``ground_truth`` (exact-softmax ground truth), ``export`` and
``figures``.
"""

from .model import MODEL, InductionHead
from .params import CLOSURE_WSTAR_LIMITS, ModelParams, PhaseThresholds

__all__ = ["CLOSURE_WSTAR_LIMITS", "MODEL", "InductionHead", "ModelParams", "PhaseThresholds",
           "derive_flow", "derive_losses", "derive_predictions", "derive_stage1_flow",
           "derive_stage1_loss"]

#: The symbolic half, imported on first use (warm starts never import SymPy).
_LAZY = {"derive_flow": "derivation", "derive_stage1_flow": "derivation",
         "derive_losses": "losses", "derive_stage1_loss": "losses",
         "derive_predictions": "numerics"}


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f".{_LAZY[name]}", __name__), name)
