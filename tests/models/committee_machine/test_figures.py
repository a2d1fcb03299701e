"""The committee machine's committed figure data say what the theory says (the documents,
figures and data regenerated: tests/engine/test_model_outputs.py)."""

import math
from pathlib import Path

import pytest

from reduced_odes._results import read_json
from reduced_odes.models.committee_machine import MODEL

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "figures" / "data" / "committee_machine"
#: 4 significant digits: a value at a rounding edge may flip its last digit between
#: machines (1e-3 relative at most); twice that leaves room for the solver's rtol.
DATA_RTOL = 2 * 10.0 ** (1 - MODEL.committed_figures.digits)


def test_the_drawn_plateau_is_saad_and_sollas():
    """The plateau line of ``plateau`` is the closed form eps* at K = 2 (to the data's 4
    digits), and the overlaps the legend pairs up coincide, as the symmetry of the start
    (students and teachers swapped together) says they must."""
    doc = read_json(DATA / "plateau.json")
    eps_star = 2 / math.pi * (math.pi / 6 - 2 * math.asin(1 / 4))
    assert doc["plateau"]["eps_p"] == pytest.approx(eps_star, rel=DATA_RTOL)
    series = doc["series"]
    for a, b in (("Q_1_1", "Q_2_2"), ("R_1_1", "R_2_2"), ("R_1_2", "R_2_1")):
        assert series[a] == series[b], (a, b)


def test_escape_data_approaches_the_slope_one_over_lambda_from_above():
    """The local slopes the ``escape`` figure annotates fall, stay above 1/lambda, and end
    within 5% of it (the verified claim's tolerance)."""
    doc = read_json(DATA / "escape.json")
    slopes, target = doc["local"]["slope"], doc["slope"]
    assert all(b < a for a, b in zip(slopes, slopes[1:], strict=False))
    assert all(s > target for s in slopes)
    assert slopes[-1] == pytest.approx(target, rel=0.05)
    assert doc["slope"] == pytest.approx(1 / doc["lambda"], rel=DATA_RTOL)
