"""Algorithm 1 reports the crossings no stage reaches as not reached, with the reason, on
both paths (issue 34, defect 4)."""

from __future__ import annotations

import math

from reduced_odes import SolverConfig, solve
from reduced_odes.cli import EXIT_NOT_REACHED, main
from reduced_odes.models.two_mixture import TwoMixtureParams

#: theta_II below theta2 (0.5): stage II stops the attention at 0.4, stage III trains the
#: neurons only, so theta never reaches theta2 (T2), nor the square loss L3 (T3).
BELOW = TwoMixtureParams(protocol="algorithm1", theta_II=0.4)


def test_crossings_no_stage_reaches_are_unreached_with_the_reason():
    traj = solve(BELOW, "square", SolverConfig(cross_check=False))
    assert math.isnan(traj.phases["T2"]) and math.isnan(traj.phases["T3"])
    assert set(traj.unreached) == {"T2", "T3"}
    assert "theta ended at 0.4" in traj.unreached["T2"]
    outcomes = traj.to_dict()["phase_outcomes"]
    assert outcomes["T2"]["reached"] is False and "Algorithm 1" in outcomes["T2"]["reason"]
    assert outcomes["T1"]["reached"] is True  # stage I crosses it


def test_the_command_exits_3_with_one_warning_line(capsys):
    status = main(["solve", "--model", "two_mixture", "--protocol", "algorithm1",
                   "--theta_II", "0.4", "--cross-check", "false", "--json"])
    assert status == EXIT_NOT_REACHED
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "phase not reached: T2" in err[0], err
