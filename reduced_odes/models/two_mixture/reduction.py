"""The mean-field reduction, derived from the unreduced network and asserted.

Steps (each a function; :func:`reduce_model` runs them in order):

1. the manifold: mirror heads ``Q1 = q c^, K1 = k m^, Q2 = -Q1, K2 = -K1`` and
   sign-paired neurons ``w_p = b_p u+ + c_p e3`` (``e3`` inert), neuron
   ``p + m/2 = -neuron p``;
2. the pair identity ``ReLU(u) - ReLU(-u) = u`` (asserted), which makes ``yF``
   of every configuration a function of the moments;
3. the composite variables: ``A`` is ``yF`` on a consistent sample, ``ell`` is
   the head's score gap of the corresponding word, and ``yF`` on a hard sample
   is ``A tanh(ell/2)`` (asserted);
4. the reduced loss: the eight-configuration mixture of ``phi(yF)``, each
   ``yF`` matched to ``A`` or ``A tanh(ell/2)`` (asserted per configuration);
5. the mobility: the pushforward of the unreduced metric to the moments
   ``(zeta, N, M, q, k)``, written in the moments by matching coefficients;
6. the flow ``-P grad L``; its tangency to the unreduced flow (off-manifold
   velocity zero, projected velocity equal) is asserted at random manifold
   points, unbalanced ones included;
7. the conserved quantities ``N - M``, ``NM - zeta^2``, ``q^2 - k^2``.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache

import mpmath
import sympy as sp

from reduced_odes.author import DerivationError, Identity, assert_conserved, assert_same, relu

from .unreduced import D_VAL, Network, configurations, head_average, network, output, phi, scores

__all__ = ["Reduction", "reduce_model"]

SQRT2 = sp.sqrt(2)
#: Width of the symbolic network: two sign pairs, the fewest with N M != zeta^2.
WIDTH = 4


@dataclass(frozen=True)
class Reduction:
    """The reduced model of one loss, with what was asserted on the way.

    Attributes
    ----------
    state : tuple of Symbol
        ``(zeta, N, M, q, k)``.
    mu, kappa, gate_neurons, gate_attention : Symbol
        Parameters; the gates (1 or 0) switch the training of a block on or off.
    A, ell : Symbol
        The composite variables as symbols of :attr:`loss_Al`.
    A_of_state, ell_of_state : Expr
        Their derived values in the state.
    loss_Al, consistent_Al, hard_Al : Expr
        Reduced loss (all, consistent, hard samples) in ``(A, ell)``.
    mobility : Matrix
        ``P``: the flow is ``-P grad L`` (the pushforward of the unreduced metric).
    rhs : Matrix
        That flow in the state.
    identities : tuple of Identity
        What the reduction asserted.
    """

    loss: str
    state: tuple[sp.Symbol, ...]
    mu: sp.Symbol
    kappa: sp.Symbol
    gate_neurons: sp.Symbol
    gate_attention: sp.Symbol
    A: sp.Symbol
    ell: sp.Symbol
    A_of_state: sp.Expr
    ell_of_state: sp.Expr
    loss_Al: sp.Expr
    consistent_Al: sp.Expr
    hard_Al: sp.Expr
    mobility: sp.Matrix
    rhs: sp.Matrix
    identities: tuple[Identity, ...]

    def in_state(self, expr: sp.Expr) -> sp.Expr:
        """``expr`` in ``(A, ell)`` written in the state."""
        return sp.sympify(expr).xreplace({self.A: self.A_of_state, self.ell: self.ell_of_state})

    @property
    def theta(self) -> sp.Expr:
        """The attention-feature margin ``theta`` in ``ell`` (yF on hard samples / A)."""
        return sp.tanh(self.ell / 2)


@dataclass(frozen=True)
class _Manifold:
    """The manifold's coordinates, its embedding into the network, and the moments."""

    net: Network
    q: sp.Symbol
    k: sp.Symbol
    pairs: tuple[tuple[sp.Symbol, sp.Symbol, sp.Symbol], ...]  # (a_p, b_p, c_p)
    embedding: dict
    moments: dict  # moment name -> function of the network parameters


