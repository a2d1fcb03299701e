"""Verify a model's claims on a grid: sweep, measure, and a verdict per claim.

The model supplies the grid (``verify_settings``), the measurement of one
setting (``measure``, run in worker processes through the resumable sweep
engine) and the claims (``claims``: prediction against measurement, each with
its tolerance).  This module runs them and writes the verdict.
"""

from __future__ import annotations

import functools
import json
import math
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ._backend import for_job, preferred_backend
from ._claims import Claim  # re-exported: the verdict row of the model contract
from ._contract import Model
from ._io import atomic_write
from ._params import ParameterError, SolverConfig
from ._prepare import prepare
from ._provenance import platform_stamp, source_stamp, versions
from ._registry import get_model, reference
from ._results import results_line
from ._retries import noting_retries
from ._sweep import run_sweep

__all__ = ["RETRIED", "Claim", "VerifyReport", "check_grid", "informative", "measure_task",
           "verdict", "verify", "worst"]

#: Key of a raw result that lists the setting's runs retried on another backend or stepper
#: (present only if one was): one line each, the run and why its first attempt failed.
RETRIED = "retried"


def informative(claim: Claim) -> Claim:
    """The same row, reported but not counted in the verdict.

    Examples
    --------
    >>> row = informative(Claim("beyond the regime", 1.0, 1.5, 0.5, 0.01, False))
    >>> row.informative, row.passed
    (True, False)
    """
    return Claim(claim.name, claim.predicted, claim.measured, claim.error, claim.tolerance,
                 claim.passed, claim.detail, informative=True)


def worst(name: str, rows: Sequence[tuple[float, float, float, str]], tolerance: float,
          variant: str = "") -> Claim:
    """Claim from per-group ``(predicted, measured, error, label)`` rows: the largest error.

    Errors that agree to 3 significant digits tie; the first in the given (grid) order wins.

    Examples
    --------
    >>> worst("slope", [(1.0, 1.01, 0.01, "a"), (1.0, 1.03, 0.03, "b")], 0.05).measured
    1.03
    """
    rows = [r for r in rows if math.isfinite(r[2])]
    label = f"{name} [{variant}]" if variant else name
    if not rows:
        return Claim(label, math.nan, math.nan, math.nan, tolerance, False, "no data")
    # Errors equal to 3 significant digits are a tie, broken by the (canonical) grid order:
    # round-off differences between machines then never change which row is reported.
    predicted, measured, error, where = max(rows, key=lambda r: float(f"{r[2]:.3g}"))
    return Claim(label, predicted, measured, error, tolerance, error <= tolerance,
                 f"worst of {len(rows)}: {where}")


def _sorted(value):
    """``value`` with every mapping's keys sorted (stable files, whatever the worker order)."""
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value)}
    return [_sorted(v) for v in value] if isinstance(value, list) else value


def _fmt(value) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    return f"{value:.4g}"


