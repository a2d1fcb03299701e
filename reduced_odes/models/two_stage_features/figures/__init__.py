"""Figures of the two-stage feature model, drawn from data files only.

Data files (in ``figures/data/two_stage_features``)
---------------------------------------------------
``trajectory-sigma0.0001.json``
    One run at the defaults with ``sigma = 1e-4``: ``L_P``, ``L_Q``, ``v``,
    ``a = eig_P``, ``b = eig_Q`` on log-spaced times from the dense output, the
    phase times, and the section-6.2 levels.
``scaling.json``
    Stage times of integrated runs over ``sigma`` and over ``(d_Q, mu)``, and the
    section-6.4 composite predictions on a fine grid (the lines).

Figures (in ``figures/two_stage_features``)
-------------------------------------------
``stages``    ``L_P``, ``L_Q`` and ``v``, ``a``, ``b`` against time; Stage I, the
              plateau, Stage II and convergence shaded.
``spectrum``  the eigenvalues ``a`` (P block) and ``b`` (Q block) of ``W`` against
              time, the predicted levels and the crossing ``T_×`` marked.
``scaling``   ``T_P``, ``T_Q``, ``T_×`` against ``ln(1/σ²)``, and ``T_P``, ``T_Q`` and
              the plateau length against ``d_Q/(π_Q² μ²)``; predicted lines, no fit.

A missing data file is computed first; the figures themselves never integrate.
Output bytes carry no timestamps, so redrawing from the same data gives the same files.
"""

from __future__ import annotations

from reduced_odes.author import DataFigures

from .data import DATA_FILES, write_data
from .draw import plot_scaling, plot_spectrum, plot_stages

__all__ = ["DATA_FILES", "FIGURES", "draw_figures"]

#: Figure name -> (drawing function, its data file, subject of the provenance stamp).
FIGURES = {
    "stages": (plot_stages, "trajectory-sigma0.0001.json",
               "loss blocks and parameters, stages shaded"),
    "spectrum": (plot_spectrum, "trajectory-sigma0.0001.json",
                 "eigenvalues of the attention matrix, crossing marked"),
    "scaling": (plot_scaling, "scaling.json",
                "stage times against ln(1/sigma^2) and d_Q/(pi_Q^2 mu^2)"),
}


#: The figures, drawn from the data files (a missing one computed first);
#: ``draw_figures`` is the ``figures`` hook.
draw_figures = DataFigures("two_stage_features", FIGURES, write_data).draw
