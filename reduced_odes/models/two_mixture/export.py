"""The derivation documents ``two_mixture.md`` and ``two_mixture.tex``: every derived expression.

Long expressions are printed through named subexpressions (common
subexpression elimination), so the documents stay readable.  The bytes depend
only on the derivation (no dates, no versions), so a regeneration test can
compare them with the committed files.
"""

from __future__ import annotations

from reduced_odes.author import DerivationDocuments

__all__ = ["DOCUMENTS", "export_derivations"]

_TITLE = "Two-mixture classification model (reconstruction of Yang et al.): derivation"
#: LaTeX longer than this is split into named subexpressions.
_LONG = 300

_INTRO = (
    "A labelled reconstruction, not the paper's model (see the spec, section 0). A sample "
    "is one of eight equally likely configurations $(k, s_1, s_2)$; the identifier "
    "$\\kappa c_k$ queries the two signal tokens $(m_j, \\mu s_j e_j)$ through two mirror "
    "heads, averaged before a mean-field ReLU layer; the label is $y = s_k$. Every "
    "expression below is derived by SymPy from that network; regenerate with "
    "`reduced-odes derive --model two_mixture`.")


def _reduction_items(loss: str) -> list[tuple[str, object]]:
    """The reduced loss, the mobility, the flow and the asserted identities of ``loss``."""
    import sympy as sp

    from .reduction import reduce_model

    r = reduce_model(loss)
    items = [("A (yF on a consistent sample)", r.A_of_state),
             ("ell (score gap of the corresponding word)", r.ell_of_state),
             ("reduced loss L(A, ell)", r.loss_Al), ("loss on consistent samples", r.consistent_Al),
             ("loss on hard samples", r.hard_Al),
             ("mobility P (flow = -P grad L; g_n, g_a gate neurons, attention)", r.mobility)]
    items += [(f"d{s.name}/dt", e) for s, e in zip(r.state, r.rhs, strict=True)]
    items += [(f"asserted: {i.name}", sp.Eq(i.lhs, i.rhs, evaluate=False)) for i in r.identities]
    return items


def _closed_form_items(loss: str) -> list[tuple[str, object]]:
    """The section-6 closed forms of ``loss`` and the Algorithm 1 stage formulas."""
    import sympy as sp

    from .closed_forms import closed_forms

    cf = closed_forms(loss)
    A_I, theta_II = sp.symbols("A_I theta_II", positive=True)
    items = [("dA/dt, balanced (N = M = zeta, q = k)", cf.rate_A),
             ("d ell/dt, balanced", cf.rate_ell),
             ("plateau rate lim (d ell/dt)/ell as ell -> 0", cf.plateau_rate),
             ("T1: time from A_0 to A at theta = 0", cf.T1),
             ("Algorithm 1 stage I: time from A_0 to A_I at theta = 0",
              cf.T1.xreplace({cf.A: A_I})),
             ("Algorithm 1 stage II: integrand of the time in ell, neurons frozen at A_I",
              (1 / cf.rate_ell).xreplace({cf.A: A_I}))]
    if cf.T_of_ell is None:
        return items
    theta = sp.Symbol("theta", positive=True)
    items += [("T_A = int (1 - A) dt", cf.T_A), ("slow manifold A*(theta)", cf.A_star),
              ("loss on it, L*(ell)", cf.L_star), ("d ell/dt on it", cf.manifold_rate),
              ("T(ell), matched to the plateau", cf.T_of_ell),
              ("dT2/d ln(1/sigma_att)", cf.slope_att),
              ("dT2/d ln(1/sigma), sigma -> 0", cf.slope_sigma),
              ("Algorithm 1 stage III floor L*(theta_II)",
               cf.L_star.xreplace({cf.ell: 2 * sp.atanh(theta)}).xreplace({theta: theta_II}))]
    return items


def _sections() -> list[tuple[str, list[tuple[str, object]]]]:
    """``(section title, [(label, SymPy expression)])`` in reading order."""
    from .params import LOSSES

    sections = [(f"Loss `{loss}`: reduction, flow and asserted identities", _reduction_items(loss))
                for loss in LOSSES]
    sections += [(f"Loss `{loss}`: closed forms (section 6)", _closed_form_items(loss))
                 for loss in LOSSES]
    return sections


def _named(expr) -> list[tuple[str, str]]:
    """``[(name, latex)]``: ``expr`` alone, or its common subexpressions ``c_k`` then ``expr``."""
    import sympy as sp

    latex = sp.latex(expr)
    if len(latex) <= _LONG or isinstance(expr, sp.Equality):
        return [("", latex)]
    definitions, (reduced,) = sp.cse(expr, symbols=sp.numbered_symbols("c_"))
    named = [(sp.latex(name), sp.latex(value)) for name, value in definitions]
    return [*named, ("", sp.latex(reduced))]


#: The derivation documents, rendered at each export; ``DOCUMENTS.export`` is the hook.
DOCUMENTS = DerivationDocuments("two_mixture", _TITLE, _INTRO, _sections, _named)
export_derivations = DOCUMENTS.export