@dataclass
class VerifyReport:
    """Claims, raw records, skipped settings and the output files of one verification.

    Examples
    --------
    >>> report = VerifyReport("toy", "quick", [Claim("slope", 2.0, 2.01, 0.005, 0.01, True),
    ...                       informative(Claim("tail", 1.0, 1.5, 0.5, 0.01, False))], [], [])
    >>> report.passed  # the informative row is not counted
    True
    >>> print(report.table())
    | claim | predicted | measured | error | tolerance | verdict |
    |---|---|---|---|---|---|
    | slope | 2 | 2.01 | 0.005 | 0.01 | PASS |
    | tail | 1 | 1.5 | 0.5 | 0.01 | (fail, info) |
    """

    model: str
    grid: str
    claims: list[Claim]
    records: list[dict]
    skipped: list[dict]
    files: dict[str, str] = field(default_factory=dict)
    metadata: dict = field(default_factory=dict)
    #: The solver settings the trajectories ran with (the backend resolved).
    solver: dict = field(default_factory=lambda: SolverConfig(backend="python").as_dict())
    #: The settings with a run retried on another backend or stepper: ``{"setting",
    #: "retries"}`` each (listed under the table, and in the claims file if any).
    retried: list[dict] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.claims if not c.informative)

    def table(self) -> str:
        """The verdict table as GitHub Markdown."""
        rows = ["| claim | predicted | measured | error | tolerance | verdict |",
                "|---|---|---|---|---|---|"]
        for c in self.claims:
            word = "PASS" if c.passed else "FAIL"
            verdict = f"({word.lower()}, info)" if c.informative else word
            rows.append(f"| {c.name} | {_fmt(c.predicted)} | {_fmt(c.measured)} | "
                        f"{_fmt(c.error)} | {_fmt(c.tolerance)} | {verdict} |")
        if self.retried:
            rows += ["", f"Retried on another backend or stepper: {len(self.retried)} "
                         f"setting(s) (in the claims file under {RETRIED!r})"]
            rows += [f"- {row['setting']}: {'; '.join(row['retries'])}"
                     for row in self.retried[:10]]
            rows += [f"- and {len(self.retried) - 10} more"] if len(self.retried) > 10 else []
        return "\n".join(rows)

    def as_dict(self) -> dict:
        return {"model": self.model, "grid": self.grid, "passed": self.passed,
                "claims": [c.as_dict() for c in self.claims], **self.metadata,
                "skipped": self.skipped, "files": self.files,
                "solver": self.solver, "versions": versions(),
                "platform": platform_stamp(), **({RETRIED: self.retried} if self.retried else {})}


def measure_task(setting: Mapping, backend: str = "python") -> dict:
    """The sweep task of :func:`verify`: ``setting["model"]``'s ``measure`` of the rest,
    its trajectories on ``backend`` (what ``SolverConfig(backend="auto")`` means there).

    Module level, so that worker processes (and dask) can pickle it by name.
    """
    setting = dict(setting)
    with preferred_backend(backend), noting_retries() as retries:
        measurement = get_model(setting.pop("model")).measure(setting)
    return {**measurement, RETRIED: retries} if retries else measurement


def check_grid(model: Model, grid: str) -> None:
    """A :class:`ParameterError` unless ``model`` supplies claims and ``grid`` is one of its
    grids: what :func:`verify` checks first, and the ``verify`` command before it creates
    any directory.

    Examples
    --------
    >>> check_grid(get_model("two_mixture"), "quick")
    >>> check_grid(get_model("two_mixture"), "huge")
    Traceback (most recent call last):
    ...
    reduced_odes._params.ParameterError: grid='huge'; allowed: quick, default, full
    """
    if not model.supports("claims"):
        raise ParameterError(f"model={model.name!r} supplies no claims to verify")
    if not model.grids:
        raise ParameterError(f"model={model.name!r} declares no verification grid (grids = ()); "
                             f"allowed: a model whose grids name at least one")
    if grid not in model.grids:
        raise ParameterError(f"grid={grid!r}; allowed: {', '.join(model.grids)}")


def _shown(progress: bool | None) -> bool:
    """Whether progress goes to stderr: as asked, else only on a terminal."""
    return sys.stderr.isatty() if progress is None else progress


