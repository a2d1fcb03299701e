"""The soft committee machine learning a teacher by online SGD (Saad & Solla 1995;
Biehl & Schwarze 1995; Goldt et al. 2019), as a model of the engine.

State: the order parameters ``Q_i_k`` (``i <= k``) and ``R_i_n``, 1-based, so that
``solve(..., initial={"Q_1_1": 0.5, "R_1_1": 0.01, ...})`` starts anywhere.
Observables: ``eps_g``, ``specialisation`` (0 while the students are alike, 1 at
``R = I``) and ``speed`` (the norm of the flow).  Phases: ``T_plateau`` (``eps_g``
within ``entry`` of the plateau), ``T_escape`` (``eps_g`` at ``escape`` times the
plateau), ``T_spec`` (specialisation reaches ``specialised``); the plateau is the
unspecialised fixed point's ``eps_g`` at the same ``eta``, read off the ODE.
"""

from __future__ import annotations

import math

import numpy as np

from reduced_odes import ParameterError
from reduced_odes.author import CommittedFigures, Crossing, Model, SettledRule, roles

from .params import (
    ACTIVATIONS,
    CLOSED_FORM,
    RELU_ETA_UNITS,
    UNROLLED_UNITS,
    CommitteeParams,
    PhaseLevels,
    check_realisable,
    initial_overlaps,
    overlap_state,
)

__all__ = ["MODEL", "CommitteeMachine"]

#: ``|d state/dt|`` below which a run that has escaped the plateau has settled.
SETTLED_SPEED = 1e-10


