"""The symbolic derivation: loss by enumeration, reduction, metric, flow, conservation laws.

Everything here is derived by SymPy from the declaration of the data and the
model (``mixture``); nothing is typed in.  SymPy is imported by this module
only, and this module only when a derivation is asked for.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cache

import sympy as sp

from reduced_odes.author import (
    Derivation,
    DerivationError,
    Identity,
    assert_conserved,
    assert_same,
    gradient_flow,
    log_coordinate,
    mixture_expectation,
    relu,
)

from .mixture import block_losses

__all__ = ["Reduction", "SYMBOLS", "derivation", "reduction", "pullback_metric"]


class _Symbols:
    """The symbols of the model, created once so that every derivation shares them."""

    def __init__(self):
        positive = {"positive": True}
        self.v, self.k_P, self.q_P, self.k_Q, self.q_Q = sp.symbols("v k_P q_P k_Q q_Q", **positive)
        self.gamma, self.mu, self.pi_P = sp.symbols("gamma mu pi_P", **positive)
        self.N, self.d_P, self.d_Q = sp.symbols("N d_P d_Q", positive=True, integer=True)
        # Mobility of the value weight: 1 trains it, 0 freezes it (its metric weight is 1/tau).
        self.tau = sp.Symbol("tau", nonnegative=True)
        self.a, self.b, self.A, self.B = sp.symbols("a b A B", **positive)
        self.w = sp.Symbol("w", positive=True)

    @property
    def state(self) -> tuple[sp.Symbol, ...]:
        return (self.v, self.k_P, self.q_P, self.k_Q, self.q_Q)

    @property
    def parameters(self) -> tuple[sp.Symbol, ...]:
        return (self.gamma, self.mu, self.pi_P, self.N, self.d_P, self.d_Q, self.tau)


SYMBOLS = _Symbols()
_ACTIVATION = {"relu": relu, "linear": lambda s: s}


@dataclass(frozen=True)
class Reduction:
    """The derived pieces of one variant, in the reduced state and in ``(A, B)``.

    ``blocks[X]`` is ``L_X`` in the state; ``in_product[X]`` is it in ``A``
    (``X = P``) or ``B``; ``rho``, ``s`` and ``optimum`` are the coefficients of
    ``L_X = (π_X/2)(1 - 2 ρ_X A + s_X A²)`` and its minimiser.
    """

    variant: str
    blocks: dict[str, sp.Expr]
    in_product: dict[str, sp.Expr]
    rho: dict[str, sp.Expr]
    s: dict[str, sp.Expr]
    optimum: dict[str, sp.Expr]
    metric: sp.Matrix
    frobenius: sp.Matrix
    rhs: sp.Matrix
    balanced: dict[str, sp.Expr]
    identities: tuple[Identity, ...] = field(default=())

    @property
    def loss(self) -> sp.Expr:
        return self.blocks["P"] + self.blocks["Q"]


def _loss_blocks(variant: str, weights: tuple) -> dict[str, sp.Expr]:
    """``{"P": L_P, "Q": L_Q}`` by enumerating the finite mixture of token kinds."""
    S = SYMBOLS
    blocks = block_losses((S.v, *weights), S.pi_P, S.gamma, S.mu, S.N, _ACTIVATION[variant],
                          sqrt=sp.sqrt, expectation=mixture_expectation)
    return {k: sp.expand(e) for k, e in blocks.items()}


def pullback_metric(embedding: list[tuple[sp.Expr, sp.Expr]],
                    state: tuple[sp.Symbol, ...]) -> sp.Matrix:
    """The Frobenius metric pulled back to ``state`` through ``Θ = ⊕ e_j I_{n_j}``.

    ``embedding`` lists the scalar blocks ``(e_j, n_j)`` of all weight matrices;
    ``G_ik = Σ_j n_j ∂_i e_j ∂_k e_j`` since ``‖I_n‖_F² = tr I_n = n``.

    Examples
    --------
    >>> x, y, n = sp.symbols("x y n", positive=True)
    >>> pullback_metric([(x, 1), (y, n)], (x, y))
    Matrix([
    [1, 0],
    [0, n]])
    """
    size = len(state)
    return sp.Matrix(size, size, lambda i, k: sum(
        (n * sp.diff(e, state[i]) * sp.diff(e, state[k]) for e, n in embedding), sp.Integer(0)))


def _in_product(block: sp.Expr, weight: sp.Symbol, partner: sp.Symbol, scale: sp.Expr,
                product: sp.Symbol) -> sp.Expr:
    """``block`` written in ``product = v scale weight partner``; raises unless it depends
    on it only."""
    S = SYMBOLS
    written = sp.expand(block.subs(weight, product / (S.v * scale * partner)))
    stray = written.free_symbols & {S.v, S.k_P, S.q_P, S.k_Q, S.q_Q}
    if stray:
        raise DerivationError("loss in (A, B)",
                              f"{block} still depends on {sorted(map(str, stray))}")
    return written


def _quadratic(expr: sp.Expr, x: sp.Symbol, weight: sp.Expr) -> tuple[sp.Expr, sp.Expr, sp.Expr]:
    """``(rho, s, x*)`` of ``expr = (weight/2)(1 - 2 rho x + s x²)``, asserted quadratic."""
    if sp.simplify(sp.diff(expr, x, 3)) != 0:
        raise DerivationError("block loss is quadratic", f"{expr} is not quadratic in {x}")
    if sp.simplify(expr.subs(x, 0) - weight / 2) != 0:
        raise DerivationError("block loss at zero attention", f"{expr.subs(x, 0)} != {weight / 2}")
    rho = sp.factor(-sp.diff(expr, x).subs(x, 0) / weight)
    s = sp.factor(sp.diff(expr, x, 2) / weight)
    return rho, s, sp.factor(rho / s) if rho != 0 else sp.Integer(0)


def _sign_identities(variant: str, blocks: dict[str, sp.Expr]) -> list[Identity]:
    """Parity in ``b`` (``L`` depends on ``|b|``), and no such symmetry in ``a``."""
    S = SYMBOLS
    flipped = _loss_blocks(variant, (S.k_P, S.q_P, -S.k_Q, S.q_Q))
    assert_same(flipped["Q"], blocks["Q"])
    flipped_P = _loss_blocks(variant, (-S.k_P, S.q_P, S.k_Q, S.q_Q))
    gap = sp.factor(flipped_P["P"] - blocks["P"])
    if variant == "relu" and not gap.is_positive:
        raise DerivationError("sign of a", f"L_P(-a) - L_P(a) = {gap} is not positive")
    return [Identity("L_Q(-b) = L_Q(b)  (parity: the ReLU keeps the antipodal keys)",
                     flipped["Q"], blocks["Q"]),
            Identity("L_P(-a) - L_P(a)", gap, gap)]


def _reduction_identities(loss: sp.Expr, rhs: sp.Matrix) -> list[Identity]:
    """Conservation laws and the homogeneity ``v ∂_v L = a ∂_a L + b ∂_b L`` behind the last one."""
    S = SYMBOLS
    found = [assert_conserved("k_P^2 - q_P^2", S.k_P**2 - S.q_P**2, S.state, rhs),
             assert_conserved("k_Q^2 - q_Q^2", S.k_Q**2 - S.q_Q**2, S.state, rhs)]
    homogeneity = (S.v * sp.diff(loss, S.v) - S.k_P * sp.diff(loss, S.k_P)
                   - S.k_Q * sp.diff(loss, S.k_Q))
    assert_same(homogeneity, 0)
    found.append(Identity("v dL/dv = a dL/da + b dL/db", homogeneity, sp.Integer(0)))
    value_law = S.v**2 - (S.d_P * (S.k_P**2 + S.q_P**2) + S.d_Q * (S.k_Q**2 + S.q_Q**2)) / 2
    found.append(assert_conserved("v^2 - [d_P(k_P^2+q_P^2) + d_Q(k_Q^2+q_Q^2)]/2 (trained value)",
                                  value_law, S.state, rhs.subs(S.tau, 1)))
    return found


def _balanced(rhs: sp.Matrix, rho: dict, s: dict, optimum: dict) -> tuple[dict, list[Identity]]:
    """The flow of ``(v, a, b)`` from ``k = q``, asserted in the form ``rate · a · (A* - A)``."""
    S = SYMBOLS
    on = {S.k_P: sp.sqrt(S.a), S.q_P: sp.sqrt(S.a), S.k_Q: sp.sqrt(S.b), S.q_Q: sp.sqrt(S.b)}
    A, B = S.v * S.gamma**2 * S.a, S.v * S.mu**2 * S.b
    flows = {
        "a": sp.simplify((rhs[1] * S.q_P + S.k_P * rhs[2]).subs(on)),
        "b": sp.simplify((rhs[3] * S.q_Q + S.k_Q * rhs[4]).subs(on)),
        "v": sp.simplify(rhs[0].subs(on) / S.tau),
    }
    forms = {
        "a": 2 * S.pi_P * s["P"] * S.gamma**2 * S.v * S.a / S.d_P * (optimum["P"] - A),
        "b": 2 * (1 - S.pi_P) * s["Q"] * S.mu**2 * S.v * S.b / S.d_Q * (optimum["Q"] - B),
        "v": (S.pi_P * s["P"] * S.gamma**2 * S.a * (optimum["P"] - A)
              + (1 - S.pi_P) * s["Q"] * S.mu**2 * S.b * (optimum["Q"] - B)),
    }
    identities = []
    for name in ("a", "b", "v"):
        try:
            assert_same(flows[name], forms[name])
        except AssertionError as exc:
            raise DerivationError(f"balanced form of d{name}/dt", str(exc)) from None
        lhs = sp.Derivative(sp.Function(name)(sp.Symbol("t")), sp.Symbol("t"))
        identities.append(Identity(f"balanced flow d{name}/dt" + (" / tau" if name == "v" else ""),
                                   lhs, forms[name]))
    return forms, identities


@cache
def reduction(variant: str = "relu") -> Reduction:
    """Derive the reduced loss, metric and flow of ``variant`` (``"relu"`` or ``"linear"``).

    Examples
    --------
    >>> r = reduction("relu")
    >>> r.rho["P"], r.optimum["P"]
    (pi_P/2, 2*N/(N*pi_P - pi_P + 2))
    """
    S = SYMBOLS
    if variant not in _ACTIVATION:
        raise DerivationError("variant", f"{variant!r} is not one of {', '.join(_ACTIVATION)}")
    blocks = _loss_blocks(variant, (S.k_P, S.q_P, S.k_Q, S.q_Q))
    in_product = {"P": _in_product(blocks["P"], S.k_P, S.q_P, S.gamma**2, S.A),
                  "Q": _in_product(blocks["Q"], S.k_Q, S.q_Q, S.mu**2, S.B)}
    rho, s, optimum = {}, {}, {}
    for name, x, weight in (("P", S.A, S.pi_P), ("Q", S.B, 1 - S.pi_P)):
        rho[name], s[name], optimum[name] = _quadratic(in_product[name], x, weight)
    embedding = [(S.v, 1), (S.k_P, S.d_P), (S.k_Q, S.d_Q), (S.q_P, S.d_P), (S.q_Q, S.d_Q)]
    frobenius = pullback_metric(embedding, S.state)
    metric = sp.diag(1 / S.tau, 1, 1, 1, 1) * frobenius
    loss = blocks["P"] + blocks["Q"]
    rhs = gradient_flow(S.state, loss, parameters=S.parameters, metric=metric).rhs
    identities = _sign_identities(variant, blocks) + _reduction_identities(loss, rhs)
    balanced, balance_ids = _balanced(rhs, rho, s, optimum)
    return Reduction(variant, blocks, in_product, rho, s, optimum, metric, frobenius, rhs,
                     balanced, tuple(identities + balance_ids))


def derivation(variant: str = "relu") -> Derivation:
    """The :class:`~reduced_odes.Derivation` the engine compiles: log coordinates for the weights.

    Examples
    --------
    >>> d = derivation("relu")
    >>> d.coordinate_names
    ('v', 'log_k_P', 'log_q_P', 'log_k_Q', 'log_q_Q')
    """
    S = SYMBOLS
    r = reduction(variant)
    a, b = S.k_P * S.q_P, S.k_Q * S.q_Q
    A, B = S.v * S.gamma**2 * a, S.v * S.mu**2 * b
    excess = {name: sp.factor(r.in_product[name] - r.in_product[name].subs(x, r.optimum[name]))
              .subs(x, value) for name, x, value in (("P", S.A, A), ("Q", S.B, B))}
    observables = {
        "loss": r.loss, "L_P": r.blocks["P"], "L_Q": r.blocks["Q"],
        "L_P_excess": excess["P"], "L_Q_excess": excess["Q"],
        "eig_P": a, "eig_Q": b, "A": A, "B": B, "A_frac": A / r.optimum["P"],
        "log_a": sp.log(S.k_P) + sp.log(S.q_P), "log_b": sp.log(S.k_Q) + sp.log(S.q_Q),
        "log_b_over_a": sp.log(S.k_Q) + sp.log(S.q_Q) - sp.log(S.k_P) - sp.log(S.q_P),
    }
    if r.optimum["Q"] != 0:
        observables["B_frac"] = B / r.optimum["Q"]
    coordinates = [log_coordinate(x, label=f"log_{x.name}") for x in S.state[1:]]
    derived = gradient_flow(S.state, r.loss, parameters=S.parameters, metric=r.metric, rhs=r.rhs,
                            coordinates=coordinates, observables=observables,
                            domain=(sp.StrictGreaterThan(S.v, 0, evaluate=False),),
                            identities=r.identities)
    # exp(-ln k) exp(ln q) -> exp(ln q - ln k): the same function, but a trial step of the
    # solver at sigma ~ 1e-300 can no longer overflow the factors one by one.
    rhs = derived.coordinate_rhs.applyfunc(sp.powsimp)
    return replace(derived, coordinate_rhs=rhs, jacobian=rhs.jacobian(derived.coordinates))
