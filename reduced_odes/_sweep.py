"""Resumable parameter sweeps, run through any :class:`concurrent.futures.Executor`.

Each finished task appends one JSON line ``{"key", "setting", "result" | "error",
"metadata", "check"}`` (:func:`reduced_odes._results.results_line`) to a results file; a
rerun skips settings that already have a ``"result"`` line computed under the same
:data:`RESUME_KEYS` metadata and runs the rest.  Only the calling process writes the file.
The file is read back as a stream (:class:`reduced_odes._results_file.ResultsReader`):
every line is verified, and a resume keeps only the settings still to run.  Settings are
handed to the workers in chunks sized from the measured time per setting.
"""

import concurrent.futures as cf
import json
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sized
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._grid import GridPoint
from ._io import naming
from ._params import warn
from ._pool import process_pool, stop_pool
from ._progress import Progress
from ._results import _tolist, dumps_checked, setting_key
from ._results_file import ResultsReader, read_results, results_lock

__all__ = ["CHUNK_SECONDS", "MAX_CHUNK", "RESUME_KEYS", "SweepReport", "run_sweep"]

#: Metadata a finished line must share with the current run to be reused, where the run
#: states them: results of other code (``source``), other library versions or other
#: solver settings are computed again rather than mixed in.
RESUME_KEYS = ("source", "versions", "solver")


@dataclass(frozen=True)
class SweepReport:
    """Outcome of :func:`run_sweep`.

    Examples
    --------
    A setting whose task raises is counted as failed (its error line is written, and it
    is retried by the next run):

    >>> import pathlib, tempfile
    >>> from concurrent.futures import ThreadPoolExecutor
    >>> from reduced_odes._grid import expand_grid
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "inverses.jsonl"
    >>> with ThreadPoolExecutor(1) as pool:
    ...     report = run_sweep(expand_grid({"x": [1, 2, 0]}), lambda s: {"y": 1 / s["x"]},
    ...                        path, executor=pool, progress=False)
    >>> report.total, report.completed, report.failed, len(report.records)
    (3, 2, 1, 2)
    """

    total: int  # distinct settings requested
    skipped: int  # already done before this run
    completed: int  # run now, succeeded
    failed: int  # run now, raised (error line written)
    results_path: Path
    records: list[dict[str, Any]]  # successful records after the run, in the order of settings


#: A chunk of settings is sized to take about this long in a worker: long enough to
#: amortise the per-task costs (pickling, a round trip, the results file's fsync),
#: short enough that an interrupt loses at most this much finished work per worker.
CHUNK_SECONDS = 0.25
#: Seconds of keying the settings or reading a results file back before their progress is
#: shown (a large file's resume takes minutes: one line per 5% or 30 s in a log).
READ_QUIET_SECONDS = 2.0
MAX_CHUNK = 256


def _run_chunk(task: Callable, settings: list[GridPoint]
               ) -> tuple[list[tuple[bool, Any]], float, BaseException | None]:
    """A worker's job: ``task`` on each setting.

    Returns ``[(ok, result or error)]``, the wall time, and the interrupt (e.g.
    ``KeyboardInterrupt``) that stopped the chunk early, whose finished settings
    the client still writes before raising it.
    """
    start, outcomes = time.perf_counter(), []
    for setting in settings:
        try:
            outcomes.append((True, task(setting)))
        except Exception as exc:  # recorded as this setting's error line, retried next run
            outcomes.append((False, f"{type(exc).__name__}: {exc}"))
        except BaseException as stop:
            return outcomes, time.perf_counter() - start, stop
    return outcomes, time.perf_counter() - start, None


def _lines(keys: list[str], pending: dict[str, GridPoint], future: cf.Future,
           metadata: dict) -> list[tuple[bytes, bool]]:
    """The results lines of a finished chunk, and whether each records a success."""
    try:
        outcomes, _, _ = future.result()
    except cf.BrokenExecutor:  # the executor died: not these settings' fault
        raise
    except Exception as exc:  # e.g. a result that cannot be sent back
        outcomes = [(False, f"{type(exc).__name__}: {exc}")] * len(keys)
    try:  # the same metadata in every line: encoded once
        tail = {"metadata": json.dumps(metadata, allow_nan=False)}
    except ValueError:  # a non-finite value: listed in each line's null_reasons
        tail = None

    def written(record: dict[str, Any]) -> str:
        return dumps_checked(record, tail) if tail else dumps_checked(record | {"metadata":
                                                                                 metadata})

    lines = []
    for key, (ok, value) in zip(keys, outcomes, strict=False):  # an interrupted chunk is short
        record: dict[str, Any] = {"key": key, "setting": pending[key]}
        if ok:
            try:
                lines.append((written(record | {"result": value}), True))
                continue
            except Exception as exc:  # the result is not JSON serialisable
                value = f"{type(exc).__name__}: {exc}"
        lines.append((written(record | {"error": value}), False))
    return [(line.encode() + b"\n", ok) for line, ok in lines]


