"""Theorem 5.5's phases as sharp leading-order predictions, derived from the flow.

Every prediction is a SymPy expression in (alpha, w_star, L, sigma) obtained
by linearisation or asymptotics of the derived flow (spec section 6):

* phase I: the linearised (w_v1, p) flow at the initial point, its growth
  rate and escape time, and ``T_I ~ 1/(4 theta L_G4(0))`` from the tail;
* phase II: the lazy plateau of w_v2, the plateau level of L_IH and the
  exponential rate ``lambda`` of w_kq;
* phase III: ``T_em ~ ln(w*/(2 w_kq(0)))/lambda``, its slope ``2/lambda``
  in ``ln(1/sigma)``, and the O(L) emergence window from the L -> oo limit;
* phase IV: ``t L_G4 -> 1/4`` from the slow manifold in ``u = e^{-p}``, and
  the L_IH decay rate ``2 mu`` from the Jacobian at ``(1 - alpha, w*)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cache

import sympy as sp

from reduced_odes.author import SEQ_LEN

from .declaration import ALPHA, W_KQ, W_V1, W_V2, WSTAR, P
from .derivation import LOG_STATE, derive_flow

__all__ = ["SIGMA", "Predictions", "derive_predictions"]

SIGMA = sp.Symbol("sigma", positive=True)
#: Phase-time thresholds as symbols (defaults in PhaseThresholds).
THETA_I, THETA_EM = sp.symbols("theta_I theta_em", positive=True)
_U, _T = sp.symbols("u t", positive=True)


@dataclass(frozen=True)
class Predictions:
    """Derived predictions of one closure; ``expressions`` maps names to SymPy expressions.

    Names: ``growth_rate_I``, ``growth_rate_I_large_L``, ``escape_time_I``,
    ``T_I_leading``, ``T_I_corrected``, ``plateau_w_v2``, ``plateau_L_IH``,
    ``lambda``, ``T_em_leading``, ``T_em_slope``, ``window_rate_large_L``,
    ``tail_u_rate``, ``tail_t_L_G4``, ``mu``, ``L_IH_decay_rate``.
    """

    closure: str
    expressions: dict[str, sp.Expr]
    fixed_point_jacobian: sp.Matrix
    window_limit_system: tuple[sp.Expr, sp.Expr]
    _numeric: dict = field(default_factory=dict, repr=False, compare=False)

    def evaluate(self, alpha: float, wstar: float, L: float, sigma: float,
                 theta_i: float = 0.01, theta_em: float = 0.5) -> dict[str, float]:
        """All predictions as floats at one parameter setting.

        Examples
        --------
        >>> pred = derive_predictions("linear")
        >>> round(pred.evaluate(0.5, 0.3, 200, 1e-4)["T_I_leading"], 6)
        200.0
        """
        if not self._numeric:
            args = (ALPHA, WSTAR, SEQ_LEN, SIGMA, THETA_I, THETA_EM)
            for name, expr in self.expressions.items():
                if expr.free_symbols <= set(args):  # e.g. tail_u_rate is a function of u
                    self._numeric[name] = sp.lambdify(args, expr, modules="math")
        values = (alpha, wstar, float(L), sigma, theta_i, theta_em)
        out = {name: float(f(*values)) for name, f in self._numeric.items()}
        out["window_over_L_large_L"] = self.window_over_l(alpha, wstar)
        return out

    def window_over_l(self, alpha: float, wstar: float) -> float:
        """``(T_III - T_II)/L`` as L -> oo: the rescaled limit system integrated numerically."""
        return _window_over_l(self.closure, alpha, wstar)


def _phase_one(flow, losses):
    """Linearised (w_v1, p) flow at (sigma, 0): growth rate, escape time, T_I."""
    rhs = flow.reduced_rhs[:2, 0]
    jac = rhs.jacobian([W_V1, P])
    at_start = {W_V1: SIGMA, P: 0}
    jac0 = sp.simplify(jac.subs(at_start))
    growth = sp.simplify(max(jac0.eigenvals(), key=lambda e: e.subs(
        {ALPHA: 0.5, SEQ_LEN: 200, SIGMA: 1e-4})))
    # Affine linearisation about w_v1 = p = 0: x' = J x + f; the unstable mode starts at
    # amplitude v.(x0 + J^{-1} f) and the escape ends when it reaches O(1).
    j00 = sp.simplify(jac.subs({W_V1: 0, P: 0}))
    f = sp.simplify(rhs.subs({W_V1: 0, P: 0}))
    rate0 = max(j00.eigenvals(), key=lambda e: e.subs({ALPHA: 0.5, SEQ_LEN: 200}))
    vector = (j00 - rate0 * sp.eye(2)).nullspace()[0]
    vector = vector / sp.sqrt(vector.dot(vector))
    amplitude = sp.simplify(vector.dot(sp.Matrix([SIGMA, 0]) + j00.inv() * f))
    escape = sp.log(1 / sp.Abs(amplitude)) / rate0
    g4_initial = losses.four_gram.subs(at_start)
    t_i = 1 / (4 * THETA_I * sp.limit(g4_initial, SIGMA, 0))
    return {
        "growth_rate_I": growth,
        "growth_rate_I_large_L": sp.limit(sp.limit(growth, SIGMA, 0), SEQ_LEN, sp.oo),
        "escape_time_I": escape,
        "T_I_leading": t_i,
        "T_I_corrected": t_i + escape,
    }


def _plateau(flow, losses):
    """Lazy plateau of w_v2, plateau loss and the exponential rate of w_kq."""
    at_zero = losses.induction.subs(W_KQ, 0)
    (w_v2_lazy,) = sp.solve(sp.diff(at_zero, W_V2), W_V2)
    w_v2_lazy = sp.simplify(w_v2_lazy)
    # w_kq -> 0 is ell -> -oo in the integration coordinates.
    rate = flow.log_rhs[3].subs(LOG_STATE[3], -sp.oo).subs(W_V2, w_v2_lazy)
    rate = sp.factor(sp.simplify(rate))
    t_em = sp.log(THETA_EM * WSTAR / SIGMA**2) / rate
    log_inverse_sigma = sp.Symbol("s", positive=True)
    slope = sp.simplify(sp.diff(t_em.subs(SIGMA, sp.exp(-log_inverse_sigma)), log_inverse_sigma))
    return {
        "plateau_w_v2": w_v2_lazy,
        "plateau_L_IH": sp.simplify(at_zero.subs(W_V2, w_v2_lazy)),
        "lambda": rate,
        "T_em_leading": t_em,
        "T_em_slope": slope,
        "window_rate_large_L": sp.limit(SEQ_LEN * rate, SEQ_LEN, sp.oo),
    }



def _tail(losses):
    """Slow manifold of (w_v1, p) for large p, in u = e^{-p}: du/dt and lim t L_G4."""
    # At fixed p > 0 the L -> oo limit only drops terms e^{-(L-k)p}: beyond any fixed order in u.
    slope = sp.Symbol("p", positive=True)
    loss = losses.four_gram.rewrite(sp.exp).subs(P, slope)
    loss = sp.limit(loss, SEQ_LEN, sp.oo).subs(slope, -sp.log(_U))
    (w_slow,) = sp.solve(sp.diff(loss, W_V1), W_V1)
    manifold_loss = sp.series(sp.simplify(loss.subs(W_V1, w_slow)), _U, 0, 3).removeO()
    # dp/dt = -dL/dp and dp = -du/u give du/dt = -u^2 dL/du.
    u_rate = sp.expand(-_U**2 * sp.diff(manifold_loss, _U))
    u_of_t = sp.Function("u")
    solution = sp.dsolve(sp.Eq(u_of_t(_T).diff(_T), u_rate.subs(_U, u_of_t(_T))), u_of_t(_T))
    branches = solution if isinstance(solution, list) else [solution]
    positive = [b.rhs for b in branches if b.rhs.subs({_T: 1, ALPHA: 0.5, "C1": 0}).is_positive]
    tail = sp.limit(_T * manifold_loss.subs(_U, positive[0]), _T, sp.oo)
    return {"tail_u_rate": u_rate, "tail_t_L_G4": sp.simplify(tail)}


def _convergence(flow):
    """mu: the eigenvalue of the (w_v2, w_kq) linearisation at (1-alpha, w*) nearest 0."""
    sub = flow.reduced_rhs[2:, 0]
    jac = sub.jacobian([W_V2, W_KQ]).subs({W_V2: 1 - ALPHA, W_KQ: WSTAR}).applyfunc(sp.factor)
    trace, det = sp.factor(jac.trace()), sp.factor(jac.det())
    # Both eigenvalues are negative (checked numerically in evaluate's callers);
    # the one nearest zero is (tr + sqrt(tr^2 - 4 det))/2.
    mu = -(trace + sp.sqrt(sp.factor(trace**2 - 4 * det))) / 2
    return jac, {"mu": mu, "L_IH_decay_rate": 2 * mu}


def _derive(closure: str) -> Predictions:
    """Derive every prediction of spec section 6 for ``closure``."""
    flow = derive_flow(closure)
    losses = flow.losses
    expressions = {**_phase_one(flow, losses), **_plateau(flow, losses), **_tail(losses)}
    jac, convergence = _convergence(flow)
    expressions.update(convergence)
    limit_system = tuple(sp.limit(SEQ_LEN * e, SEQ_LEN, sp.oo) for e in flow.reduced_rhs[2:])
    return Predictions(closure, expressions, jac, limit_system)


@cache
def derive_predictions(closure: str) -> Predictions:
    """Derive every prediction of spec section 6 for ``closure`` (cached on disk).

    The derivation takes seconds; its result is stored beside the compiled
    flow (see :mod:`reduced_odes._compile`) under a key that changes with the
    package, SymPy and the symbolic sources.

    Examples
    --------
    >>> pred = derive_predictions("meanfield")
    >>> pred.expressions["lambda"]
    2*w_star*(alpha - 1)**2/(L - 2)
    """
    from reduced_odes.author import cached_symbolic

    def derive() -> dict:
        pred = _derive(closure)
        return {**{f"expression {k}": v for k, v in pred.expressions.items()},
                "fixed_point_jacobian": pred.fixed_point_jacobian,
                "window_limit_system": sp.Tuple(*pred.window_limit_system)}

    stored = cached_symbolic("induction_head", closure, "predictions", derive)
    return Predictions(
        closure,
        {k.removeprefix("expression "): v for k, v in stored.items()
         if k.startswith("expression ")},
        sp.Matrix(stored["fixed_point_jacobian"]), tuple(stored["window_limit_system"]))


@cache
def _window_log_rate(closure: str) -> sp.Expr:
    """The L -> oo limit of d(log w_kq)/dtau, simplified once per closure (seconds of
    SymPy, the same for every (alpha, w*) of a grid)."""
    return sp.simplify(derive_predictions(closure).window_limit_system[1] / W_KQ)


@cache
def _window_over_l(closure: str, alpha: float, wstar: float) -> float:
    """Integrate the L -> oo limit of the (w_v2, w_kq) flow in tau = t / L."""
    from scipy.integrate import solve_ivp

    pred = derive_predictions(closure)
    params = {ALPHA: alpha, WSTAR: wstar}
    rates = sp.lambdify([W_V2, LOG_STATE[3]],
                        [pred.window_limit_system[0].subs(params).subs(W_KQ, sp.exp(LOG_STATE[3])),
                         _window_log_rate(closure).subs(params)
                         .subs(W_KQ, sp.exp(LOG_STATE[3]))], modules="math")
    w_v2 = float(pred.expressions["plateau_w_v2"].subs(params))

    def crossing(fraction):
        def event(tau, y):
            return y[1] - math.log(fraction * wstar)
        event.terminal = fraction == 0.9
        return event

    # Start far below the window (w_kq = 1e-12 w*) so the start does not matter.
    sol = solve_ivp(lambda tau, y: rates(*y), (0, 1e6), [w_v2, math.log(1e-12 * wstar)],
                    method="Radau", rtol=1e-10, atol=1e-12,
                    events=[crossing(0.1), crossing(0.9)])
    return float(sol.t_events[1][0] - sol.t_events[0][0])
