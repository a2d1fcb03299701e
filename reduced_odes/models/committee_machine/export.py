"""The derivation documents ``committee_machine.md`` and ``committee_machine.tex``.

What the engine derives for the soft committee machine: the Gaussian kernels of
``erf(x/sqrt 2)`` for a symbolic covariance, and for ``K = M = 2`` the
generalisation error, the pull-back mobility, and each rate split into its
gradient part ``-M grad eps_g`` and its learning-rate drift, whose sum is
asserted equal to the rates derived from the SGD step; for ReLU and linear
units the generalisation error and the ``eta -> 0`` rates.  Long expressions
are printed through named subexpressions (common subexpression elimination).
The bytes depend only on the derivation (no dates, no versions), so a
regeneration test can compare them with the committed files.
"""

from __future__ import annotations

import sympy as sp

from reduced_odes.author import (
    DerivationDocuments,
    activation,
    assert_same,
    gaussian_expectation,
    mobility_gradient,
    online_sgd_reduction,
)

__all__ = ["KERNELS", "DOCUMENTS", "export_derivations"]

_TITLE = "Soft committee machine (online SGD, teacher and student): derivation"
#: LaTeX longer than this is split into named subexpressions.
_LONG = 300
#: The sizes every expression below is printed for.
K = M = 2

_INTRO = (
    "A student $\\phi(x) = \\sum_i g(\\lambda_i)$, $\\lambda_i = w_i \\cdot x/\\sqrt{N}$, learns a "
    "teacher $\\phi^*(x) = \\sum_n g(\\nu_n) + \\zeta$, output noise "
    "$\\zeta \\sim N(0, \\sigma^2)$ (the parameter `noise` is $\\sigma$), by online SGD, "
    "$w_i \\leftarrow w_i + (\\eta/\\sqrt{N})\\, g'(\\lambda_i)(\\phi^* - \\phi)\\, x$. "
    "In $t = \\eta\\,\\mathrm{steps}/N$ the order parameters $Q_{ik} = w_i \\cdot w_k/N$ and "
    "$R_{in} = w_i \\cdot B_n/N$ ($T = I$) follow the expectations below over the Gaussian "
    "fields $(\\lambda, \\nu)$ of covariance $[[Q, R], [R^T, T]]$. Every expression is "
    "derived by SymPy (`online_sgd_reduction`, `gaussian_expectation`, `pullback_mobility`); "
    "regenerate with `reduced-odes derive --model committee_machine`.")

#: The output noise's standard deviation, printed as sigma.
_SYMBOL_NAMES = {sp.Symbol("noise", nonnegative=True): r"\sigma"}
#: What every rate is asserted to be.
IDENTITY = (r"\frac{d}{dt}\begin{pmatrix}Q\\ R\end{pmatrix} = -M\,\nabla_{(Q, R)}\,\epsilon_g"
            r" + \eta\begin{pmatrix}E[\delta_i \delta_k]\\ 0\end{pmatrix}")

#: The erf kernels: name, what it is, and its integrand as ``(factor, variable)`` pairs
#: (``g`` the activation, ``dg`` its derivative, ``x`` the variable itself).
KERNELS = (
    ("I2", "E[g(u_1) g(u_2)]: eps_g", (("g", 1), ("g", 2))),
    ("I3", "E[g'(u_1) u_2 g(u_3)]: the gradient part of the rates", (("dg", 1), ("x", 2),
                                                                      ("g", 3))),
    ("I4", "E[g'(u_1) g'(u_2) g(u_3) g(u_4)]: the learning-rate term",
     (("dg", 1), ("dg", 2), ("g", 3), ("g", 4))),
    ("J2", "E[g'(u_1) g'(u_2)]: the output noise's part of the learning-rate term",
     (("dg", 1), ("dg", 2))),
)


def _kernel(name: str, factors) -> sp.Expr:
    """A kernel of erf over centred Gaussians ``u`` of symbolic covariance ``C_ab``."""
    g = activation("erf")
    size = max(index for _, index in factors)
    u = sp.symbols(f"u_1:{size + 1}", real=True)
    C = sp.Matrix(size, size, lambda a, b: sp.Symbol(f"C_{min(a, b) + 1}{max(a, b) + 1}",
                                                     real=True))
    forms = {"g": g.function, "dg": g.derivative, "x": lambda v: v}
    integrand = sp.Mul(*(forms[kind](u[index - 1]) for kind, index in factors))
    return gaussian_expectation(integrand, u, covariance=C).value