def _unit(n: int, entries: dict[int, sp.Expr]) -> sp.Matrix:
    v = sp.zeros(n, 1)
    for i, value in entries.items():
        v[i] = value
    return v


# Directions: c^ = (c1 - c2)/sqrt2, m^ = (m1 - m2)/sqrt2 (attention); u+, u- (value).
C_HAT = _unit(4, {0: 1 / SQRT2, 1: -1 / SQRT2})
M_HAT = _unit(4, {2: 1 / SQRT2, 3: -1 / SQRT2})
U_PLUS = _unit(D_VAL, {0: 1 / SQRT2, 1: 1 / SQRT2})
U_MINUS = _unit(D_VAL, {0: 1 / SQRT2, 1: -1 / SQRT2})
E_INERT = _unit(D_VAL, {2: 1})


def _dot(u: sp.Matrix, v: sp.Matrix) -> sp.Expr:
    return (u.T * v)[0]


def _manifold(net: Network) -> _Manifold:
    q, k = sp.symbols("q k", positive=True)
    half = net.width // 2
    pairs = tuple(sp.symbols(f"a{p} b{p} c{p}", real=True) for p in range(half))
    embedding = {}
    for Q, K, sign in ((net.Q[0], net.K[0], 1), (net.Q[1], net.K[1], -1)):
        embedding.update(zip(Q, sign * q * C_HAT, strict=True))
        embedding.update(zip(K, sign * k * M_HAT, strict=True))
    for p, (a, b, c) in enumerate(pairs):
        w = b * U_PLUS + c * E_INERT
        for r, sign in ((p, 1), (p + half, -1)):
            embedding[net.a[r]] = sign * a
            embedding.update(zip(net.w[r], sign * w, strict=True))
    m = net.width
    along = [_dot(w, U_PLUS) for w in net.w]
    moments = {
        "zeta": sum((a * u for a, u in zip(net.a, along, strict=True)), sp.Integer(0)) / m,
        "N": sum((a**2 for a in net.a), sp.Integer(0)) / m,
        "M": sum((u**2 for u in along), sp.Integer(0)) / m,
        "q": _dot(net.Q[0] - net.Q[1], C_HAT) / 2,
        "k": _dot(net.K[0] - net.K[1], M_HAT) / 2,
    }
    return _Manifold(net, q, k, pairs, embedding, moments)


def _relu_unevaluated(x: sp.Expr) -> sp.Expr:
    """``max(0, x)`` left unevaluated until the manifold is substituted into ``x``."""
    return sp.Max(0, x, evaluate=False)


def _pair_identity() -> Identity:
    """R1: ``ReLU(u) - ReLU(-u) = u``, proved piecewise."""
    u = sp.Symbol("u", real=True)
    difference = relu(u) - relu(-u)
    if sp.simplify(difference.rewrite(sp.Piecewise)) != u:
        raise DerivationError("pair identity", f"{difference} does not simplify to {u}")
    return Identity("pair identity ReLU(u) - ReLU(-u) = u", difference, u)


def _margin_in_moments(man: _Manifold, config: dict, zeta: sp.Symbol) -> sp.Expr:
    """``yF`` of one configuration on the manifold, via the pair identity, in ``(zeta, q, k)``."""
    y = config[f"s{config['k']}"]
    margin = (y * output(man.net, config, _relu_unevaluated)).xreplace(man.embedding)
    margin = sp.expand(margin.rewrite(sp.Abs))  # ReLU(x) = (x + |x|)/2: the |x| of a pair cancel
    if margin.has(sp.Abs):
        raise DerivationError("pair identity", f"yF keeps {margin.atoms(sp.Abs)} for {config}")
    a0 = man.pairs[0][0]
    moment = man.moments["zeta"].xreplace(man.embedding)
    (a0_value,) = sp.solve(sp.Eq(moment, zeta), a0)
    margin = sp.simplify(margin.xreplace({a0: a0_value}))
    allowed = {zeta, man.q, man.k, man.net.mu, man.net.kappa}
    if not margin.free_symbols <= allowed:
        raise DerivationError("moment closure of yF",
                              f"{config}: yF depends on {margin.free_symbols - allowed}")
    return margin


