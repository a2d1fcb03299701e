"""The rounding of the two-stage feature model's figure data (the documents, figures and data
regenerated: tests/engine/test_model_outputs.py)."""

import numpy as np

from reduced_odes.models.two_stage_features.figures.data import rounded


def test_rounding_keeps_five_digits_and_integers():
    assert rounded(np.array([123456.7, 0.000123456])) == [123460.0, 0.00012346]
    assert rounded({"N": 32, "flag": True}) == {"N": 32, "flag": True}
