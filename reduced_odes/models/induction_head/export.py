"""The derivation documents ``induction_head.md`` and ``induction_head.tex``.

Declared as a :class:`~reduced_odes.author.DerivationDocuments`, as every model's are.
The reduced flow and its Jacobian are printed through named subexpressions ``c_k`` shared
by their entries (common subexpression elimination), so the documents stay readable.  The
bytes depend only on the derivation (no dates, no versions), so a regeneration test can
compare them with the committed files.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from reduced_odes.author import DerivationDocuments, expect_product

from .declaration import ALPHA, CLOSURES, W_KQ, W_V2, WSTAR, induction_head_readouts
from .derivation import LOG_STATE, REDUCED_STATE, derive_flow, derive_stage1_flow
from .losses import derive_stage1_loss
from .numerics import derive_predictions

__all__ = ["DOCUMENTS", "export_derivations"]

_TITLE = "Induction-head model: derivations"
_INTRO = ("Tokens $x_1..x_L$ are i.i.d. $N(0,1)$ with padding $x_0 = 0$. Stage II: layer 1 "
          "is the exact previous-token head. Each output coordinate is a readout "
          "(target minus model terms), each term a sum over positions $s$ of a weight "
          "times a token expression. The closures: `linear` takes $\\mathrm{softmax}_s(a) \\to "
          "e^{a_s}/L$, the paper's simplification (after Bai et al.); `meanfield` replaces the "
          "normaliser by its large-$L$ value $(L-2)\\, e^{w^2 x_L^2/2}$. Every expression below "
          "is derived by SymPy; regenerate with `reduced-odes derive --model induction_head`.")

#: The labels of the predictions (plain text: a label is a LaTeX paragraph title).
_PREDICTION_TEXT = {
    "growth_rate_I": "Phase I: largest eigenvalue of the linearised (w_v1, p) flow at the "
                     "initial point",
    "growth_rate_I_large_L": "Phase I: that growth rate for sigma -> 0, L -> infinity",
    "escape_time_I": "Phase I: linear-escape time (1/a) ln(1/A_0) of the unstable mode",
    "T_I_leading": "Phase I: T_I to leading order, 1/(4 theta_I L_G4(0))",
    "T_I_corrected": "Phase I: T_I with the linear-escape term",
    "plateau_w_v2": "Phase II: lazy plateau of w_v2",
    "plateau_L_IH": "Phase II: plateau level of L_IH",
    "lambda": "Phase II: exponential rate lambda of w_kq",
    "T_em_leading": "Phase III: T_em to leading order",
    "T_em_slope": "Phase III: dT_em / d ln(1/sigma)",
    "window_rate_large_L": "Phase III: the limit of L lambda as L -> infinity (the window is "
                           "O(L))",
    "tail_u_rate": "Phase IV: slow manifold, du/dt with u = exp(-p)",
    "tail_t_L_G4": "Phase IV: the limit of t L_G4(t) as t -> infinity",
    "mu": "Phase IV: mu, eigenvalue of the (w_v2, w_kq) Jacobian at (1 - alpha, w*) nearest "
          "zero",
    "L_IH_decay_rate": "Phase IV: decay rate 2 mu of L_IH",
}

_SYMBOL_NAMES = {WSTAR: "w^{*}", W_KQ: "w_{kq}", W_V2: "w_{v2}"}


@dataclass(frozen=True)
class _Equations:
    """Equations ``lhs = expression`` (LaTeX left-hand sides) shown under one label; with
    ``shared``, written through named subexpressions ``c_k`` common to all of them."""

    pairs: tuple[tuple[str, object], ...]
    shared: bool = False


def _latex(expr) -> str:
    return expr if isinstance(expr, str) else sp.latex(expr, symbol_names=_SYMBOL_NAMES)


def _named(equations: _Equations) -> list[tuple[str, str]]:
    """``[(name, latex)]`` of one item, for :func:`~reduced_odes.author.render_documents`."""
    if not equations.shared:
        return [(lhs, _latex(expr)) for lhs, expr in equations.pairs]
    lhs, exprs = zip(*equations.pairs, strict=True)
    replacements, reduced = sp.cse(list(exprs), symbols=sp.numbered_symbols("c_"))
    return ([(_latex(symbol), _latex(value)) for symbol, value in replacements]
            + [(name, _latex(value)) for name, value in zip(lhs, reduced, strict=True)])


def _model_sections() -> list[tuple[str, list]]:
    """The readouts of each closure, and the index classes of the induction head's square."""
    readouts = [(f"closure {closure}, readout {readout.name}", _Equations(tuple(
        (f"\\text{{{role}}}", _term_latex(term))
        for role, terms in (("target", readout.target), ("model", readout.model))
        for term in terms)))
        for closure in CLOSURES for readout in induction_head_readouts(closure)]
    _, induction = induction_head_readouts("linear")
    classes = [(f"class {cls.label}", _Equations((
        (f"\\text{{weight sum}}\\,[\\text{{{cls.label}}}]", sp.factor(cls.weight_sum)),
        (f"\\text{{expectation}}\\,[\\text{{{cls.label}}}]", cls.expectation))))
        for cls in expect_product(induction.model[0], induction.model[0]).classes]
    return [("Model", readouts), ("Index-coincidence classes of the induction head", classes)]