def _composite(man: _Manifold, zeta: sp.Symbol) -> tuple[sp.Expr, sp.Expr, list[Identity]]:
    """``A`` (yF of a consistent sample) and ``ell`` (the score gap of the corresponding word)."""
    consistent, hard = {"k": 1, "s1": 1, "s2": 1}, {"k": 1, "s1": 1, "s2": -1}
    A = sp.simplify(_margin_in_moments(man, consistent, zeta))
    gap = scores(man.net, consistent, 0)
    ell = sp.simplify((gap[1] - gap[2]).xreplace(man.embedding))
    theta = _margin_in_moments(man, hard, zeta) / A
    try:
        assert_same(theta, sp.tanh(ell / 2), domain={man.q: (0.1, 2), man.k: (0.1, 2)})
    except AssertionError as exc:
        raise DerivationError("hard-sample margin yF = A tanh(ell/2)", str(exc)) from None
    identities = [Identity("A = yF on a consistent sample", sp.Symbol("A"), A),
                  Identity("ell = score gap of the corresponding word", sp.Symbol("ell"), ell),
                  Identity("yF / A on a hard sample", theta, sp.tanh(ell / 2))]
    return A, ell, identities


def _matched_margin(margin: sp.Expr, candidates: Sequence[tuple[sp.Expr, sp.Expr]],
                    domain: dict) -> sp.Expr:
    """The candidate (in ``A, ell``) whose state form equals ``margin``."""
    for in_state, in_Al in candidates:
        try:
            assert_same(margin, in_state, domain=domain, symbolic=False)
        except AssertionError:
            continue
        return in_Al
    raise DerivationError("reduced loss", f"yF = {margin} is none of {[c for _, c in candidates]}")


def _reduced_losses(man: _Manifold, loss: str, zeta: sp.Symbol, A_s: sp.Symbol, ell_s: sp.Symbol,
                    A: sp.Expr, ell: sp.Expr) -> tuple[sp.Expr, sp.Expr, sp.Expr]:
    """All, consistent and hard reduced losses in ``(A, ell)``: each configuration's yF
    is matched to ``+-A`` or ``+-A tanh(ell/2)``."""
    theta = sp.tanh(ell_s / 2)
    forms = [A_s, A_s * theta, -A_s, -A_s * theta]
    candidates = [(f.xreplace({A_s: A, ell_s: ell}), f) for f in forms]
    domain = {man.q: (0.1, 2), man.k: (0.1, 2)}
    parts = {"all": sp.Integer(0), "consistent": sp.Integer(0), "hard": sp.Integer(0)}
    for probability, config in configurations():
        term = phi(loss)(_matched_margin(_margin_in_moments(man, config, zeta), candidates,
                                         domain))
        parts["all"] += probability * term
        parts["consistent" if config["s1"] == config["s2"] else "hard"] += 2 * probability * term
    return parts["all"], parts["consistent"], parts["hard"]


def _in_moments(expr: sp.Expr, man: _Manifold, moments: dict[sp.Symbol, sp.Expr]) -> sp.Expr:
    """A polynomial in the pair coordinates written as a linear combination of the
    moments and 1 (matched coefficient by coefficient)."""
    coefficients = sp.symbols(f"x0:{len(moments) + 1}")
    basis = [*moments.values(), sp.Integer(1)]
    generators = [s for pair in man.pairs for s in pair]
    residual = sp.Poly(
        sp.expand(expr - sum(c * b for c, b in zip(coefficients, basis, strict=True))),
        *generators)
    solution = sp.solve(residual.coeffs(), coefficients, dict=True)
    if not solution:
        raise DerivationError("mobility in the moments", f"{expr} is no combination of the moments")
    names = [*moments, sp.Integer(1)]
    return sum((solution[0].get(c, sp.Integer(0)) * n
                for c, n in zip(coefficients, names, strict=True)),
               sp.Integer(0))


