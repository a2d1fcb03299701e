"""Integration: solver agreement, an independent integration of the spec ODE, result schema."""

import json
import math
import subprocess
import sys

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from spec_reference import spec_rhs

from reduced_odes import SolverConfig, solve
from reduced_odes.models.induction_head import ModelParams

#: A hang guard only, never a measure of speed (no test depends on the clock): a correct
#: run takes seconds to minutes even on a loaded machine; a hung one fails within CI's time.
HANG_GUARD_S = 1800

PAPER = ModelParams(L=200, alpha=0.5, wstar=0.3, sigma=1e-4)


@pytest.mark.parametrize("closure", ["linear", "meanfield"])
def test_lsoda_radau_bdf_phase_times_agree(closure):
    runs = {m: solve(PAPER, closure, SolverConfig(method=m)) for m in ("LSODA", "Radau", "BDF")}
    for name, value in runs["LSODA"].phases.items():
        for method in ("Radau", "BDF"):
            # rtol 1e-10 integrations; phase times must agree far inside 1e-6.
            assert runs[method].phases[name] == pytest.approx(value, rel=1e-6), (name, method)


def _independent_t_em(closure, params):
    rhs = spec_rhs(closure, params.L, params.alpha, params.wstar)
    # p starts at 1e-9, not 0: the spec's closed forms are 0/0 at p = 0 (effect ~1e-9 on T_em).
    y0 = [params.sigma, 1e-9, params.sigma, params.sigma**2]
    level = 0.5 * params.wstar

    def reached(t, y):
        return y[3] - level

    reached.terminal = True
    # An explicit method of another family (DOP853) on the untransformed w_kq coordinate.
    sol = solve_ivp(rhs, (0, 1e7), y0, method="DOP853", rtol=1e-10,
                    atol=[1e-12, 1e-12, 1e-12, 1e-22], events=reached)
    return sol.t_events[0][0]


@pytest.mark.parametrize("closure", ["linear", "meanfield"])
def test_t_em_matches_independent_integration_of_spec_ode(closure):
    ours = solve(PAPER, closure).phases["T_em"]
    reference = _independent_t_em(closure, PAPER)
    assert ours == pytest.approx(reference, rel=1e-3)  # the acceptance bound: 0.1%
    assert ours == pytest.approx(reference, rel=1e-6)  # what both rtol-1e-10 runs actually give


def test_trajectory_output_and_schema():
    traj = solve(PAPER, "linear", SolverConfig(n_output=300))
    assert traj.t[0] == 0 and traj.t.size == 301
    ratios = traj.t[2:] / traj.t[1:-1]
    assert np.allclose(ratios, ratios[0])  # log-spaced after t = 0
    assert traj.state.shape == (301, 4) and np.all(np.isfinite(traj.state))
    assert traj.state[0, 3] == pytest.approx(PAPER.sigma**2)
    stats = traj.stats
    assert stats.nfev > stats.steps > 100 and stats.njev > 0
    doc = traj.to_dict()
    assert set(doc) >= {"params", "closure", "phases", "final", "solver", "versions"}
    assert set(doc["phases"]) == {"T_I", "T_II", "T_em", "T_III"}
    assert set(doc["solver"]) >= {"method", "rtol", "atol", "nfev", "njev", "steps"}
    assert {"sympy", "scipy", "numpy", "reduced-odes"} <= set(doc["versions"])
    json.dumps(doc)


def test_run_reaches_phase_iv():
    traj = solve(PAPER, "linear")
    phases = traj.phases
    assert phases["T_I"] < phases["T_II"] < phases["T_em"] < phases["T_III"] < traj.t[-1]
    assert traj.final["w_kq"] == pytest.approx(PAPER.wstar, rel=1e-5)
    assert traj.final["w_v2"] == pytest.approx(1 - PAPER.alpha, rel=1e-5)
    # The algebraic 4-gram tail t L_G4 -> 1/4 (spec section 6) is resolved by the end.
    assert traj.final["t"] * traj.final["L_G4"] == pytest.approx(0.25, rel=5e-3)


def test_phase_times_are_roots_of_the_dense_output():
    traj = solve(PAPER, "linear")
    for name, fraction in (("T_II", 0.1), ("T_em", 0.5), ("T_III", 0.9)):
        t = traj.phases[name]
        assert math.exp(traj.at(t)[3]) == pytest.approx(fraction * PAPER.wstar, rel=1e-12)
    g4_0 = traj.series["L_G4"][0]
    g4 = traj.observables_at(traj.phases["T_I"])["L_G4"]
    assert g4[0] == pytest.approx(0.01 * g4_0, rel=1e-10)
    # The root is bracketed by steps, so it is the *first* crossing.
    early = np.linspace(0, traj.phases["T_I"], 50)[:-1]
    assert np.all(traj.observables_at(early)["L_G4"] > 0.01 * g4_0)


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "reduced_odes", *args], capture_output=True,
                          text=True, timeout=HANG_GUARD_S)


def test_cli_solve_json_and_table():
    out = _cli("solve", "--closure", "meanfield", "--L", "200", "--alpha", "0.5", "--wstar", "0.3",
               "--sigma", "1e-4", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["closure"] == "meanfield" and doc["params"]["L"] == 200
    assert doc["phases"]["T_em"] == pytest.approx(solve(PAPER, "meanfield").phases["T_em"])
    table = _cli("solve")
    assert table.returncode == 0 and "T_em" in table.stdout and "nfev" in table.stdout


def test_cli_bad_input_exits_2_without_traceback():
    out = _cli("solve", "--alpha", "1.5")
    assert out.returncode == 2
    assert "alpha" in out.stderr and "[0.001, 0.99]" in out.stderr and "Traceback" not in out.stderr