def verify(model, grid: str = "quick", variant: str | None = None,
           out: str | Path | None = None, *, executor=None, max_workers: int | None = None,
           progress: bool | None = None, backend: str = "auto") -> VerifyReport:
    """Run a model's verification grid and evaluate every claim.

    Parameters
    ----------
    model : Model or str
        A model that supplies ``verify_settings``, ``measure`` and ``claims``.
    grid : str
        One of ``model.grids``.
    variant : str, optional
        One variant, or None / ``"all"`` for every variant.
    out : path, optional
        Directory for ``verify-<grid>.jsonl`` (raw per-setting results, resumable),
        ``verify-<grid>.json`` (claims) and ``verify-<grid>.md`` (table).
    executor : concurrent.futures.Executor, optional
        Where settings run (default: a process pool on all cores).
    max_workers : int, optional
        Processes of the default pool (capped at the cores and the settings).
    progress : bool, optional
        Progress on stderr (None: only on a terminal): a line while each system not yet
        in the cache is derived, then the count of settings with its ETA (from then on).
    backend : {"auto", "python", "numba"}
        Where the trajectories run; ``auto``: numba when installed and the grid
        is large (:func:`reduced_odes._backend.for_job`), else python.

    Examples
    --------
    The committee machine's quick grid for linear units (one setting), in this process:

    >>> from concurrent.futures import ThreadPoolExecutor
    >>> with ThreadPoolExecutor(1) as pool:
    ...     report = verify("committee_machine", "quick", "linear", executor=pool,
    ...                     progress=False)
    >>> report.passed, [claim.name for claim in report.claims]
    (True, ['student learns the teacher (K = M, no noise)'])
    >>> sorted(report.files)
    ['claims', 'raw', 'table']
    """
    model = get_model(model)
    check_grid(model, grid)
    variants = _variants(model, variant)
    settings, skipped = model.verify_settings(grid, variants)
    backend = for_job(backend, len(settings))
    out_dir = Path(out) if out is not None else Path(tempfile.mkdtemp(prefix="reduced-odes-"))
    out_dir.mkdir(parents=True, exist_ok=True)
    raw = out_dir / f"verify-{grid}.jsonl"
    metadata = _run_metadata(backend)
    records, retried = _without_retries(_measured(model, variants, settings, raw, metadata,
                                                  executor, max_workers, progress))
    claims = list(model.claims(records, variants))
    extra = model.verify_metadata() if model.supports("verify_metadata") else {}
    report = VerifyReport(model.name, grid, claims, records, skipped,
                          {"raw": str(raw), "claims": str(out_dir / f"verify-{grid}.json"),
                           "table": str(out_dir / f"verify-{grid}.md")}, extra,
                          metadata["solver"], retried)
    atomic_write(Path(report.files["claims"]), json.dumps(report.as_dict(), indent=2) + "\n")
    atomic_write(Path(report.files["table"]), report.table() + "\n")
    return report


def _variants(model: Model, variant: str | None) -> list[str]:
    """The variants ``variant`` names: itself, or (None or ``"all"``) every verified one."""
    if variant in (None, "all"):
        return list(model.verified_variants or model.variants)
    return [model.resolve_variant(variant)]


def _run_metadata(backend: str) -> dict:
    """What every result line records, and a resume must match (the sweep's ``RESUME_KEYS``)."""
    return {"versions": versions(), "solver": SolverConfig(backend=backend).as_dict(),
            "source": source_stamp()}


def _measured(model: Model, variants: list[str], settings: list[dict], raw: Path,
              metadata: dict, executor, max_workers: int | None,
              progress: bool | None) -> list[dict]:
    """The result lines of every setting, run (or resumed) into ``raw`` by :func:`run_sweep`;
    the file rewritten in grid order once complete."""
    backend = metadata["solver"]["backend"]
    sweep = run_sweep([{"model": reference(model), **s} for s in settings],
                      functools.partial(measure_task, backend=backend), raw,
                      executor=executor, max_workers=max_workers, progress=progress,
                      metadata=metadata,
                      prepare=lambda pending: prepare(model, variants, backend, pending,
                                                      show=_shown(progress)))
    if len(sweep.records) == len(settings):
        # Complete: rewrite in grid order, so the file does not depend on worker timing.
        atomic_write(raw, "".join(results_line(_sorted(r)) for r in sweep.records))
    return sweep.records


def _without_retries(records: list[dict]) -> tuple[list[dict], list[dict]]:
    """The records with the model's own measurement, as it returned it, and the retries
    (backend fallbacks) noted beside it, by setting."""
    retried = [{"setting": r["setting"], "retries": r["result"][RETRIED]} for r in records
               if RETRIED in r["result"]]
    return [{**r, "result": {k: v for k, v in r["result"].items() if k != RETRIED}}
            for r in records], retried


def verdict(report: VerifyReport) -> str:
    """The verdict as the ``verify`` command prints it: the table, the skipped settings and
    the count of claims passed."""
    checked = [c for c in report.claims if not c.informative]
    return "\n".join([report.table(), *(f"skipped: {row}" for row in report.skipped),
                      f"\n{sum(c.passed for c in checked)} of {len(checked)} claims passed "
                      f"({len(report.claims) - len(checked)} informative rows); "
                      f"raw results in {report.files['raw']}"])