def _mobility(man: _Manifold, state: Sequence[sp.Symbol]) -> sp.Matrix:
    """``P = J G^{-1} J^T``: unit mobility for attention, ``m`` for neurons (time ``m``)."""
    net = man.net
    params = net.parameters
    mobility = [1] * len(net.attention) + [net.width] * len(net.neurons)
    J = sp.Matrix([[sp.diff(man.moments[s.name], p) for p in params] for s in state])
    P = (J * sp.diag(*mobility) * J.T).xreplace(man.embedding)
    in_pairs = {s: man.moments[s.name].xreplace(man.embedding) for s in state[:3]}
    return P.applyfunc(lambda e: _in_moments(sp.expand(e), man, in_pairs))


def _unreduced_velocity(net: Network, loss: str) -> Callable[[dict], dict]:
    """``-G^{-1} grad L`` of the unreduced network, as a function of a numeric point.

    The gradient is derived by the chain rule through the head average ``z`` of
    each configuration: ``dL/dtheta = sum_c p_c phi'(yF) y dF/dtheta``, with
    ``dF/dz`` and ``dz/d(Q, K)`` differentiated separately (each small), then
    evaluated at 40 digits.
    """
    z = sp.Matrix(sp.symbols(f"z0:{D_VAL}", real=True))
    u = sp.Symbol("u", real=True)
    F = sum((a * relu((w.T * z)[0]) for a, w in zip(net.a, net.w, strict=True)),
            sp.Integer(0)) / net.width
    args = [*net.parameters, net.mu, net.kappa, *z]
    dF = _mp(args, [sp.diff(F, v) for v in (*net.neurons, *z)])
    F_at = _mp(args, [F])
    dphi = _mp([u], [sp.diff(phi(loss)(u), u)])
    heads = []
    for probability, config in configurations():
        zc = head_average(net, config)
        heads.append((probability, config[f"s{config['k']}"], _mp(args, list(zc)),
                      _mp(args, list(zc.jacobian(net.attention)))))
    mobility = [1] * len(net.attention) + [net.width] * len(net.neurons)
    n_neurons, n_att = len(net.neurons), len(net.attention)

    def velocity(point: dict) -> dict:
        values = [point[v] for v in (*net.parameters, net.mu, net.kappa)]
        gradient = [mpmath.mpf(0)] * (n_att + n_neurons)
        for probability, y, zc, jacobian in heads:
            z_values = zc(*values, *[0] * D_VAL)
            at = [*values, *z_values]
            weight = probability * y * dphi(y * F_at(*at)[0])[0]
            d = dF(*at)
            jac = jacobian(*values, *[0] * D_VAL)
            for i in range(n_att):
                gradient[i] += weight * sum(d[n_neurons + j] * jac[j * n_att + i]
                                            for j in range(D_VAL))
            for i in range(n_neurons):
                gradient[n_att + i] += weight * d[i]
        return {v: -m * g for v, m, g in zip(net.parameters, mobility, gradient, strict=True)}

    return velocity


def _mp(args: Sequence[sp.Symbol], exprs: Sequence[sp.Expr]) -> Callable:
    """``exprs`` evaluated in mpmath (ReLU' = Heaviside, 0 at the kink)."""
    step = {"Heaviside": lambda x, *_: mpmath.mpf(1) if x > 0 else mpmath.mpf(0)}
    return sp.lambdify(args, list(exprs), modules=[step, "mpmath"])


