"""Figures of the committee machine, drawn from data files only.

Data files (in ``figures/data/committee_machine``)
--------------------------------------------------
``plateau.json``  K = M = 2, erf, eta -> 0: ``eps_g``, every ``Q_ik`` and ``R_in``, the
                  phases, and the unspecialised fixed point (the plateau).
``escape.json``   ``T_escape`` over the asymmetry 1e-2 ... 1e-8, the unstable eigenvalue
                  ``lambda`` at the plateau, the local slopes.
``eta.json``      ``eps_g(t)`` at eta = 0, 0.1, 0.5, 1, 2 with each plateau height, the
                  largest learning rate, a run above it, and ``eps_p(eta)``.
``noise.json``    K = 1, 2, 3 students, one teacher, eta = 0.1, output noise 0.5: ``eps_g(t)``
                  and the fixed point each run settles at.

Figures (in ``figures/committee_machine``)
------------------------------------------
``plateau``, ``escape``, ``eta``, ``noise`` (see :mod:`.draw`).

A missing data file is computed first; the figures themselves never integrate.
Output bytes carry no timestamps, so redrawing from the same data gives the same files.
"""

from __future__ import annotations

from pathlib import Path

from reduced_odes.author import DataFigures

from .data import DATA_FILES, write_data
from .draw import plot_escape, plot_eta, plot_noise, plot_plateau

__all__ = ["DATA_FILES", "FIGURES", "draw_figures", "figure_data"]

#: Figure name -> (drawing function, its data file, subject of the provenance stamp).
FIGURES = {
    "plateau": (plot_plateau, "plateau.json",
                "eps_g(t) with its plateau eps* and the phases; Q_ik and R_in"),
    "escape": (plot_escape, "escape.json",
               "T_escape against ln(1/asymmetry), the slope 1/lambda and the local slopes, "
               "no fit"),
    "eta": (plot_eta, "eta.json", "eps_g(t) over the learning rate, the plateau eps_p(eta) "
                                  "and the largest learning rate"),
    "noise": (plot_noise, "noise.json", "eps_g(t) of K students and one noisy teacher, with "
                                        "the asymptotic fixed points"),
}


def figure_data(data: str | Path) -> list[Path]:
    """Compute every data file into the directory ``data`` (overwriting)."""
    return write_data(Path(data))


#: The figures, drawn from the data files (a missing one computed first);
#: ``draw_figures`` is the ``figures`` hook.
draw_figures = DataFigures("committee_machine", FIGURES, write_data).draw
