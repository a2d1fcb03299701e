"""The verify command on the quick grid: every claim of Theorem 5.5, and skipped settings."""

import json

from reduced_odes import verify
from reduced_odes.models.induction_head.claims import GRIDS, grid_settings


def test_quick_grid_passes_every_claim(tmp_path):
    report = verify("induction_head", "quick", "all", tmp_path, progress=False)
    failed = [c for c in report.claims if not c.passed]
    assert not failed, report.table()
    names = {c.name.split(" [")[0] for c in report.claims}
    assert {"T_em slope in ln(1/sigma)", "T_em exponent in L", "window spread across sigma",
            "t*L_G4 at end of run", "L_IH decay rate (phase IV)", "T_I vs leading order",
            "T_I variation across L, sigma", "T_em variation across L, sigma",
            "L_IH(T_I) / plateau"} <= names
    document = json.loads((tmp_path / "verify-quick.json").read_text())
    assert {"name", "predicted", "measured", "tolerance", "passed"} <= set(document["claims"][0])
    lines = (tmp_path / "verify-quick.jsonl").read_text().splitlines()
    assert len(lines) == 2 * 16
    record = json.loads(lines[0])
    assert record["metadata"]["solver"]["method"] == "LSODA" and "sympy" in \
        record["metadata"]["versions"]


def test_out_of_domain_settings_are_skipped_with_a_reason():
    grid = dict(GRIDS["quick"], wstar=[0.3, 0.6])
    settings, skipped = grid_settings(grid, ["linear", "meanfield"])
    assert all(s["wstar"] == 0.3 or s["closure"] == "meanfield" for s in settings)
    assert skipped and all("wstar" in s["reason"] and "0.5" in s["reason"] for s in skipped)
