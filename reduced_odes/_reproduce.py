"""The main job's safety net: fresh results against the committed ones, and stable figures.

``reduced-odes reproduce`` computes into a working directory and compares with the
committed data under :data:`RTOL` / :data:`ATOL`; the committed files change only with
``--update-committed``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ._results import read_json
from ._results_file import read_results

__all__ = ["ATOL", "FIGURE_DIGITS", "RTOL", "differences", "rounded"]

#: Phase times differ between OpenBLAS kernels (CPU types) by <= 3e-9 relative; 1e-6 leaves
#: a 300x margin and still flags any change of the numerics or of the grid.
RTOL = 1e-6
#: Values below this are round-off residues (e.g. a final L_IH of 1e-18), compared absolutely.
ATOL = 1e-12
#: Significant digits of the data a figure is drawn from: far below a pixel, far above
#: the machine-to-machine noise, so the same figure bytes on every machine.
FIGURE_DIGITS = 4
#: Solver statistics (nfev, steps, ...) depend on the BLAS kernel (up to 26% apart): not
#: results, never compared.  Provenance and output paths are not compared either.
_IGNORED = frozenset({"solver", "metadata", "versions", "platform", "files", "stats"})


def rounded(value: Any, digits: int = FIGURE_DIGITS) -> Any:
    """``value`` with every float rounded to ``digits`` significant digits.

    Examples
    --------
    >>> rounded({"t": [209.79210673196405, 18894.384728338104], "n": 3})
    {'t': [209.8, 18890.0], 'n': 3}
    """
    if isinstance(value, dict):
        return {k: rounded(v, digits) for k, v in value.items()}
    if isinstance(value, list):
        return [rounded(v, digits) for v in value]
    if isinstance(value, float) and math.isfinite(value) and value != 0.0:
        return float(f"{value:.{digits - 1}e}")
    return value


def _close(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool) or not isinstance(a, int | float) \
            or not isinstance(b, int | float):
        return a == b
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= RTOL * max(abs(a), abs(b)) + ATOL


def _diff(fresh: Any, committed: Any, where: str, out: list[str]) -> None:
    """Append to ``out`` one line per leaf where the two documents disagree."""
    if isinstance(fresh, dict) and isinstance(committed, dict):
        for key in sorted(set(fresh) | set(committed), key=str):
            if key in _IGNORED:
                continue
            if key not in fresh or key not in committed:
                out.append(f"{where}/{key}: only in {'fresh' if key in fresh else 'committed'}")
            else:
                _diff(fresh[key], committed[key], f"{where}/{key}", out)
    elif isinstance(fresh, list) and isinstance(committed, list) and len(fresh) == len(committed):
        for i, (a, b) in enumerate(zip(fresh, committed, strict=True)):
            _diff(a, b, f"{where}/{i}", out)
    elif not _close(fresh, committed):
        out.append(f"{where}: fresh {fresh!r}, committed {committed!r}")


def differences(fresh_dir: Path, committed_dir: Path, grid: str) -> list[str] | None:
    """Lines naming every disagreement beyond RTOL/ATOL of ``verify-<grid>`` (claims and raw
    records, by setting); None if nothing is committed for that grid.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> a, b = (pathlib.Path(tempfile.mkdtemp()) for _ in range(2))
    >>> for d, x in ((a, 1.0), (b, 1.1)):
    ...     _ = (d / "verify-g.json").write_text(json.dumps({"claims": [{"measured": x}]}))
    ...     _ = (d / "verify-g.jsonl").write_text("")
    >>> differences(a, b, "g")
    ['verify-g.json/claims/0/measured: fresh 1.0, committed 1.1']
    """
    claims, raw = f"verify-{grid}.json", f"verify-{grid}.jsonl"
    if not (committed_dir / claims).exists():
        return None
    out: list[str] = []
    _diff(read_json(fresh_dir / claims), read_json(committed_dir / claims), claims, out)
    by_key = {r["key"]: r for r in read_results(committed_dir / raw)} \
        if (committed_dir / raw).exists() else {}
    fresh = {r["key"]: r for r in read_results(fresh_dir / raw)}
    for key in sorted(set(fresh) | set(by_key)):
        name = f"{raw}[{(fresh.get(key) or by_key[key])['setting']}]"
        _diff(fresh.get(key, {}), by_key.get(key, {}), name, out)
    return out
