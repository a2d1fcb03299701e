"""The engine's :class:`~reduced_odes.Derivation` of the reduced two-mixture flow.

The reduction (:mod:`.reduction`) gives the reduced loss, its mobility and the
flow; here the flow is handed to :func:`~reduced_odes.gradient_flow` (which
asserts it is the metric gradient of the loss), with integration coordinates
that stay exact for tiny initial scales: ``zeta / sigma^2`` (``zeta`` starts
at ``sigma^2`` or 0) and the logarithms of ``N, M, q, k`` (all positive).
"""

from __future__ import annotations

from functools import cache

import sympy as sp

from reduced_odes.author import (
    CoordinateChange,
    Derivation,
    DerivationError,
    assert_same,
    gradient_flow,
    log_coordinate,
)

from .reduction import reduce_model

__all__ = ["derivation"]


@cache
def derivation(loss: str) -> Derivation:
    """The reduced flow of ``loss`` in integration coordinates, with its observables.

    Examples
    --------
    >>> d = derivation("square")  # doctest: +SKIP
    >>> d.coordinate_names  # doctest: +SKIP
    ('zeta_scaled', 'log_N', 'log_M', 'log_q', 'log_k')
    """
    r = reduce_model(loss)
    zeta, N, M, q, k = r.state  # N, M, q, k > 0: their log coordinates keep them so
    sigma = sp.Symbol("sigma", positive=True)
    scaled = sp.Symbol("zeta_scaled", real=True)
    coordinates = (CoordinateChange(zeta, scaled, zeta / sigma**2, sigma**2 * scaled,
                                    "zeta_scaled"),
                   *(log_coordinate(v) for v in (N, M, q, k)))
    observables = {"loss": r.in_state(r.loss_Al), "loss_consistent": r.in_state(r.consistent_Al),
                   "loss_hard": r.in_state(r.hard_Al), "A": r.A_of_state,
                   "ell": r.ell_of_state, "theta": r.in_state(r.theta)}
    flow = gradient_flow(r.state, r.in_state(r.loss_Al),
                         parameters=(r.mu, r.kappa, sigma, r.gate_neurons, r.gate_attention),
                         metric=r.mobility.inv(), coordinates=coordinates,
                         observables=observables, identities=r.identities)
    # The metric gradient must be the flow whose tangency to the network was asserted.
    for i, variable in enumerate(r.state):
        try:
            assert_same(flow.rhs[i], r.rhs[i], symbolic=False)
        except AssertionError as exc:
            raise DerivationError(f"flow of {variable} is the reduced network flow",
                                  str(exc)) from None
    return flow
