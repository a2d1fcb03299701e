"""Phase diagrams: a phase time or a final observable over two parameters, on the sweep
machinery (resumable; the native backend for large grids), with its data and a heatmap.

The settings are the model's defaults (or the given base values) with the two
parameters crossed on their axes.  Each finished setting is one line of the results
file (:func:`~reduced_odes.run_sweep`), so a rerun resumes; the data file holds the
axes and the value matrix (``null`` where the phase was not reached), and the figure is
drawn from it alone.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ._backend import for_job, resolve
from ._figstyle import new_figure, save_figure
from ._integrate import solve
from ._params import ParameterError
from ._prepare import prepare
from ._registry import get_model, reference
from ._results import read_json, setting_key, write_json
from ._results_file import read_results
from ._setting import Setting
from ._sweep import run_sweep

__all__ = ["Axis", "diagram_task", "draw_phase_diagram", "phase_diagram"]


@dataclass(frozen=True)
class Axis:
    """One parameter's values: ``num`` points from ``lo`` to ``hi``, log-spaced if ``log``.

    Examples
    --------
    >>> Axis("eta", 0.1, 1.0, 3).values().tolist()
    [0.1, 0.55, 1.0]
    >>> round(float(Axis("asymmetry", 1e-10, 1e-4, 4, log=True).values()[1]), 20)
    1e-08
    """

    name: str
    lo: float
    hi: float
    num: int
    log: bool = False

    def values(self) -> np.ndarray:
        if not (2 <= self.num <= 10_000 and math.isfinite(self.lo) and math.isfinite(self.hi)
                and self.lo < self.hi and (not self.log or self.lo > 0)):
            raise ParameterError(f"axis {self.name}: from={self.lo!r}, to={self.hi!r}, "
                                 f"num={self.num!r}; allowed: from < to, finite (> 0 on a log "
                                 f"axis), 2 <= num <= 10000")
        if self.log:
            return np.logspace(math.log10(self.lo), math.log10(self.hi), self.num)
        return np.linspace(self.lo, self.hi, self.num)


def diagram_task(setting: Mapping[str, Any]) -> dict[str, Any]:
    """The sweep task: solve one setting and read ``setting["quantity"]``: a phase time, or
    a series' final value (``None`` when the phase is not reached).

    Examples
    --------
    >>> task = {"model": "deep_linear", "s": 2.0, "sigma": 1e-4, "quantity": "T_half"}
    >>> round(diagram_task(task)["value"], 4)
    4.7785
    """
    values = dict(setting)
    quantity = values.pop("quantity")
    parsed = Setting.from_mapping(values)
    if resolve(parsed.solver.backend) == "numba" and quantity in parsed.model.phase_order:
        from ._native._phase_times import phase_time  # numba only where it is selected

        return {"value": phase_time(parsed, quantity)}
    trajectory = solve(parsed)
    value = trajectory.phases[quantity] if quantity in trajectory.phases else \
        trajectory.final[quantity]
    return {"value": float(value) if math.isfinite(value) else None}


def _settings(model, base: Mapping[str, Any], x: Axis, y: Axis, quantity: str,
              backend: str) -> list[dict[str, Any]]:
    fields = {f.name for f in model.Params.declared()}
    for axis in (x, y):
        if axis.name not in fields or axis.name in model.structural:
            raise ParameterError(f"axis {axis.name!r} is not a continuous parameter of model "
                                 f"{model.name!r}; allowed: "
                                 f"{', '.join(sorted(fields - set(model.structural)))}")
    common = {"model": reference(model), **base, "backend": backend, "quantity": quantity}
    settings = [{**common, x.name: float(a), y.name: float(b)}
                for b in y.values() for a in x.values()]
    probe = {k: v for k, v in settings[0].items() if k != "quantity"}
    trajectory_names = set(model.phase_order)
    Setting.from_mapping(probe, model)  # bad base values fail here, before any work
    if quantity not in trajectory_names and not quantity.isidentifier():
        raise ParameterError(f"quantity={quantity!r}; allowed: a phase "
                             f"({', '.join(model.phase_order)}) or a series' name")
    return settings


def phase_diagram(model, x: Axis, y: Axis, quantity: str, out: str | Path, *,
                  base: Mapping[str, Any] | None = None, backend: str = "auto",
                  executor=None, max_workers: int | None = None,
                  progress: bool | None = None) -> dict:
    """``quantity`` over the grid ``x`` by ``y``: resumable in ``out/results.jsonl``, the data
    in ``out/phase_diagram.json``; the data document.

    Examples
    --------
    >>> import tempfile
    >>> data = phase_diagram("deep_linear", Axis("s", 1.0, 2.0, 2),
    ...                      Axis("sigma", 1e-4, 1e-2, 2, log=True), "T_half",
    ...                      tempfile.mkdtemp(), max_workers=1, progress=False)
    >>> [[round(v, 4) for v in row] for row in data["values"]]
    [[9.2103, 4.7785], [4.6051, 2.4759]]
    """
    model = get_model(model)
    out = Path(out)
    settings = _settings(model, dict(base or {}), x, y, quantity,
                         for_job(backend, x.num * y.num))
    variants = sorted({s.get(model.variant_option, model.variants[0]) for s in settings})

    def compile_once(pending: list) -> None:
        prepare(model, variants, settings[0]["backend"])

    out.mkdir(parents=True, exist_ok=True)
    run_sweep(settings, diagram_task, out / "results.jsonl", executor=executor,
              max_workers=max_workers, progress=progress, prepare=compile_once, collect=False)
    found = {setting_key(r["setting"]): r["result"]["value"]
             for r in read_results(out / "results.jsonl") if "result" in r}
    values = [[found.get(setting_key(s)) for s in settings[j * x.num:(j + 1) * x.num]]
              for j in range(y.num)]
    data = {"model": model.name, "quantity": quantity, "base": dict(base or {}),
            "x": {"name": x.name, "log": x.log, "values": x.values().tolist()},
            "y": {"name": y.name, "log": y.log, "values": y.values().tolist()},
            "values": values}
    write_json(out / "phase_diagram.json", data)
    return data


def draw_phase_diagram(data_path: str | Path, stem: str | Path,
                       formats=("png",)) -> list[Path]:
    """The heatmap of a phase diagram's data file (log colours for a positive quantity).

    Examples
    --------
    >>> import tempfile
    >>> out = tempfile.mkdtemp()
    >>> _ = phase_diagram("deep_linear", Axis("s", 1.0, 2.0, 2),
    ...                   Axis("sigma", 1e-4, 1e-2, 2, log=True), "T_half", out,
    ...                   max_workers=1, progress=False)
    >>> [p.name for p in draw_phase_diagram(f"{out}/phase_diagram.json", f"{out}/map")]
    ['map.png']
    """
    from matplotlib.colors import LogNorm

    data = read_json(data_path)
    z = np.array([[np.nan if v is None else v for v in row] for row in data["values"]])
    fig, (ax,) = new_figure(2.8, 1)
    positive = bool(np.nanmin(z) > 0) if np.isfinite(z).any() else False
    mesh = ax.pcolormesh(data["x"]["values"], data["y"]["values"], z, shading="nearest",
                         norm=LogNorm() if positive else None, cmap="viridis")
    for axis, spec in ((ax.set_xscale, data["x"]), (ax.set_yscale, data["y"])):
        axis("log" if spec["log"] else "linear")
    ax.set_xlabel(data["x"]["name"])
    ax.set_ylabel(data["y"]["name"])
    fig.colorbar(mesh, ax=ax, label=data["quantity"])
    return save_figure(fig, stem, formats)