class CommitteeMachine(Model):
    """``K`` students, ``M`` teachers, online SGD in the limit ``N -> infinity``.

    Examples
    --------
    >>> MODEL.variants, MODEL.variant_option, MODEL.structural
    (('erf', 'relu', 'linear', 'tanh', 'sigmoid', 'gelu', 'softplus', 'silu'), 'activation', \
('K', 'M'))
    >>> MODEL.structure(CommitteeParams(K=20, M=10))
    {'K': 20, 'M': 10, 'finite_eta': False, 'indexed': True}
    """

    name = "committee_machine"
    description = ("soft committee machine learning a teacher by online SGD "
                   "(Saad & Solla 1995; Goldt et al. 2019)")
    Params = CommitteeParams
    Thresholds = PhaseLevels
    variants = ACTIVATIONS
    #: ``verify`` checks the closed-form activations (a numerical one's first native
    #: compile alone would exceed the main job's budget).
    verified_variants = CLOSED_FORM
    variant_option = "activation"
    structural = ("K", "M")
    phase_order = ("T_plateau", "T_escape")
    nonnegative = ("eps_g",)
    #: Stop once settled: the learning curve has no late-time law to resolve, and ReLU's
    #: solution lies on the boundary of the realisable overlaps (R_ii = Q_ii = 1), which
    #: an integrator at rtol 1e-10 cannot approach much closer than the stop rule does.
    tail = 0.0

    def structure(self, params: CommitteeParams) -> dict:
        """``K``, ``M``, whether the learning-rate term is needed (``eta > 0``), and, beyond
        ``UNROLLED_UNITS``, that the rates are unit sums (``indexed``)."""
        structure = {**super().structure(params), "finite_eta": params.eta > 0}
        if params.second_layer:
            structure["second_layer"] = True
        elif max(params.K, params.M) > UNROLLED_UNITS:
            structure["indexed"] = True
        return structure

    def check(self, params: CommitteeParams, variant: str) -> None:
        if params.second_layer and max(params.K, params.M) > UNROLLED_UNITS:
            raise ParameterError(f"K={params.K}, M={params.M} with second_layer: the trained "
                                 f"read-out is derived unrolled, per (K, M); allowed: K, M <= "
                                 f"{UNROLLED_UNITS}")
        if variant == "relu" and params.eta > 0 and params.K + params.M > RELU_ETA_UNITS:
            raise ParameterError(f"eta={params.eta!r} with activation 'relu' and K={params.K}, "
                                 f"M={params.M}: the learning-rate term's orthant kernels make "
                                 f"a solve take minutes to hours beyond; allowed: eta = 0 (the "
                                 f"limit eta -> 0), or K + M <= {RELU_ETA_UNITS}")
        if variant not in CLOSED_FORM and params.eta > 0 and params.K + params.M > 3:
            raise ParameterError(f"eta={params.eta!r} with activation {variant!r} and "
                                 f"K={params.K}, M={params.M}: the learning-rate term needs "
                                 f"four-dimensional numerical kernels (~10^7 evaluations each, "
                                 f"per step); allowed: eta = 0 (the limit eta -> 0), or "
                                 f"K + M <= 3")
        if not params.second_layer:  # its phases are read against no plateau
            _check_plateau(params, variant)

    def check_start(self, params: CommitteeParams, variant: str, start) -> None:
        """A given start must be overlaps that a network realises (``Q - R R^T`` PSD)."""
        check_realisable(dict(start), params.K, params.M)

    def parameter_values(self, params: CommitteeParams, variant: str) -> tuple[float, ...]:
        values = (float(params.eta), float(params.noise))
        if params.second_layer:
            values += (float(params.v_rate), float(params.v_star))
        return values

    def initial_state(self, params: CommitteeParams, variant: str) -> list[float]:
        readout = [float(params.v0)] * params.K if params.second_layer else []
        return [*overlap_state(*initial_overlaps(params)).values(), *readout]

    def phases(self, params, variant, initial, thresholds) -> list[Crossing]:
        from .numerics import unspecialised_fixed_point

        if params.second_layer:
            # The plateau of the committee machine's symmetric flow is not this flow's: the
            # specialisation alone is read.
            return ([Crossing("T_spec", "specialisation",
                              (thresholds or PhaseLevels()).specialised)]
                    if params.M > 1 else [])
        if params.K == params.M == 1:
            # One student, one teacher: the unspecialised point (the students alike) is every
            # state, and its fixed point the learnt one (the teacher itself at eps_g = 0 when
            # noise or eta vanish): there is no plateau to read phases against.
            return []
        levels = thresholds or PhaseLevels()
        plateau = unspecialised_fixed_point(params, variant).eps_g
        crossings = [Crossing("T_plateau", "eps_g", (1 + levels.entry) * plateau, -1),
                     Crossing("T_escape", "eps_g", levels.escape * plateau, -1)]
        if params.M > 1:
            crossings.append(Crossing("T_spec", "specialisation", levels.specialised))
        return crossings

    def settled(self, params: CommitteeParams, variant: str) -> SettledRule:
        """Settled once the flow is still (``speed``) after the escape: on the plateau the
        flow can be as slow, so a run that has not escaped has not settled."""
        from .numerics import unspecialised_fixed_point

        if params.second_layer:
            return SettledRule("speed - tol", {"tol": SETTLED_SPEED})
        # A student narrower than its teacher (K < M; or M = 1, nothing to specialise to)
        # need not fall below half the plateau: its run settles on stillness alone.
        escaped = (0.5 * unspecialised_fixed_point(params, variant).eps_g
                   if 1 < params.M <= params.K else math.inf)
        return SettledRule("max(speed - tol, eps_g - escaped)",
                           {"tol": SETTLED_SPEED, "escaped": escaped})

    def horizon(self, params: CommitteeParams, variant: str) -> float:
        # The escape takes about ln(1/asymmetry)/lambda with lambda = O(0.1).
        return 50.0 * (1.0 + math.log(1.0 / params.asymmetry))

    # -- the commands beyond solve: functions of this package ---------------------------
    grids = ("quick", "default", "full")
    hooks = roles("derivation", "claims", "export", "figures", "compare")
    #: The figure data keep FIGURE_DIGITS (4) digits and write values within FLOOR (1e-9) of
    #: zero as 0 (figures/data.py); eta.json and noise.json derive the learning-rate term
    #: (~10 s and ~25 s from a cold cache).
    committed_figures = CommittedFigures(digits=4, floor=1e-9,
                                         data=("plateau.json", "escape.json"),
                                         slow_data=("eta.json", "noise.json"))


def _check_plateau(params: CommitteeParams, variant: str) -> None:
    """ParameterError unless the plateau the phases are read against exists at ``params``:
    at a large ``eta`` the flow on the symmetric subspace diverges instead of settling on it.
    (Cached: the run reads the same point.)"""
    from .numerics import unspecialised_fixed_point

    try:
        point = unspecialised_fixed_point(params, variant)
        plateau, why = point.eps_g, "its eps_g diverges"
        if math.isfinite(plateau) and not point.attracts_in_subspace:
            growth = float(np.max(point.subspace.real))
            plateau, why = math.nan, (f"the symmetric flow leaves it, at the rate {growth:.3g}; "
                                      f"linear: K^2 eta - 2K, from eta = 2/K = {2 / params.K:.6g}")
    except (ValueError, ArithmeticError):  # LinAlgError is a ValueError
        plateau, why = math.nan, "the flow to it leaves the domain of the overlaps"
    if not math.isfinite(plateau):
        raise ParameterError(f"eta={params.eta!r} with activation {variant!r}, K={params.K}, "
                             f"M={params.M}, noise={params.noise!r}: the unspecialised plateau, "
                             f"which the phases are read against, cannot be found ({why}); "
                             f"allowed: settings whose symmetric flow settles on it (a smaller "
                             f"eta; with ReLU, M >= 2, whose plateau is off the kernel's "
                             f"boundary)")


MODEL = CommitteeMachine()
