"""The two-mixture classification model (a reconstruction of Yang, Wang, Lee & Liang, ICLR 2025).

A symmetric two-headed transformer with ReLU neurons learns a two-mixture of
linear classification with a hidden correspondence between words: the
identifier ``c_k`` names the mixture ``k`` and the label is the sign of
mixture ``k``'s signal token.  In the mean-field limit, on the manifold of
mirror heads and sign-paired neurons, gradient flow reduces exactly to five
scalars ``(zeta, N, M, q, k)``; training passes through three stages (neurons
align, attention learns the correspondence, convergence), marked by the
phases ``T1`` (A >= 1/2), ``T2`` (theta >= 1/2) and ``T3`` (loss <= 0.005).

The loss (``square`` or ``logistic``) is the model's variant; every other
convention is a parameter (:class:`TwoMixtureParams`).

Modules: ``params``; ``unreduced`` and ``reduction`` (the network and its
mean-field reduction, by SymPy) and ``derivation`` (the engine's flow);
``numerics`` (floats of the reduced model) and ``closed_forms`` (the section-6
predictions); ``claims`` (``verify``); ``algorithm1`` (layer-wise training);
``simulator``, ``training`` and ``ground_truth`` (the finite-width network,
``compare``); ``export`` and ``figures``; ``model`` (the
:class:`~reduced_odes.author.Model`).
"""

from .model import MODEL, TwoMixture
from .params import TwoMixtureParams

__all__ = ["MODEL", "TwoMixture", "TwoMixtureParams"]
