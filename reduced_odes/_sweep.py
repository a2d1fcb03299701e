"""Resumable parameter sweeps, run through any :class:`concurrent.futures.Executor`.

Each finished task appends one JSON line ``{"key", "setting", "result" | "error",
"metadata"}`` to a results file; a rerun skips settings that already have a
``"result"`` line and retries the rest.  Only the calling process writes the file.
"""

import concurrent.futures as cf
import hashlib
import itertools
import json
import os
import sys
import time
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

__all__ = ["SweepReport", "expand_grid", "load_grid", "read_results", "run_sweep", "setting_key"]

Setting = dict[str, Any]
_HEAD = b'{"key": "'  # how every results line starts


def _tolist(value: Any) -> Any:
    """JSON fallback for numpy scalars and arrays."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def expand_grid(spec: Mapping[str, Any]) -> list[Setting]:
    """Cartesian product of a spec mapping names to a list (or tuple) of values or a scalar.

    The first parameter varies slowest; values keep their listed order.

    Examples
    --------
    >>> expand_grid({"L": [50, 200], "closure": "linear"})
    [{'L': 50, 'closure': 'linear'}, {'L': 200, 'closure': 'linear'}]
    >>> [(s["a"], s["b"]) for s in expand_grid({"a": [1, 2], "b": [3, 4]})]
    [(1, 3), (1, 4), (2, 3), (2, 4)]
    """
    axes = [value if isinstance(value, list | tuple) else [value] for value in spec.values()]
    return [dict(zip(spec, combo, strict=True)) for combo in itertools.product(*axes)]


def load_grid(path: str | os.PathLike[str]) -> list[Setting]:
    """Read settings from a TOML file with a ``[grid]`` table and an optional ``[fixed]`` table.

    ``[grid]`` is expanded with :func:`expand_grid`; several ``[[grid]]`` tables give the
    union of their products without duplicates.  ``[fixed]`` is merged into every setting.
    Raises :class:`ValueError` naming the file if it is not valid TOML of that shape.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "grid.toml"
    >>> _ = path.write_text('[grid]\\nL = [50, 200]\\n[fixed]\\nmethod = "LSODA"\\n')
    >>> load_grid(path)
    [{'L': 50, 'method': 'LSODA'}, {'L': 200, 'method': 'LSODA'}]
    """
    try:
        with open(path, "rb") as fh:
            doc = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path}: invalid TOML: {exc}") from exc
    if unknown := sorted(set(doc) - {"grid", "fixed"}):
        raise ValueError(f"{path}: unknown top-level key(s) {unknown}; expected [grid], [fixed]")
    grids, fixed = doc.get("grid"), doc.get("fixed", {})
    grids = [grids] if isinstance(grids, dict) else grids
    if not grids or not isinstance(grids, list) or not all(isinstance(g, dict) for g in grids):
        raise ValueError(f"{path}: needs a [grid] table or [[grid]] tables")
    if not isinstance(fixed, dict):
        raise ValueError(f"{path}: [fixed] must be a table")
    unique: dict[str, Setting] = {}
    for grid in grids:
        if clash := sorted(set(grid) & set(fixed)):
            raise ValueError(f"{path}: parameter(s) {clash} appear in both [grid] and [fixed]")
        for setting in expand_grid(grid):
            unique.setdefault(setting_key(setting | fixed), setting | fixed)
    return list(unique.values())


def setting_key(setting: Mapping[str, Any]) -> str:
    """Stable key of a setting: sha256 of its JSON with sorted keys (floats via ``repr``).

    Examples
    --------
    >>> setting_key({"b": 0.1, "a": 1}) == setting_key({"a": 1, "b": 0.1}) != setting_key({"a": 1})
    True
    """
    canonical = json.dumps(dict(setting), sort_keys=True, separators=(",", ":"), default=_tolist)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _parse(data: bytes, name: Any) -> tuple[list[dict[str, Any]], int]:
    """Records in ``data`` and the end of its committed part (lines with their newline)."""
    *lines, tail = data.split(b"\n")
    if not _HEAD.startswith(tail.strip()[: len(_HEAD)]):  # a torn line starts like a record
        raise ValueError(f"{name}:{len(lines) + 1}: not a results line: {tail[:40]!r}")
    records = []
    for lineno, line in enumerate(lines, 1):
        try:
            if line.strip():
                records.append(json.loads(line))  # JSON and UTF-8 errors are ValueErrors
                if not isinstance(records[-1], dict) or "key" not in records[-1]:
                    raise ValueError("not a sweep record")
        except ValueError as exc:
            raise ValueError(f"{name}:{lineno}: corrupt results line: {exc}") from exc
    return records, len(data) - len(tail)


def read_results(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """All records (successes and errors) of a results file, in file order.

    A last line without its newline (torn by a killed writer) is ignored.
    """
    return _parse(Path(path).read_bytes(), path)[0]


@dataclass(frozen=True)
class SweepReport:
    """Outcome of :func:`run_sweep`."""

    total: int  # distinct settings requested
    skipped: int  # already done before this run
    completed: int  # run now, succeeded
    failed: int  # run now, raised (error line written)
    results_path: Path
    records: list[dict[str, Any]]  # successful records after the run, in the order of settings


def _progress(show: bool, outcomes: dict, total: int, start: float, end: str = "") -> None:
    """Progress line: count/total, percent, elapsed time and ETA from the mean completion rate."""
    if show:
        count, elapsed = sum(outcomes.values()), time.monotonic() - start
        eta = timedelta(seconds=round(elapsed / count * (total - count))) if count else "?"
        failed = f", {outcomes[False]} failed" if outcomes[False] else ""
        print(f"\rsweep {count}/{total} ({100 * count // total}%) elapsed "
              f"{timedelta(seconds=round(elapsed))} eta {eta}{failed}  ", end=end, file=sys.stderr,
              flush=True)


def _line(key: str, setting: Setting, future: cf.Future, metadata: dict) -> tuple[bytes, bool]:
    """The results line of a finished future, and whether it records a success."""
    record: dict[str, Any] = {"key": key, "setting": setting}
    try:
        line = json.dumps(record | {"result": future.result(), "metadata": metadata},
                          default=_tolist)
    except cf.BrokenExecutor:  # the executor died: not this setting's fault
        raise
    except Exception as exc:  # the task raised, or its result is not JSON serialisable
        record |= {"error": f"{type(exc).__name__}: {exc}", "metadata": metadata}
        return json.dumps(record, default=_tolist).encode() + b"\n", False
    return line.encode() + b"\n", True


def run_sweep(
    settings: Iterable[Mapping[str, Any]],
    task: Callable[[Setting], Mapping[str, Any]],
    results_path: str | os.PathLike[str],
    *,
    executor: cf.Executor | None = None,
    max_workers: int | None = None,
    progress: bool | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> SweepReport:
    """Run ``task`` on each setting not yet done, appending one JSON line per finished task.

    Parameters
    ----------
    settings
        Parameter dicts; duplicates (same :func:`setting_key`) run once.
    task
        Picklable ``task(setting) -> dict`` with a JSON-serialisable result; if it raises,
        an ``"error"`` line is written and the setting is retried by the next run.
    results_path
        JSON Lines file; settings with a ``"result"`` line in it are skipped.
    executor
        E.g. dask's ``client.get_executor()``; left running.  Default: a
        ``ProcessPoolExecutor(max_workers)``, shut down on return.
    progress
        Progress line with ETA on stderr; None: only if stderr is a terminal.
    metadata
        JSON-serialisable dict (versions, solver settings, ...) stored in every line.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from concurrent.futures import ThreadPoolExecutor
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "squares.jsonl"
    >>> square = lambda s: {"y": s["x"] ** 2}
    >>> with ThreadPoolExecutor(2) as pool:
    ...     first = run_sweep(expand_grid({"x": [1, 2, 3]}), square, path, executor=pool)
    ...     again = run_sweep(expand_grid({"x": [1, 2, 3]}), square, path, executor=pool)
    >>> [r["result"]["y"] for r in first.records], first.completed, again.skipped, again.completed
    ([1, 4, 9], 3, 3, 0)
    """
    if executor is not None and max_workers is not None:
        raise ValueError("max_workers only applies to the default executor")
    path, metadata = Path(results_path), dict(metadata or {})
    json.dumps(metadata, default=_tolist)  # fail early if it is not serialisable
    todo: dict[str, Setting] = {}
    for setting in settings:
        todo.setdefault(setting_key(setting), dict(setting))
    data = path.read_bytes() if path.exists() else b""
    records, intact = _parse(data, path)
    if intact < len(data):  # cut a torn last line, so that appends start on a fresh line
        os.truncate(path, intact)
    done = {record["key"] for record in records if "result" in record}
    pending = {key: setting for key, setting in todo.items() if key not in done}
    outcomes, futures, start = {True: 0, False: 0}, {}, time.monotonic()
    pool = cf.ProcessPoolExecutor(max_workers) if executor is None else executor
    show = bool(pending) and (sys.stderr.isatty() if progress is None else progress)
    _progress(show, outcomes, len(pending), start)
    try:
        with open(path, "ab") as fh:
            for key, setting in pending.items():
                futures[pool.submit(task, dict(setting))] = key
            for future in cf.as_completed(futures):
                line, ok = _line(futures[future], pending[futures[future]], future, metadata)
                fh.write(line)  # one write of the whole line, then force it to disk
                fh.flush()
                os.fsync(fh.fileno())
                outcomes[ok] += 1
                _progress(show, outcomes, len(pending), start)
    except BaseException:  # e.g. KeyboardInterrupt: finished lines stay, the rest is dropped
        for future in futures:
            future.cancel()
        if executor is None:
            pool.shutdown(wait=False, cancel_futures=True)
        raise
    finally:
        _progress(show, outcomes, len(pending), start, end="\n")
    if executor is None:
        pool.shutdown()
    successes = {r["key"]: r for r in reversed(read_results(path)) if "result" in r}
    return SweepReport(
        total=len(todo), skipped=len(todo) - len(pending), completed=outcomes[True],
        failed=outcomes[False], results_path=path,
        records=[successes[key] for key in todo if key in successes],
    )
