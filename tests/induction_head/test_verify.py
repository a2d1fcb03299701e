"""The verify command on the quick grid, and the committed derivations."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from reduced_odes._verify import verify
from reduced_odes.models.induction_head.claims import GRIDS, grid_settings
from reduced_odes.models.induction_head.export import render_derivations

ROOT = Path(__file__).resolve().parents[2]


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


def test_cli_verify_bad_grid_exits_2():
    out = subprocess.run([sys.executable, "-m", "reduced_odes", "verify", "--grid", "huge"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "Traceback" not in out.stderr


@pytest.mark.parametrize("name", ["induction_head.md", "induction_head.tex"])
def test_committed_derivations_are_regenerated_identically(name):
    committed = (ROOT / "derivations" / name).read_text(encoding="utf-8")
    assert render_derivations()[name] == committed, "run `reduced-odes derive` and commit"