def _random_point(man: _Manifold, rng: random.Random) -> dict:
    """A random manifold point (unbalanced: q != k, independent pairs) and parameters."""
    point = {man.q: rng.uniform(0.2, 1.5), man.k: rng.uniform(0.2, 1.5),
             man.net.mu: rng.uniform(0.5, 2), man.net.kappa: rng.uniform(0.1, 1)}
    for a, b, c in man.pairs:
        point.update({a: rng.uniform(-1, 1), b: rng.uniform(-1, 1), c: rng.uniform(-1, 1)})
    return {s: mpmath.mpf(v) for s, v in point.items()}


def _assert_tangent(man: _Manifold, loss: str, rhs: sp.Matrix, state: Sequence[sp.Symbol],
                    gates: Sequence[sp.Symbol], points: int = 2, digits: int = 30) -> Identity:
    """The unreduced velocity at manifold points: zero off the manifold, and its
    projection on the moments equal to ``rhs``."""
    net = man.net
    velocity = _unreduced_velocity(net, loss)
    rng = random.Random(11)
    with mpmath.workdps(digits + 10):
        tolerance = mpmath.mpf(10) ** (5 - digits)
        for _ in range(points):
            point = _random_point(man, rng)
            at = {s: sp.sympify(v).xreplace(point) for s, v in man.embedding.items()}
            at = {s: mpmath.mpf(sp.N(v, digits + 10)) for s, v in at.items()}
            at.update({net.mu: point[net.mu], net.kappa: point[net.kappa]})
            v = velocity(at)
            for name, value in _off_manifold(net, v).items():
                if abs(value) > tolerance:
                    raise DerivationError("tangency", f"off-manifold velocity {name} = {value}")
            numbers = {s: sp.Float(str(x), digits + 10) for s, x in at.items()}
            for i, s in enumerate(state):
                moment = man.moments[s.name]
                projected = sum((sp.diff(moment, p).xreplace(numbers)
                                 * sp.Float(str(v[p]), digits + 10)
                                 for p in net.parameters), sp.Integer(0))
                reduced = rhs[i].xreplace({**{x: moment_of(x, man, numbers) for x in state},
                                           **dict.fromkeys(gates, 1), net.mu: numbers[net.mu],
                                           net.kappa: numbers[net.kappa]}).evalf(digits + 10)
                if abs(projected - reduced) > tolerance * (1 + abs(reduced)):
                    raise DerivationError("tangency",
                                          f"d{s}/dt: unreduced {projected}, reduced {reduced}")
    return Identity("unreduced flow projected on (zeta, N, M, q, k) = reduced flow; "
                    "off-manifold velocity = 0", sp.Symbol("P_manifold"), sp.Symbol("P_manifold"))


def moment_of(symbol: sp.Symbol, man: _Manifold, numbers: dict) -> sp.Expr:
    """The moment named like ``symbol`` at a numeric network point."""
    return man.moments[symbol.name].xreplace(numbers)


def _off_manifold(net: Network, v: dict) -> dict[str, sp.Expr]:
    """Velocity components that must vanish for the flow to stay on the manifold."""
    vec = lambda xs: sp.Matrix([v[x] for x in xs])  # noqa: E731
    vQ1, vQ2, vK1, vK2 = (vec(x) for x in (*net.Q, *net.K))
    out = {"Q1 along c1+c2": vQ1[0] + vQ1[1], "Q1 along m": vQ1[2] ** 2 + vQ1[3] ** 2,
           "K1 along m1+m2": vK1[2] + vK1[3], "K1 along c": vK1[0] ** 2 + vK1[1] ** 2,
           "Q2 + Q1": (vQ1 + vQ2).norm(), "K2 + K1": (vK1 + vK2).norm()}
    half = net.width // 2
    for r in range(half):
        out[f"a{r} + a{r + half}"] = v[net.a[r]] + v[net.a[r + half]]
        out[f"w{r} + w{r + half}"] = (vec(net.w[r]) + vec(net.w[r + half])).norm()
        out[f"w{r} along u-"] = _dot(vec(net.w[r]), U_MINUS)
        out[f"w{r} along the inert e3"] = _dot(vec(net.w[r]), E_INERT)
    return out


