"""Result files: trajectories and reports as JSON, with versions and settings stamped in."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from ._compile import atomic_write as _atomic_write

__all__ = ["read_json", "trajectory_record", "write_json"]


def _clean(value):
    """JSON-safe copy: arrays to lists, non-finite floats to None."""
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    if isinstance(value, np.ndarray):
        return _clean(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def trajectory_record(trajectory) -> dict:
    """The ``solve --json`` document plus the output arrays, for figures and archives.

    Examples
    --------
    >>> from reduced_odes import solve
    >>> from reduced_odes.models.induction_head import ModelParams
    >>> record = trajectory_record(solve(ModelParams(L=50, sigma=1e-2)))
    >>> sorted(record["series"])[:3]
    ['L_G4', 'L_IH', 'log_w_kq']
    """
    document = trajectory.to_dict()
    document["series"] = {"t": trajectory.t, **trajectory.series}
    return _clean(document)


def write_json(path: str | Path, document: dict) -> Path:
    """Write ``document`` atomically as indented JSON (sorted keys: stable diffs)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    _atomic_write(path, json.dumps(_clean(document), indent=1, sort_keys=True) + "\n")
    return path


def read_json(path: str | Path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))
