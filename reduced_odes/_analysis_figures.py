"""Figures of the analysis: the bifurcation diagram of a continuation (an observable along
each branch against the parameter, solid where the fixed point is stable and dashed where
it is not, the bifurcations marked), and a scaling law's fit over its measured times."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ._figstyle import SERIES, new_figure, save_figure
from ._results import read_json

__all__ = ["draw_bifurcation_diagram", "draw_scaling_fit"]


def _runs(kinds: Sequence[str]) -> list[tuple[int, int, bool]]:
    """``(start, stop, stable)`` of each stretch of equal stability (each shares its last
    point with the next, so that the line is unbroken)."""
    runs, start = [], 0
    for i in range(1, len(kinds) + 1):
        if i == len(kinds) or (kinds[i] == "stable") != (kinds[start] == "stable"):
            runs.append((start, min(i + 1, len(kinds)), kinds[start] == "stable"))
            start = i
    return runs


def draw_bifurcation_diagram(data_path: str | Path, stem: str | Path,
                             observable: str | None = None,
                             formats: Sequence[str] = ("png",)) -> list[Path]:
    """Draw ``continue --json``'s document (a file) as a bifurcation diagram.

    Examples
    --------
    >>> import json, tempfile
    >>> from reduced_odes import Continuation, continue_branch
    >>> branch = continue_branch(Continuation("deep_linear", {"s": 1.0}, "s"), [0.0, 0.0],
    ...                          1.0, 2.0)
    >>> out = tempfile.mkdtemp()
    >>> path = f"{out}/c.json"
    >>> _ = open(path, "w").write(json.dumps({"param": "s", "bifurcations": [],
    ...                                       "branches": [branch.to_dict()]}))
    >>> [p.name for p in draw_bifurcation_diagram(path, f"{out}/c", "u")]
    ['c.png']
    """
    document = read_json(data_path)
    param = document["param"]
    fig, (ax,) = new_figure(2.4, 1)
    for i, branch in enumerate(document["branches"]):
        points = branch["points"]
        name = observable or next(iter(points[0]["observables"]))
        x = np.array([p[param] for p in points])
        y = np.array([p["observables"][name] for p in points])
        for start, stop, stable in _runs([p["kind"] for p in points]):
            ax.plot(x[start:stop], y[start:stop], color=SERIES[i % len(SERIES)][0],
                    linestyle="-" if stable else "--")
        ax.set_ylabel(name)
    for b in document["bifurcations"]:
        ax.axvline(b["param"], color="0.5", linewidth=0.6, linestyle=":")
    ax.set_xlabel(param)
    return save_figure(fig, stem, formats)


def draw_scaling_fit(data_path: str | Path, stem: str | Path,
                     formats: Sequence[str] = ("png",)) -> list[Path]:
    """Draw ``scaling --json``'s document (a file): the measured times and the fitted law on
    log-log axes, and the local slopes below.

    Examples
    --------
    >>> import json, tempfile
    >>> from reduced_odes import fit_law
    >>> x = np.logspace(2, 6, 9)
    >>> out = tempfile.mkdtemp()
    >>> path = f"{out}/s.json"
    >>> _ = open(path, "w").write(json.dumps({"param": "d", "phase": "T",
    ...                                       **fit_law(x, 1 + x ** 0.5).to_dict()}))
    >>> [p.name for p in draw_scaling_fit(path, f"{out}/s")]
    ['s.png']
    """
    document = read_json(data_path)
    x, times = np.array(document["values"]), np.array(document["times"])
    c = document["coefficients"]
    fine = np.logspace(np.log10(x[0]), np.log10(x[-1]), 200)
    law = c["C"] + c["A"] * (np.log(fine) if document["law"] == "log" else
                             fine ** c["b"] * (np.log(fine) if document["law"] == "power_log"
                                               else 1.0))
    fig, (top, bottom) = new_figure(3.4, 2, sharex=True, heights=[2, 1])
    top.loglog(x, times, "o", color=SERIES[0][0], markersize=3, label="measured")
    top.loglog(fine, law, "-", color=SERIES[1][0], linewidth=0.8,
               label=f"{document['law']}, exponent {document['exponent']:.4g}")
    top.set_ylabel(document["phase"])
    top.legend(frameon=False)
    middle = np.sqrt(x[1:] * x[:-1])
    bottom.semilogx(middle, document["local_slopes"], "s", color=SERIES[2][0], markersize=3)
    bottom.set_ylabel("d ln T / d ln x")
    bottom.set_xlabel(document["param"])
    return save_figure(fig, stem, formats)