def _kernel_items() -> list[tuple[str, object]]:
    u = sp.Symbol("u")
    g = activation("erf")
    items = [("g(u)", g.function(u)), ("g'(u), derived", g.derivative(u))]
    items += [(f"{name} = {what}", _kernel(name, factors)) for name, what, factors in KERNELS]
    return items


def _rate_label(symbol: sp.Symbol) -> str:
    return f"d{symbol.name}/dt"


def _erf_items() -> list[tuple[str, object]]:
    """eps_g, the mobility, each rate's gradient part and drift, and the asserted identity."""
    sgd = online_sgd_reduction(K, M, "erf")
    gradient = mobility_gradient(sgd.loss, sgd.state, sgd.mobility)
    drift = sum((sp.Matrix(d.rate) for d in sgd.drifts), sp.zeros(len(sgd.state), 1))
    for i in range(len(sgd.state)):
        assert_same(sgd.rates[i], gradient[i] + drift[i], domain=sgd.samples, symbolic=False)
    items: list[tuple[str, object]] = [
        ("generalisation error eps_g = E[(phi - phi*)^2]/2", sgd.loss),
        ("pull-back mobility M = J J^T, rows and columns in the order "
         + ", ".join(s.name for s in sgd.state), sgd.mobility)]
    for i, symbol in enumerate(sgd.state):
        items.append((f"{_rate_label(symbol)}, gradient part (-M grad eps_g)", gradient[i]))
        if drift[i] != 0:
            items.append((f"{_rate_label(symbol)}, learning-rate drift "
                           f"(eta E[delta_i delta_k], noise included)", drift[i]))
    items.append((f"asserted for every rate, at {len(sgd.samples)} random overlaps of real "
                  f"networks (to 25 digits): the rates derived from the SGD step equal the "
                  f"gradient part plus the drift", IDENTITY))
    return items


def _limit_items(variant: str) -> list[tuple[str, object]]:
    """eps_g and the eta -> 0 rates of ``variant`` (compact: one rate per state variable)."""
    sgd = online_sgd_reduction(K, M, variant, learning_rate_terms=False)
    items: list[tuple[str, object]] = [("generalisation error eps_g", sgd.loss)]
    items += [(f"{_rate_label(symbol)} at eta -> 0", rate)
              for symbol, rate in zip(sgd.state, sgd.rates, strict=True)]
    return items


def _sections() -> list[tuple[str, list[tuple[str, object]]]]:
    """``(section title, [(label, SymPy expression)])`` in reading order."""
    return [("Kernels of g(u) = erf(u/sqrt 2), derived for a symbolic covariance C",
             _kernel_items()),
            (f"erf, K = M = {K}: generalisation error, mobility, gradient part and drift",
             _erf_items()),
            (f"ReLU, K = M = {K}, eta -> 0", _limit_items("relu")),
            (f"linear, K = M = {K}, eta -> 0", _limit_items("linear"))]


def _latex(expr) -> str:
    return sp.latex(expr, symbol_names=_SYMBOL_NAMES)


def _named(expr) -> list[tuple[str, str]]:
    """``[(name, latex)]``: ``expr`` alone (a string is LaTeX already), or its common
    subexpressions ``c_k`` then ``expr``."""
    if isinstance(expr, str):
        return [("", expr)]
    latex = _latex(expr)
    if len(latex) <= _LONG or isinstance(expr, sp.MatrixBase):
        return [("", latex)]
    definitions, (reduced,) = sp.cse(expr, symbols=sp.numbered_symbols("c_"))
    named = [(_latex(name), _latex(value)) for name, value in definitions]
    return [*named, ("", _latex(reduced))]


#: The derivation documents, rendered at each export; ``DOCUMENTS.export`` is the hook.
DOCUMENTS = DerivationDocuments("committee_machine", _TITLE, _INTRO, _sections, _named)
export_derivations = DOCUMENTS.export