class _Chunks:
    """The pending keys, handed out in chunks sized from the measured time per task."""

    def __init__(self, keys: list[str], slots: int):
        self.keys, self.slots, self.pos, self.size = keys, slots, 0, 1

    def next(self) -> list[str]:
        left = len(self.keys) - self.pos
        size = min(self.size, max(1, -(-left // self.slots)))  # keep every slot busy to the end
        chunk = self.keys[self.pos:self.pos + size]
        self.pos += len(chunk)
        return chunk

    def learn(self, tasks: int, seconds: float) -> None:
        per_task = seconds / max(tasks, 1)
        self.size = MAX_CHUNK if per_task <= 0 else int(min(MAX_CHUNK, max(1, CHUNK_SECONDS
                                                                           / per_task)))


def _slots(pool: cf.Executor) -> int:
    """Chunks in flight: two per worker, so that no worker waits for the client."""
    workers = getattr(pool, "max_workers", None) or getattr(pool, "_max_workers", None) or 4
    return 2 * int(workers)


def run_sweep(
    settings: Iterable[Mapping[str, Any]],
    task: Callable[[GridPoint], Mapping[str, Any]],
    results_path: str | os.PathLike[str],
    *,
    executor: cf.Executor | None = None,
    max_workers: int | None = None,
    progress: bool | None = None,
    metadata: Mapping[str, Any] | None = None,
    prepare: Callable[[list[GridPoint]], None] | None = None,
    collect: bool = True,
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
    max_workers
        Processes of the default executor: by default, and at most, one per core (or setting).
    progress
        Progress on stderr (:class:`~reduced_odes._progress.Progress`); None: if a terminal.
    metadata
        JSON-serialisable dict (versions, solver settings, ...) stored in every line.
    prepare
        Called once with the settings to run (if any) before the first: e.g. to compile.
    collect
        False: ``records`` left empty, the file not read back (a job that reports counts).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from concurrent.futures import ThreadPoolExecutor
    >>> from reduced_odes._grid import expand_grid
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "squares.jsonl"
    >>> grid, square = expand_grid({"x": [1, 2, 3]}), lambda s: {"y": s["x"] ** 2}
    >>> with ThreadPoolExecutor(2) as pool:  # a second run resumes: it skips all three
    ...     first, again = [run_sweep(grid, square, path, executor=pool) for _ in range(2)]
    >>> [r["result"]["y"] for r in first.records], first.completed, again.skipped, again.completed
    ([1, 4, 9], 3, 3, 0)
    """
    if executor is not None and max_workers is not None:
        raise ValueError("max_workers only applies to the default executor")
    path, metadata = Path(results_path), _as_read_back(metadata)
    todo = _keyed(settings, progress)
    with results_lock(path):
        outcomes = _run_pending(todo, task, path, executor, max_workers, progress, metadata,
                                prepare)
        records = _reusable_records(path, metadata, todo) if collect else []
    return SweepReport(total=len(todo), skipped=len(todo) - sum(outcomes.values()),
                       completed=outcomes[True], failed=outcomes[False], results_path=path,
                       records=records)


def _as_read_back(metadata: Mapping[str, Any] | None) -> dict:
    """``metadata`` as a results line reads it back (lists, not tuples), so that it compares
    equal to the metadata of the lines it wrote; fails early if it is not serialisable."""
    return json.loads(json.dumps(dict(metadata or {}), default=_tolist))


def _reusable_records(path: Path, metadata: dict, todo: dict[str, GridPoint]) -> list[dict]:
    """The reusable result line (:func:`_reusable`) of each setting of ``todo`` that has one,
    in ``todo``'s order."""
    successes = {r["key"]: r for r in read_results(path, quiet=True) if _reusable(r, metadata)}
    return [successes[key] for key in todo if key in successes]


def _keyed(settings: Iterable[Mapping[str, Any]], progress: bool | None
           ) -> dict[str, GridPoint]:
    """The distinct settings by key, in their order; past the quiet seconds, a progress
    line (a million settings take about ten seconds)."""
    total = len(settings) if isinstance(settings, Sized) else 0
    report = Progress("keying settings", total, show=progress and total > 0,
                      quiet=READ_QUIET_SECONDS)
    todo: dict[str, GridPoint] = {}
    try:
        for count, setting in enumerate(settings, 1):  # a dict as it is: not held twice
            todo.setdefault(setting_key(setting), setting if type(setting) is dict else
                            dict(setting))
            if count % 1000 == 0:
                report.update(count)
        report.update(total)
    finally:
        report.close()
    return todo


def _reusable(record: dict, metadata: Mapping[str, Any]) -> bool:
    """Whether ``record`` is a result computed under this run's :data:`RESUME_KEYS`."""
    theirs = record.get("metadata") or {}
    return "result" in record and all(theirs.get(k) == metadata[k] for k in RESUME_KEYS
                                      if k in metadata)


def _still_to_run(todo: dict[str, GridPoint], path: Path, metadata: dict,
                  progress: bool | None) -> dict[str, GridPoint]:
    """The settings of ``todo`` without a reusable result in ``path``, which is streamed:
    what is kept of each line is whether its setting is done (memory bounded by ``todo``,
    not by the file).  A torn last line is cut off, so that appends start on a fresh line.
    """
    pending, stale = dict(todo), set()
    reader = ResultsReader(path, hold_warnings=True)
    report = Progress(f"reading {path.name}", os.path.getsize(path), show=progress,
                      quiet=READ_QUIET_SECONDS)
    try:
        for count, (_, record) in enumerate(reader, 1):
            if count % 1000 == 0:  # in bytes: the file's size is known, its lines are not
                report.update(reader.intact)
            key = record["key"]
            if key not in pending:  # done already, or not in this grid
                continue
            if _reusable(record, metadata):
                del pending[key]
                stale.discard(int(key[:16], 16))
            elif "result" in record:
                stale.add(int(key[:16], 16))  # 64 bits of the key: a count, not a lookup
        report.update(reader.intact)
    finally:  # the progress line ends before a warning's or the error's
        report.close()
    reader.give_warnings()
    if reader.intact < os.path.getsize(path):
        os.truncate(path, reader.intact)
    if stale:
        warn(f"{len(stale)} result(s) in {path} were computed under other "
             f"{'/'.join(k for k in RESUME_KEYS if k in metadata)} metadata; computing "
             f"them again")
    return pending


def _run_pending(todo: dict[str, GridPoint], task: Callable, path: Path, executor,
                 max_workers: int | None, progress: bool | None, metadata: dict,
                 prepare: Callable | None) -> dict:
    """Run the settings of ``todo`` without a result in ``path``; ``{ok: count}``."""
    pending = _still_to_run(todo, path, metadata, progress)
    outcomes: dict[bool, int] = {True: 0, False: 0}
    if not pending:
        return outcomes
    if prepare is not None:
        prepare(list(pending.values()))
    pool = process_pool(max_workers, len(pending)) if executor is None else executor
    chunks, inflight = _Chunks(list(pending), _slots(pool)), {}
    report = Progress("sweep", len(pending), show=progress)
    report.update(0)

    def fill() -> None:
        while len(inflight) < chunks.slots and (keys := chunks.next()):
            settings = [dict(pending[key]) for key in keys]
            inflight[pool.submit(_run_chunk, task, settings)] = keys

    try:
        with open(path, "ab") as fh:
            fill()
            while inflight:
                finished, _ = cf.wait(inflight, return_when=cf.FIRST_COMPLETED)
                for future in finished:
                    keys = inflight.pop(future)
                    lines = _lines(keys, pending, future, metadata)
                    with naming(path):  # a full disk: the error names the results file
                        fh.write(b"".join(line for line, _ in lines))  # whole lines, then
                        fh.flush()  # to disk
                        os.fsync(fh.fileno())
                    for _, ok in lines:
                        outcomes[ok] += 1
                    report.tick(len(lines), failed=sum(not ok for _, ok in lines))
                    if not future.exception():
                        _, seconds, stop = future.result()
                        if stop is not None:
                            raise stop
                        chunks.learn(len(keys), seconds)
                fill()
    except BaseException:  # e.g. KeyboardInterrupt: finished lines stay, the rest is dropped
        for future in inflight:
            future.cancel()
        if executor is None:
            stop_pool(pool)
        raise
    finally:
        report.close()
    if executor is None:
        pool.shutdown()
    return outcomes
