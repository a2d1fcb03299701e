"""Draw the analysis page's figures (docs/figures/analysis/) with the analysis commands.

Run from the repository root: ``python examples/analysis_figures.py``.  Each figure is
written beside its data document (the command's JSON); the phase diagram's sweep
resumes from its results file.
"""

from __future__ import annotations

from pathlib import Path

from reduced_odes.cli import main

OUT = Path(__file__).resolve().parents[1] / "docs" / "figures" / "analysis"

COMMANDS = [
    # The committee machine's branches in eta: the plateau (a saddle) and the perfect
    # student, which loses stability at the largest learning rate.
    ["continue", "--model", "committee_machine", "--K", "2", "--M", "2", "--eta", "0.1",
     "--param", "eta", "--to", "3", "--figure", str(OUT / "bifurcation"),
     "--observable", "eps_g"],
    # T_escape over (eta, asymmetry), 100 x 100 (1e4 settings natively: 45 s of CPU).
    ["phase-diagram", "--model", "committee_machine", "--K", "2", "--M", "2",
     "--x", "eta", "--x-from", "0.05", "--x-to", "1.5", "--x-num", "100",
     "--y", "asymmetry", "--y-from", "1e-10", "--y-to", "1e-4", "--y-num", "100", "--y-log",
     "--quantity", "T_escape", "--out", str(OUT / "phase_diagram"), "--no-progress"],
    # The user model of examples/single_index.py: the escape's law in the dimension.
    ["scaling", "--model", "examples/single_index.py:MODEL", "--exponent", "k3",
     "--param", "d", "--from", "1e2", "--to", "1e10", "--phase", "T_half",
     "--figure", str(OUT / "scaling_k3")],
]

if __name__ == "__main__":
    for argv in COMMANDS:
        assert main(argv) == 0, argv
