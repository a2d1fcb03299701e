"""The documentation site builds without a warning, and the guide's example model runs
every hook the guide documents.

The build goes into a temporary directory and must leave the work tree as it was.
"""

from __future__ import annotations

import importlib.util
import math
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from reduced_odes import get_model, verify

ROOT = Path(__file__).resolve().parents[1]
#: A hang guard only, never a measure of speed (no test depends on the clock): a correct
#: run takes seconds to minutes even on a loaded machine; a hung one fails within CI's time.
HANG_GUARD_S = 1800
EXAMPLE = ROOT / "examples" / "incremental_learning.py"
DOCS_TOOLS = ("sphinx", "numpydoc", "myst_parser")


def _work_tree_status() -> str | None:
    """``git status --porcelain`` of the work tree, or None outside a git checkout."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        return None
    done = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=ROOT,
                          capture_output=True, text=True)
    return done.stdout if done.returncode == 0 else None


def test_the_site_builds_with_warnings_as_errors(tmp_path):
    missing = [name for name in DOCS_TOOLS if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(f"the docs extra is not installed (missing {', '.join(missing)}): "
                    f"pip install '.[docs]'")
    before = _work_tree_status()
    # A subprocess: Sphinx's extensions keep global state, and a build should not share
    # this process's imports.
    done = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q",
                           "-b", "html", str(ROOT / "docs"), str(tmp_path / "html")],
                          cwd=ROOT, capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert done.returncode == 0, done.stderr
    built = {p.name for p in (tmp_path / "html").glob("*.html")}
    assert {"index.html", "api.html", "extending.html", "ground_truth.html",
            "performance.html", "architecture.html"} <= built
    # Every built-in model has its page, linked from the index.
    index = (tmp_path / "html" / "index.html").read_text(encoding="utf-8")
    for name in ("induction_head", "two_stage_features", "two_mixture", "deep_linear"):
        assert f"{name}.html" in built and f'href="{name}.html"' in index
    assert _work_tree_status() == before


def test_the_guides_example_runs_every_hook(tmp_path):
    model = get_model(f"{EXAMPLE}:MODEL")
    assert all(model.supports(hook) for hook in (
        "verify_settings", "measure", "claims", "verify_metadata", "export_derivations",
        "figures", "compare", "format_compare", "command_options"))
    with ThreadPoolExecutor(1) as executor:
        report = verify(model, "quick", out=tmp_path / "verify", executor=executor,
                        progress=False, backend="python")
    assert report.passed and len(report.claims) == 3
    assert report.metadata == model.verify_metadata()
    [derivation] = model.export_derivations(tmp_path)
    assert "da1/dt" in derivation.read_text(encoding="utf-8")
    (tmp_path / "data").mkdir()
    [figure] = model.figures(tmp_path, tmp_path / "data", ["png"])
    assert figure.read_bytes().startswith(b"\x89PNG")
    result = model.compare(quick=True, out=tmp_path, seeds=1)
    params = model.Params()
    for phase, s in (("T_1", params.s1), ("T_2", params.s2)):
        exact = math.log(s / params.sigma**2 - 1) / (2 * s)
        # Online SGD at lr 1e-3, batches of 64: its noise and step error moved the phase
        # times by under 1% in the seeds tried; 5% leaves room for any seed.
        assert result["sgd"][phase][0] == pytest.approx(exact, rel=0.05)
    assert "| T_1 |" in model.format_compare(result)
