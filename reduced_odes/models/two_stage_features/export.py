"""The derivation documents ``two_stage_features.md`` and ``.tex``: every derived expression.

The bytes depend only on the derivation (no dates), so a regeneration test can
compare them with the committed files.
"""

from __future__ import annotations

from reduced_odes.author import DerivationDocuments

__all__ = ["DOCUMENTS", "export_derivations"]

_TITLE = "Two-stage feature model (reconstruction of Gong et al.): derivation"
_INTRO = ("A labelled reconstruction, not the paper's model. Every line below is derived by "
          "SymPy; regenerate with `reduced-odes derive --model two_stage_features`.")


def _sections() -> list[tuple[str, list[tuple[str, object]]]]:
    """``(section title, [(label, SymPy expression or text)])`` in reading order."""
    import sympy as sp

    from .closed_forms import closed_forms
    from .derivation import SYMBOLS as S
    from .derivation import reduction

    r, cf = reduction("relu"), closed_forms()
    lin = reduction("linear")
    loss = [(f"L_{k} in {x}", r.in_product[k]) for k, x in (("P", "A"), ("Q", "B"))]
    loss += [(f"rho_{k}", r.rho[k]) for k in "PQ"] + [(f"s_{k}", r.s[k]) for k in "PQ"]
    loss += [(f"{k}* (minimiser)", r.optimum[k]) for k in ("P", "Q")]
    control = [(f"linear activation: L_{k}", lin.in_product[k]) for k in "PQ"]
    flow = [("Frobenius pullback metric", r.frobenius),
            ("training metric (tau = 1 trains v, tau = 0 freezes it)", r.metric)]
    flow += [(f"d{x.name}/dt", e) for x, e in zip(S.state, r.rhs, strict=True)]
    flow += [(i.name, sp.Eq(i.lhs, i.rhs, evaluate=False)) for i in r.identities]
    six = [("growth rate of ln a at the origin", cf.rate["P"]),
           ("growth rate of ln b at the origin", cf.rate["Q"]), ("kappa", cf.kappa),
           ("Stage-I value: w1 is the root > 1 of", cf.stage_one_value),
           ("final value: v_inf is the positive root of", cf.final_value),
           ("c_P", cf.c["P"]), ("c_Q", cf.c["Q"])]
    six += [(f"leading {k}", e) for k, e in cf.leading.items()]
    six += [(f"fraction {k}", e) for k, e in cf.fraction.items()]
    six += [(f"integrand {k}", e) for k, e in cf.integrand.items()]
    six += [("Gram matrix of grad A, grad B", cf.gram),
            ("curvatures of L in A and B", sp.Matrix(cf.curvature)),
            ("adiabatic lag A - A* (Stage II)", cf.lag)]
    six += [(f"fixed value: {k}", e) for k, e in cf.logistic.items()]
    return [("Loss by enumeration of the finite mixture (ReLU)", loss),
            ("Control: linear activation", control),
            ("Reduction, metric, flow and asserted identities", flow),
            ("Section-6 closed forms (derived from the flow)", six)]


def _named(expr) -> list[tuple[str, str]]:
    """``[("", latex)]``: every expression is printed whole."""
    import sympy as sp

    return [("", sp.latex(expr))]


#: The derivation documents, rendered at each export; ``DOCUMENTS.export`` is the hook.
DOCUMENTS = DerivationDocuments("two_stage_features", _TITLE, _INTRO, _sections, _named,
                                intro_in_latex=False)
export_derivations = DOCUMENTS.export
