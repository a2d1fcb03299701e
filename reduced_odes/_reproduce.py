"""The main job (:func:`reproduce`) and its safety net: fresh results against the committed
ones, and stable figures.

``reduced-odes reproduce`` computes into a working directory and compares with the
committed data under :data:`RTOL` / :data:`ATOL`; the committed files change only with
``--update-committed``.
"""

from __future__ import annotations

import math
import shutil
import sys
from concurrent.futures import Executor, Future
from pathlib import Path
from typing import Any

from ._compile import load_system
from ._errors import EXIT_DIFFERS, EXIT_FAILED, EXIT_OK
from ._figstyle import parse_formats
from ._io import atomic_write
from ._pool import process_pool
from ._prepare import derive_models
from ._registry import get_model, reference, registered_models
from ._results import read_json, results_line
from ._results_file import read_results
from ._verify import check_grid, verdict, verify

__all__ = ["ATOL", "FIGURE_DIGITS", "RTOL", "differences", "reproduce", "rounded"]

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
#: ``retried``: which settings a machine retried on another backend is the solver's
#: story, like ``solver``; the numbers are compared.
_IGNORED = frozenset({"solver", "metadata", "versions", "platform", "files", "stats",
                      "retried"})


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


def reproduce(*, grid: str = "default", results: str | Path = "results",
              figures: str | Path = "figures", derivations: str | Path = "derivations",
              update_committed: bool = False, only: str | None = None,
              backend: str = "python") -> int:
    """The main job: every model (or ``only`` one) derived, verified on ``grid``, drawn, and
    compared with the committed data; the exit status (the worst of the models').

    ``results`` is the working directory (``<results>/<model>``: the resumable verify runs,
    ``<results>/figures`` and ``<results>/derivations``); ``figures`` is the root of the
    committed figures and their data (``<figures>/data/<model>``), ``derivations`` that of
    the committed derivations.  With ``update_committed`` the fresh files are copied over
    the committed ones instead of being compared.  ``backend``: as for
    :func:`~reduced_odes.verify`.  The directories are the caller's to check writable.

    One process pool beside the verifications does the rest of the work: first the
    derivations, then each model's exported documents, then its figures once its
    verification is done.  The job's steps that need no integration (SymPy, matplotlib)
    so overlap the integrations instead of following them.
    """
    models = [get_model(only)] if only else registered_models()
    committed = (Path(figures), Path(derivations))
    work = Path(results)
    with process_pool(None, 2 * len(models)) as side:
        derive_models(models, grid, side)
        exports = {model.name: side.submit(_export, reference(model), work / "derivations")
                   for model in models if model.supports("export_derivations")}
        runs = [_reproduce_one(model, grid, work, committed, update_committed, backend,
                               side, exports.get(model.name)) for model in models]
        for model, (_, drawn) in zip(models, runs, strict=True):
            if drawn is not None:
                _wrote(drawn.result())
            if update_committed:
                _update_committed(model, grid, work, committed)
    return max(status for status, _ in runs)


def _export(ref: str, directory: Path) -> list[Path]:
    """A model's exported derivations, written into ``directory`` (a pool's task)."""
    return get_model(ref).export_derivations(_directory(directory))


def _draw(ref: str, directory: Path, data: Path) -> list[Path]:
    """A model's figures, drawn from ``data`` into ``directory`` (a pool's task)."""
    return get_model(ref).figures(_directory(directory), data, parse_formats("png,pdf"))


def _reproduce_one(model, grid: str, work: Path, committed: tuple[Path, Path], update: bool,
                   backend: str, side: Executor, export: Future | None
                   ) -> tuple[int, Future | None]:
    """Verify one model on ``grid`` into ``work`` and compare with the committed data, its
    derivations exported (``export``) and its figures handed to ``side``; its exit status
    and the figures' future."""
    figures, _ = committed
    data = work / "figures" / "data" / model.name
    status = EXIT_OK
    print(f"== {model.name}", flush=True)
    if model.supports("claims"):
        fresh = work / model.name
        check_grid(model, grid)
        report = verify(model, grid, "all", _directory(fresh), progress=True,
                        backend=backend)
        print(verdict(report))
        status = EXIT_OK if report.passed else EXIT_FAILED
        _figure_data(figures / "data" / model.name, fresh, _directory(data), grid)
        differs = _compared(model, fresh, figures / "data" / model.name, grid)
        status = max(status, EXIT_OK if update else differs)
    if export is not None:
        _wrote(export.result())
    if not any(model.supports(hook) for hook in ("export_derivations", "claims", "figures")):
        _say_derived(model)
    drawn = side.submit(_draw, reference(model), work / "figures" / model.name, data) \
        if model.supports("figures") else None
    return status, drawn


def _say_derived(model) -> None:
    """The line of a model that supplies nothing to reproduce but its flow, derived and
    compiled (by :func:`~reduced_odes._prepare.derive_models`)."""
    shown = "; ".join(f"{variant}: {', '.join(load_system(model, variant).coordinate_names)}"
                      for variant in model.variants)
    print(f"{model.name}: flow derived and compiled ({shown}); no derivation export, claims "
          f"or figures to reproduce")


def _directory(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def _wrote(paths) -> None:
    for path in paths:
        print(f"wrote {path}")


def _figure_data(committed: Path, fresh: Path, data: Path, grid: str) -> None:
    """Fill the figures' data directory: the committed files, then the fresh verify run,
    its numbers rounded to what a figure shows (the same bytes on every machine)."""
    if committed.is_dir():
        shutil.copytree(committed, data, dirs_exist_ok=True)
    raw = fresh / f"verify-{grid}.jsonl"
    if raw.exists():
        atomic_write(data / raw.name, "".join(results_line(rounded(r))
                                              for r in read_results(raw)))


def _compared(model, fresh: Path, committed: Path, grid: str) -> int:
    """EXIT_DIFFERS (and the differences on stderr) if the fresh run disagrees."""
    found = differences(fresh, committed, grid)
    if found is None:
        print(f"{model.name}: no committed verify-{grid} in {committed}; nothing to compare")
        return EXIT_OK
    if not found:
        print(f"{model.name}: verify-{grid} agrees with {committed} "
              f"(rtol {RTOL:g}, atol {ATOL:g})")
        return EXIT_OK
    print(f"reduced-odes reproduce: {model.name}: {len(found)} value(s) differ from {committed} "
          f"beyond rtol {RTOL:g}, atol {ATOL:g}:", file=sys.stderr)
    for line in found[:40]:
        print(f"  {line}", file=sys.stderr)
    return EXIT_DIFFERS


def _update_committed(model, grid: str, work: Path, committed: tuple[Path, Path]) -> None:
    """Copy the fresh verify files, figures and derivations over the committed ones."""
    figures, derivations = committed
    pairs = [(work / model.name, figures / "data" / model.name, f"verify-{grid}.*"),
             (work / "figures" / model.name, figures / model.name, "*"),
             (work / "derivations", derivations, f"{model.name}.*")]
    for source, target, pattern in pairs:
        for path in sorted(source.glob(pattern)) if source.is_dir() else []:
            if path.is_file():
                target.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target / path.name)
                print(f"updated {target / path.name}")
