"""Phase retrieval in high dimension: an escape from a saddle that lasts ln(d)/(2 lambda).

A user's model, outside the package: ``reduced-odes solve --model
examples/phase_retrieval.py:MODEL --json``; ``reduced-odes verify --model
examples/phase_retrieval.py:MODEL`` checks its claim.

The network ``f(x) = (w.x)^2`` learns the target ``(w*.x)^2`` (``|w*| = 1``) from
``x ~ N(0, I_d)`` under ``1/2 E[(f - y)^2]``, by gradient flow on ``w``.  The loss
depends on ``w`` only through the order parameters ``m = w.w*`` and ``r = |w|^2``;
the engine derives the loss from the network, the flow of ``(m, r)`` under the
pull-back mobility of ``w -> (m, r)``, and its Jacobian.  A random start has
``m0 = d^(-1/2)``: the flow sits near the saddle ``m = 0`` (where ``r`` relaxes to
its value ``r*``), from which ``m`` grows like ``m0 e^(lambda t)``, so the time
``T_half`` at which ``m`` reaches ``1/2`` grows like ``ln(d)/(2 lambda)``, with
``lambda`` the unstable eigenvalue of the derived Jacobian at the saddle.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq

from reduced_odes import (
    Claim,
    Crossing,
    Model,
    Parameters,
    SettledRule,
    load_system,
    parameter,
    positive,
    solve,
)


@dataclass(frozen=True)
class RetrievalParams(Parameters):
    """The dimension (through the start ``m0 = d^(-1/2)``) and the start's norm."""

    d: float = parameter(1e4, positive(1e300), "dimension: the start has m0 = d^(-1/2)")
    r0: float = parameter(1.0, positive(10), "initial squared norm |w|^2")


class PhaseRetrieval(Model):
    """``(m, r)`` under gradient flow; phase ``T_half``: ``m`` reaches 1/2."""

    name = "phase_retrieval"
    description = "phase retrieval (w.x)^2 in dimension d, from a random start"
    Params = RetrievalParams
    phase_order = ("T_half",)
    tail = 0.0

    def derive(self, variant):
        import sympy as sp

        from reduced_odes import (
            declare_order_parameters,
            gaussian_expectation,
            gradient_flow,
            pullback_mobility,
        )

        m, r = declare_order_parameters(sp.symbols("m r", real=True))
        # The fields u = w.x, v = w*.x are Gaussian with covariance [[r, m], [m, 1]].
        u, v = sp.symbols("u v", real=True)
        covariance = sp.Matrix([[r, m], [m, 1]])
        loss = gaussian_expectation((u**2 - v**2) ** 2 / 2, [u, v], covariance=covariance)
        mobility = pullback_mobility({m: ("w", "w*"), r: ("w", "w")}, ["w"],
                                     {("w*", "w*"): 1})
        return gradient_flow((m, r), sp.expand(loss.value), parameters=(), mobility=mobility,
                             observables={"loss": sp.expand(loss.value)}, domain=[r > 0])

    def parameter_values(self, params, variant):
        return ()

    def initial_state(self, params, variant):
        return (params.d ** -0.5, params.r0)

    def phases(self, params, variant, initial, thresholds):
        return [Crossing("T_half", "m", 0.5)]

    def settled(self, params, variant):
        # m and r at the solution m = r = 1 to 1e-9.
        return SettledRule("max(abs(m - 1), abs(r - 1)) - 1e-9")

    def horizon(self, params, variant):
        return 2.0 + math.log(params.d) / 4

    # -- verify: the ln(d)/(2 lambda) law ------------------------------------------------
    grids = ("quick", "default")

    def verify_settings(self, grid, variants):
        exponents = (4, 8, 12, 16) if grid == "quick" else (2, 4, 6, 8, 10, 12, 14, 16)
        return [{"d": 10.0**k, "variant": v} for k in exponents for v in variants], []

    def measure(self, setting):
        traj = solve(RetrievalParams(d=setting["d"]), setting["variant"], model=self)
        return {"T_half": traj.phases["T_half"]}

    def claims(self, records, variants):
        """The slope of ``T_half`` in ``ln d`` between the two largest ``d``, against
        ``1/(2 lambda)`` at the saddle (no fit: the eigenvalue comes from the Jacobian)."""
        lam = saddle_rate()
        points = sorted((r["setting"]["d"], r["result"]["T_half"]) for r in records)
        (d1, t1), (d2, t2) = points[-2:]
        slope = (t2 - t1) / math.log(d2 / d1)
        error = abs(slope * 2 * lam - 1)
        # Corrections decay like m0 = d^(-1/2) (the saddle's stable rate, -4, is minus its
        # unstable one): between the two largest d of a grid (>= 1e12) they are below 1e-6.
        return [Claim("dT_half/d ln d = 1/(2 lambda)", 1 / (2 * lam), slope, error, 1e-6,
                      error <= 1e-6, f"lambda = {lam:.12g} at the saddle m = 0, r = r*; "
                                     f"d = {d1:g}, {d2:g}")]


def saddle_rate() -> float:
    """The unstable eigenvalue of the derived Jacobian at the saddle ``m = 0``, ``r = r*``
    (``r*`` where the flow of ``r`` vanishes at ``m = 0``)."""
    system = load_system(MODEL)
    r_star = brentq(lambda r: system.rhs(0.0, [0.0, r])[1], 1e-3, 2.0, xtol=1e-15)
    return float(max(np.linalg.eigvals(np.asarray(system.jac(0.0, [0.0, r_star]))).real))


MODEL = PhaseRetrieval()