def _symbol(name: str) -> str:
    """A prediction's name as an upright LaTeX symbol."""
    return "\\mathrm{" + name.replace("_", "\\_") + "}"


def _closure_sections(closure: str) -> list[tuple[str, list]]:
    """Losses and domain, gradient flow, fixed point and predictions of one closure."""
    flow = derive_flow(closure)
    losses = _Equations((("L_{G4}", flow.losses.four_gram), ("\\Phi(p, L)", _closed_form("Phi")),
                         ("\\Psi(p, L)", _closed_form("Psi")), ("L_{IH}", flow.losses.induction),
                         *(("\\text{domain}", _latex(c)) for c in flow.domain)))
    rates = _Equations(tuple((f"\\dot{{{sp.latex(v)}}}", e)
                             for v, e in zip(REDUCED_STATE, flow.reduced_rhs, strict=True)),
                       shared=True)
    jacobian = _Equations(tuple(
        (f"J_{{{sp.latex(a)},{sp.latex(b)}}}", e) for (a, b), e in
        zip([(a, b) for a in LOG_STATE for b in LOG_STATE], flow.log_jacobian, strict=True)
        if e != 0), shared=True)
    residual = [sp.simplify(e.subs({W_V2: 1 - ALPHA, W_KQ: WSTAR})) for e in flow.reduced_rhs[2:]]
    pred = derive_predictions(closure)
    return [
        (f"Closure `{closure}`: losses and domain",
         [(f"closure {closure} (see the introduction)", losses)]),
        (f"Closure `{closure}`: gradient flow", [
            ("balance", _Equations(
                (("\\frac{d}{dt}\\left(w_k^2 - w_q^2\\right)", flow.balance_rate),))),
            ("the reduced flow", rates),
            ("Jacobian of the flow in the integration coordinates (w_v1, p, w_v2, "
             "ell = ln w_kq), its nonzero entries", jacobian)]),
        (f"Closure `{closure}`: fixed point", [
            ("(w_v1, p, w_v2, w_kq) -> (alpha, +infinity, 1 - alpha, w*): the (w_v2, w_kq) "
             "rates vanish there (checked)",
             _Equations((("(\\dot w_{v2}, \\dot w_{kq})|_{*}", sp.Matrix([residual])),))),
            ("the Jacobian there", _Equations((("J_{*}", pred.fixed_point_jacobian),)))]),
        (f"Closure `{closure}`: predictions (Theorem 5.5)", [
            (text, _Equations(((_symbol(name), pred.expressions[name]),)))
            for name, text in _PREDICTION_TEXT.items()])]


def _sections() -> list[tuple[str, list]]:
    """``(section title, [(label, _Equations)])`` in reading order."""
    stage1 = _Equations((("L_I(p_1)", derive_stage1_loss()), ("\\dot p_1", derive_stage1_flow())))
    return [*_model_sections(), *(s for closure in CLOSURES for s in _closure_sections(closure)),
            ("Stage I (layer 1 alone)", [("layer 1 trained, layer 2 at zero", stage1)])]


def _closed_form(name: str):
    from . import special as _special

    p, length = sp.Symbol("p"), sp.Symbol("L")
    return getattr(_special, name)(p, length).rewrite(sp.exp)


def _term_latex(term) -> str:
    from reduced_odes.author import Fixed

    if isinstance(term, Fixed):
        return _latex(term.body)
    lo, hi = _latex(term.lo.as_expr()), _latex(term.hi.as_expr())
    return f"\\sum_{{s={lo}}}^{{{hi}}} {_latex(term.weight)} \\cdot {_latex(term.body)}"


#: The derivation documents, rendered at each export; ``DOCUMENTS.export`` is the hook.
DOCUMENTS = DerivationDocuments("induction_head", _TITLE, _INTRO, _sections, _named)
export_derivations = DOCUMENTS.export
