"""Export every derivation as Markdown and LaTeX (``reduced-odes derive``).

Long expressions are printed through named subexpressions (common
subexpression elimination), so the documents stay readable.  The header
records the package and SymPy versions and a hash of the content, and the
output is deterministic: regenerating leaves committed files unchanged.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
from collections.abc import Callable, Mapping
from pathlib import Path

import sympy as sp

from reduced_odes import __version__
from reduced_odes.author import expect_product

from .declaration import ALPHA, CLOSURES, W_KQ, W_V2, WSTAR, induction_head_readouts
from .derivation import LOG_STATE, REDUCED_STATE, derive_flow, derive_stage1_flow
from .losses import derive_stage1_loss
from .numerics import derive_predictions

__all__ = ["export_derivations", "render_derivations"]

_PREDICTION_TEXT = {
    "growth_rate_I": "Phase I: largest eigenvalue of the linearised $(w_{v1}, p)$ flow at the "
                     "initial point",
    "growth_rate_I_large_L": "Phase I: that growth rate for $\\sigma \\to 0$, $L \\to \\infty$",
    "escape_time_I": "Phase I: linear-escape time $(1/a)\\ln(1/A_0)$ of the unstable mode",
    "T_I_leading": "Phase I: $T_I$ to leading order, $1/(4\\theta_I L_{G4}(0))$",
    "T_I_corrected": "Phase I: $T_I$ with the linear-escape term",
    "plateau_w_v2": "Phase II: lazy plateau of $w_{v2}$",
    "plateau_L_IH": "Phase II: plateau level of $L_{IH}$",
    "lambda": "Phase II: exponential rate $\\lambda$ of $w_{kq}$",
    "T_em_leading": "Phase III: $T_{em}$ to leading order",
    "T_em_slope": "Phase III: $dT_{em}/d\\ln(1/\\sigma)$",
    "window_rate_large_L": "Phase III: $\\lim_{L\\to\\infty} L\\lambda$ (the window is $O(L)$)",
    "tail_u_rate": "Phase IV: slow manifold, $du/dt$ with $u = e^{-p}$",
    "tail_t_L_G4": "Phase IV: $\\lim_{t\\to\\infty} t\\,L_{G4}(t)$",
    "mu": "Phase IV: $\\mu$, eigenvalue of the $(w_{v2}, w_{kq})$ Jacobian at "
          "$(1-\\alpha, w^*)$ nearest zero",
    "L_IH_decay_rate": "Phase IV: decay rate $2\\mu$ of $L_{IH}$",
}


class _Doc:
    """Collects sections; renders the same content as Markdown or LaTeX."""

    def __init__(self):
        self.blocks: list[tuple[str, object]] = []

    def heading(self, text: str):
        self.blocks.append(("heading", text))

    def text(self, text: str):
        self.blocks.append(("text", text))

    def equation(self, lhs: str, expr):
        self.blocks.append(("equation", (lhs, expr)))

    def named(self, exprs: list, names: list[str]):
        """Several expressions sharing named subexpressions ``c_k``."""
        replacements, reduced = sp.cse(exprs, symbols=sp.numbered_symbols("c_"))
        for sym, value in replacements:
            self.equation(sp.latex(sym), value)
        for name, value in zip(names, reduced, strict=True):
            self.equation(name, value)

    def render(self, style: Mapping[str, Callable]) -> str:
        """The document in one output ``style`` (see ``MARKDOWN`` and ``LATEX``)."""
        return "\n".join(style[kind](payload) for kind, payload in self.blocks)


def _equation(template: str) -> Callable:
    return lambda payload: template.format(payload[0], _latex(payload[1]))


#: How each kind of block is written, per output format.
MARKDOWN = {"heading": "\n## {}\n".format, "text": "{}\n".format,
            "equation": _equation("$$ {} = {} $$\n")}
LATEX = {"heading": "\\section*{{{}}}".format,
         "text": lambda text: text.replace("`", "") + "\n",
         "equation": _equation("\\begin{{dmath*}} {} = {} \\end{{dmath*}}")}


_SYMBOL_NAMES = {WSTAR: "w^{*}", W_KQ: "w_{kq}", W_V2: "w_{v2}"}


def _latex(expr) -> str:
    return expr if isinstance(expr, str) else sp.latex(expr, symbol_names=_SYMBOL_NAMES)


def _document() -> _Doc:
    doc = _Doc()
    doc.heading("Model")
    doc.text("Tokens $x_1..x_L$ are i.i.d. $N(0,1)$ with padding $x_0 = 0$. Stage II: layer 1 "
             "is the exact previous-token head. Each output coordinate is a readout "
             "(target minus model terms), each term a sum over positions $s$ of a weight "
             "times a token expression.")
    for closure in CLOSURES:
        for readout in induction_head_readouts(closure):
            doc.text(f"Closure `{closure}`, readout `{readout.name}`:")
            for role, terms in (("target", readout.target), ("model", readout.model)):
                for term in terms:
                    doc.equation(f"\\text{{{role}}}", _term_latex(term))
    doc.heading("Index-coincidence classes of the induction head")
    _, induction = induction_head_readouts("linear")
    for cls in expect_product(induction.model[0], induction.model[0]).classes:
        doc.equation(f"\\text{{weight sum}}\\,[\\text{{{cls.label}}}]", sp.factor(cls.weight_sum))
        doc.equation(f"\\text{{expectation}}\\,[\\text{{{cls.label}}}]", cls.expectation)
    for closure in CLOSURES:
        flow = derive_flow(closure)
        doc.heading(f"Closure `{closure}`: losses and domain")
        doc.text(CLOSURES[closure].description)
        doc.equation("L_{G4}", flow.losses.four_gram)
        doc.equation("\\Phi(p, L)", _closed_form("Phi"))
        doc.equation("\\Psi(p, L)", _closed_form("Psi"))
        doc.equation("L_{IH}", flow.losses.induction)
        for condition in flow.domain:
            doc.equation("\\text{domain}", _latex(condition))
        doc.heading(f"Closure `{closure}`: gradient flow")
        doc.equation("\\frac{d}{dt}\\left(w_k^2 - w_q^2\\right)", flow.balance_rate)
        names = [f"\\dot{{{sp.latex(v)}}}" for v in REDUCED_STATE]
        doc.named(list(flow.reduced_rhs), names)
        doc.text("Jacobian of the flow in the integration coordinates "
                 "$(w_{v1}, p, w_{v2}, \\ell = \\ln w_{kq})$:")
        entries = list(flow.log_jacobian)
        labels = [f"J_{{{sp.latex(a)},{sp.latex(b)}}}" for a in LOG_STATE for b in LOG_STATE]
        nonzero = [(lbl, e) for lbl, e in zip(labels, entries, strict=True) if e != 0]
        doc.named([e for _, e in nonzero], [lbl for lbl, _ in nonzero])
        doc.heading(f"Closure `{closure}`: fixed point")
        at_fixed = {W_V2: 1 - ALPHA, W_KQ: WSTAR}
        residual = [sp.simplify(e.subs(at_fixed)) for e in flow.reduced_rhs[2:]]
        doc.text("$(w_{v1}, p, w_{v2}, w_{kq}) \\to (\\alpha, +\\infty, 1-\\alpha, w^*)$: the "
                 "$(w_{v2}, w_{kq})$ rates vanish there (checked):")
        doc.equation("(\\dot w_{v2}, \\dot w_{kq})|_{*}", sp.Matrix([residual]))
        pred = derive_predictions(closure)
        doc.equation("J_{*}", pred.fixed_point_jacobian)
        doc.heading(f"Closure `{closure}`: predictions (Theorem 5.5)")
        for name, text in _PREDICTION_TEXT.items():
            doc.text(text + ":")
            label = name.replace("_", "\\_")
            doc.equation(f"\\mathrm{{{label}}}", pred.expressions[name])
    doc.heading("Stage I (layer 1 alone)")
    doc.equation("L_I(p_1)", derive_stage1_loss())
    doc.equation("\\dot p_1", derive_stage1_flow())
    return doc


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


def render_derivations() -> dict[str, str]:
    """The Markdown and LaTeX documents, each with its header.

    Examples
    --------
    >>> docs = render_derivations()  # doctest: +SKIP
    >>> sorted(docs)  # doctest: +SKIP
    ['induction_head.md', 'induction_head.tex']
    """
    doc = _document()
    body_md, body_tex = doc.render(MARKDOWN), doc.render(LATEX)
    digest = hashlib.sha256((body_md + body_tex).encode()).hexdigest()[:16]
    stamp = (f"reduced-odes {__version__}, SymPy {importlib.metadata.version('sympy')}, "
             f"content hash {digest}")
    markdown = (f"# Induction-head model: derivations\n\n"
                f"Generated by `reduced-odes derive` ({stamp}). Do not edit.\n{body_md}")
    latex = ("\\documentclass{article}\n\\usepackage{amsmath,breqn}\n\\begin{document}\n"
             f"\\title{{Induction-head model: derivations}}\\date{{{stamp}}}\\maketitle\n"
             f"{body_tex}\n\\end{{document}}\n")
    return {"induction_head.md": markdown, "induction_head.tex": latex}


def export_derivations(directory: str | Path = "derivations") -> list[Path]:
    """Write the derivation documents into ``directory``; returns their paths."""
    from reduced_odes.author import write_documents

    return write_documents(directory, render_derivations())