@cache
def reduce_model(loss: str) -> Reduction:
    """The reduced model of ``loss``, derived from the unreduced network (memoised on disk:
    a warm start reads the derived expressions back instead of re-deriving them).

    Examples
    --------
    >>> r = reduce_model("square")  # doctest: +SKIP
    >>> r.A_of_state, r.ell_of_state  # doctest: +SKIP
    (sqrt(2)*mu*zeta/4, k*kappa*q)
    """
    from reduced_odes.author import cached_symbolic

    stored = cached_symbolic("two_mixture", loss, "reduction",
                             lambda: _stored(derive_reduction(loss)))
    identities = tuple(Identity(name.name, lhs, rhs) for name, lhs, rhs in stored["identities"])
    return Reduction(loss, tuple(stored["state"]), *stored["symbols"], stored["A_of_state"],
                     stored["ell_of_state"], stored["loss_Al"], stored["consistent_Al"],
                     stored["hard_Al"], sp.Matrix(stored["mobility"]), sp.Matrix(stored["rhs"]),
                     identities)


def _stored(r: Reduction) -> dict:
    """The SymPy content of a reduction (identity names as symbols), for the disk cache."""
    return {"state": sp.Tuple(*r.state),
            "symbols": sp.Tuple(r.mu, r.kappa, r.gate_neurons, r.gate_attention, r.A, r.ell),
            "A_of_state": r.A_of_state, "ell_of_state": r.ell_of_state, "loss_Al": r.loss_Al,
            "consistent_Al": r.consistent_Al, "hard_Al": r.hard_Al,
            "mobility": sp.ImmutableMatrix(r.mobility), "rhs": sp.ImmutableMatrix(r.rhs),
            "identities": sp.Tuple(*(sp.Tuple(sp.Symbol(i.name), i.lhs, i.rhs)
                                     for i in r.identities))}


def derive_reduction(loss: str) -> Reduction:
    """Derive the reduced model of ``loss`` from the unreduced network, asserting each step.

    Examples
    --------
    >>> derive_reduction("square").state  # doctest: +SKIP
    (zeta, N, M, q, k)
    """
    net = network(WIDTH)
    man = _manifold(net)
    zeta, N, M = sp.symbols("zeta N M", positive=True)
    state = (zeta, N, M, man.q, man.k)
    A_s, ell_s = sp.Symbol("A", real=True), sp.Symbol("ell", real=True)
    A, ell, identities = _composite(man, zeta)
    identities.insert(0, _pair_identity())
    all_Al, consistent_Al, hard_Al = _reduced_losses(man, loss, zeta, A_s, ell_s, A, ell)
    gates = sp.symbols("g_n g_a", positive=True)
    P = _mobility(man, state)
    P = sp.diag(gates[0] * P[:3, :3], gates[1] * P[3:, 3:])
    if any(P[i, j] != 0 for i in range(3) for j in range(3, 5)):
        raise DerivationError("mobility", "neuron and attention blocks couple")
    L = all_Al.xreplace({A_s: A, ell_s: ell})
    rhs = -(P * sp.Matrix([sp.diff(L, s) for s in state])).applyfunc(sp.factor_terms)
    identities.append(_assert_tangent(man, loss, rhs, state, gates))
    identities += [assert_conserved(name, expr, state, rhs) for name, expr in
                   (("N - M", N - M), ("N M - zeta^2", N * M - zeta**2),
                    ("q^2 - k^2", man.q**2 - man.k**2))]
    return Reduction(loss, state, net.mu, net.kappa, *gates, A_s, ell_s, A, ell, all_Al,
                     consistent_Al, hard_Al, P, rhs, tuple(identities))
