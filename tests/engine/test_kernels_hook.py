"""The ``kernels`` hook of the extension guide (``examples/logistic_margin.py`` and its
kernels module ``examples/softplus_kernels.py``): a user's special functions, compiled
into both backends, against an independent integration of the same flow."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from scipy.integrate import solve_ivp
from scipy.special import expit

from reduced_odes import get_model, solve
from reduced_odes._params import native_available
from reduced_odes.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = f"{ROOT / 'examples' / 'logistic_margin.py'}:MODEL"
BACKENDS = ["python", *(["numba"] if native_available() else [])]


def _reference_time(w0: float, lam: float) -> float:
    """When ``dw/dt = sigmoid(-w) - lam w`` (SciPy's ``expit``, no kernel) first reaches
    ``w = 0``, by Radau at rtol 1e-12 with an event."""
    def crosses(t, w):
        return w[0]

    crosses.terminal, crosses.direction = True, 1
    run = solve_ivp(lambda t, w: [expit(-w[0]) - lam * w[0]], (0, 1e4), [w0], method="Radau",
                    rtol=1e-12, atol=1e-12, events=crosses)
    return float(run.t_events[0][0])


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_guides_kernels_example_matches_an_independent_integration(backend):
    model = get_model(EXAMPLE)
    params = model.Params(w0=-800.0, lam=0.1)
    trajectory = solve(params, model=model, solver=model_solver(backend))
    # Two integrators at rtol 1e-10 and 1e-12 on a smooth flow over t ~ 45: 1e-7 relative
    # covers both their errors.
    assert trajectory.phases["T_correct"] == pytest.approx(_reference_time(-800.0, 0.1),
                                                           rel=1e-7)
    # The loss at the start is softplus(800) = 800 exactly: ln(1 + e^800) never formed.
    assert trajectory.series["loss"][0] == 800.0 + 0.1 * 800.0**2 / 2
    w_final = trajectory.final["w"]
    assert abs(expit(-w_final) - 0.1 * w_final) < 1e-9  # settled: the rule is the flow


def model_solver(backend: str):
    from reduced_odes import SolverConfig

    return SolverConfig(backend=backend, rtol=1e-10, atol=1e-12)


def test_the_example_runs_from_the_command_line(capsys):
    assert main(["solve", "--model", EXAMPLE, "--w0", "-5", "--json",
                 "--backend", "python"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert math.isfinite(document["phases"]["T_correct"])
    assert document["solver"]["retried"] is False
