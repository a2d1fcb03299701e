"""Figures of the two-mixture model, drawn from data files only.

Data files (in ``figures/data/two_mixture``)
--------------------------------------------
``stages.json``      the default joint run (square loss): loss on all, consistent and
                     hard samples, ``A``, ``theta``, the phases.
``separation.json``  ``theta(t)`` integrated and from the slow-manifold ``T(ell)``; the
                     head-averaged features of the eight configurations at 0, T1, T2, T3.
``scaling.json``     integrated ``T2`` over ``sigma_att`` and over ``sigma``, and the
                     closed form ``T(ln 3)`` with its slopes.
``algorithm1.json``  the joint flow and Algorithm 1 (stitched stages), with the floor.

Figures (in ``figures/two_mixture``)
------------------------------------
``stages``, ``attention_separation``, ``scaling``, ``algorithm1`` (see :mod:`.draw`).

A missing data file is computed first; the figures themselves never integrate.
Output bytes carry no timestamps, so redrawing from the same data gives the same files.
"""

from __future__ import annotations

from reduced_odes.author import DataFigures

from .data import DATA_FILES, write_data
from .draw import plot_algorithm1, plot_scaling, plot_separation, plot_stages

__all__ = ["DATA_FILES", "FIGURES", "draw_figures"]

#: Figure name -> (drawing function, its data file, subject of the provenance stamp).
FIGURES = {
    "stages": (plot_stages, "stages.json", "loss on consistent and hard samples, A and theta, "
                                           "stages shaded"),
    "attention_separation": (plot_separation, "separation.json",
                             "attention features from non-separable to separated"),
    "scaling": (plot_scaling, "scaling.json", "T2 against ln(1/sigma_att) and ln(1/sigma), "
                                              "predicted slopes, no fit"),
    "algorithm1": (plot_algorithm1, "algorithm1.json", "joint flow against Algorithm 1"),
}


#: The figures, drawn from the data files (a missing one computed first);
#: ``draw_figures`` is the ``figures`` hook.
draw_figures = DataFigures("two_mixture", FIGURES, write_data).draw
