"""The two-stage feature model: syntax first, then semantics (a reconstruction of Gong et al.).

One normalised ReLU attention layer ``ŷ = (v/N) Σ_i y_i ReLU(x_iᵀ W_Kᵀ W_Q x_q)``
reads in-context prompts whose tokens are either syntactic (P: a label times a
per-prompt direction, linearly separable) or semantic (Q: the parity of two
signs in a per-prompt plane, not linearly separable).  Gradient flow from
``W_K = W_Q = σ I`` learns P first, then Q after a plateau, and keeps P while
it learns Q; the eigenvalues of ``W = W_Kᵀ W_Q`` separate and cross.

This is a labelled reconstruction, not the paper's model: the paper's
parametrisation, loss and constants could not be recovered.  Every choice is a
parameter (:class:`TwoStageParams`) or the variant (``activation``).
"""

from __future__ import annotations

from .model import MODEL, TwoStageFeatures
from .params import TwoStageParams, TwoStageThresholds

__all__ = ["MODEL", "TwoStageFeatures", "TwoStageParams", "TwoStageThresholds"]
