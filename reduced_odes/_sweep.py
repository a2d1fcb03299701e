"""Resumable parameter sweeps, run through any :class:`concurrent.futures.Executor`.

Each finished task appends one JSON line ``{"key", "setting", "result" | "error",
"metadata", "check"}`` to a results file; a rerun skips settings that already have a
``"result"`` line computed under the same :data:`RESUME_KEYS` metadata and runs the
rest.  Only the calling process writes the file.  Every line read back is verified: its
key is computed again from its setting and its ``"check"`` (a checksum of the other
members) must match, so a line changed after it was written is never reused.
"""

import concurrent.futures as cf
import contextlib
import itertools
import json
import math
import os
import time
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._io import atomic_write, naming
from ._lifetime import exit_with_parent
from ._params import ParameterError, check_keys, warn
from ._progress import Progress
from ._results import (
    CHECK,
    DataFileError,
    VerificationError,
    _tolist,
    digest,
    dumps_checked,
    loads_checked,
)

__all__ = ["MAX_GRID_DEPTH", "MAX_GRID_SETTINGS", "RESUME_KEYS", "ResultsFileError",
           "SweepReport", "expand_grid", "grid_size", "load_grid", "process_pool",
           "read_results", "repair_results", "results_line", "results_lock", "run_sweep",
           "setting_key", "worker_count"]

Setting = dict[str, Any]
#: Metadata a finished line must share with the current run to be reused, where the run
#: states them: results of other code (``source``), other library versions or other
#: solver settings are computed again rather than mixed in.
RESUME_KEYS = ("source", "versions", "solver")
_HEAD = b'{"key": "'  # how every results line starts


#: The most settings a grid file may expand to.  Every setting is held in memory and
#: checked before anything runs: at this limit, ``reduced-odes sweep`` takes about 0.5 GB
#: and 35 s before its first result (deep_linear, two cores), and both grow in proportion.
#: A larger grid is refused before it is expanded: split it into several files (run one
#: after the other, into one results file if you like).
MAX_GRID_SETTINGS = 1_000_000
#: How deep a grid value may nest: an axis (a list) of values, each of which may be a list
#: or a table itself.  Deeper nesting is no parameter value, and bounds every walk over a
#: setting (its key, its JSON).
MAX_GRID_DEPTH = 2


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


def grid_size(spec: Mapping[str, Any]) -> int:
    """How many settings :func:`expand_grid` makes of ``spec``, without making them.

    Examples
    --------
    >>> grid_size({"L": [50, 200, 400], "sigma": [1e-2, 1e-4], "closure": "linear"})
    6
    """
    return math.prod(len(v) if isinstance(v, list | tuple) else 1 for v in spec.values())


def load_grid(path: str | os.PathLike[str], *, keys: Iterable[str] | None = None
              ) -> list[Setting]:
    """Read settings from a TOML file with a ``[grid]`` table and an optional ``[fixed]`` table.

    ``[grid]`` is expanded with :func:`expand_grid`; several ``[[grid]]`` tables give the
    union of their products without duplicates (equal numbers are equal: see
    :func:`setting_key`).  ``[fixed]`` is merged into every setting.  Raises
    :class:`ValueError` naming the file if it is not valid TOML of that shape, has a key
    outside ``keys`` (if given), a date or time, a value nested deeper than
    :data:`MAX_GRID_DEPTH`, or more settings than :data:`MAX_GRID_SETTINGS` (counted before
    any is made).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "grid.toml"
    >>> _ = path.write_text('[grid]\\nL = [50, 200, 200.0]\\n[fixed]\\nmethod = "LSODA"\\n')
    >>> load_grid(path)
    [{'L': 50, 'method': 'LSODA'}, {'L': 200, 'method': 'LSODA'}]
    """
    grids, fixed = _read_grid(path)
    for table in (*grids, fixed):
        _check_values(path, table, keys)
    for grid in grids:
        if clash := sorted(set(grid) & set(fixed)):
            raise ValueError(f"{path}: parameter(s) {clash} appear in both [grid] and [fixed]")
        if empty := sorted(k for k, v in grid.items() if isinstance(v, list) and not v):
            raise ValueError(f"{path}: [grid] {', '.join(empty)} = [] leaves no setting; "
                             f"allowed: a non-empty list or a single value")
    size = sum(grid_size(grid) for grid in grids)
    if size > MAX_GRID_SETTINGS:
        axes = " + ".join(" x ".join(str(len(v)) for v in grid.values() if isinstance(v, list))
                          or "1" for grid in grids)
        raise ValueError(f"{path}: the grid has {size:,} settings ({axes}); allowed: at most "
                         f"{MAX_GRID_SETTINGS:,} in one file: split it into several")
    products = [[setting | fixed for setting in expand_grid(_distinct(grid))] for grid in grids]
    if len(products) == 1:  # distinct values on every axis: distinct settings
        return products[0]
    unique: dict[str, Setting] = {}
    for setting in itertools.chain.from_iterable(products):
        unique.setdefault(setting_key(setting), setting)
    return list(unique.values())


def _distinct(spec: Mapping[str, Any]) -> dict[str, Any]:
    """``spec`` with each axis's repeated values (equal numbers: ``1`` and ``1.0``) listed
    once, at their first place."""
    def once(values: list) -> list:
        first: dict[str, Any] = {}
        for value in values:
            first.setdefault(digest(_numbers_merged(value)), value)
        return list(first.values())

    return {k: once(v) if isinstance(v, list) else v for k, v in spec.items()}


def _read_grid(path: str | os.PathLike[str]) -> tuple[list[dict], dict]:
    """The ``[grid]`` tables and the ``[fixed]`` table of a grid file; ValueError naming the
    file if it is not valid TOML of that shape."""
    try:
        with open(path, "rb") as fh:
            doc = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path}: invalid TOML: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: invalid TOML: not UTF-8 text (byte {exc.start})") from None
    except RecursionError:  # the parser recurses once per level of nesting
        raise ValueError(f"{path}: a value nests too deep for the TOML parser; allowed: at "
                         f"most {MAX_GRID_DEPTH} levels (a list of values, each a list or "
                         f"a table at most)") from None
    if unknown := sorted(set(doc) - {"grid", "fixed"}):
        raise ValueError(f"{path}: unknown top-level key(s) {unknown}; expected [grid], [fixed]")
    grids, fixed = doc.get("grid"), doc.get("fixed", {})
    grids = [grids] if isinstance(grids, dict) else grids
    if not grids or not isinstance(grids, list) or not all(isinstance(g, dict) for g in grids):
        raise ValueError(f"{path}: needs a [grid] table or [[grid]] tables")
    if not isinstance(fixed, dict):
        raise ValueError(f"{path}: [fixed] must be a table")
    return grids, fixed


#: The values a grid may hold: TOML's, less its dates and times (no parameter takes one).
_SCALARS = (str, int, float, bool)


def _check_values(path: str | os.PathLike[str], table: dict, keys: Iterable[str] | None
                  ) -> None:
    """ValueError naming the file if ``table`` has a key outside ``keys`` (if given), or a
    value that is a date or time or nests deeper than :data:`MAX_GRID_DEPTH`."""
    if keys is not None:
        allowed = list(keys)
        try:
            check_keys("grid key(s)", table, allowed)
        except ParameterError as exc:
            raise ParameterError(f"{path}: {exc}") from None
    for key, value in table.items():
        stack = [(value, 0)]
        while stack:  # no recursion: a value may nest as deep as the parser allowed
            item, depth = stack.pop()
            if isinstance(item, list | dict):
                if depth == MAX_GRID_DEPTH:
                    raise ValueError(f"{path}: {key} nests deeper than {MAX_GRID_DEPTH} "
                                     f"levels; allowed: a value, or a list of values, each a "
                                     f"list or a table at most")
                stack += [(v, depth + 1) for v in (item.values() if isinstance(item, dict)
                                                   else item)]
            elif not isinstance(item, _SCALARS):
                raise ValueError(f"{path}: {key} = {item} is a {type(item).__name__}; "
                                 f"allowed: numbers, strings, true or false")


def setting_key(setting: Mapping[str, Any]) -> str:
    """Stable key of a setting: sha256 of its JSON with sorted keys (floats via ``repr``).

    Equal numbers give equal keys: a float that equals an integer is written as that integer
    (``1.0`` as ``1``), so that ``L = 200`` and ``L = 200.0`` are one setting.  A bool is not
    a number (``true`` is not ``1``).

    Examples
    --------
    >>> setting_key({"b": 0.1, "a": 1}) == setting_key({"a": 1, "b": 0.1}) != setting_key({"a": 1})
    True
    >>> setting_key({"L": 200.0}) == setting_key({"L": 200}) != setting_key({"L": True})
    True
    """
    return digest(_numbers_merged(dict(setting)))


#: Types whose JSON is their key's as it is (a bool stays a bool: it is not a number).
_AS_IS = frozenset({str, int, bool, type(None)})


def _numbers_merged(value: Any) -> Any:
    """``value`` with every float that equals an integer as that integer, at any depth."""
    kind = type(value)
    if kind in _AS_IS:
        return value
    if kind is dict:  # a setting: its plain values without a call each (a key per setting)
        return {k: v if type(v) in _AS_IS else _numbers_merged(v) for k, v in value.items()}
    if hasattr(value, "tolist") and not isinstance(value, list | tuple | str | float):
        value = value.tolist()  # a NumPy scalar or array
    if isinstance(value, float):
        return int(value) if value.is_integer() else value
    if isinstance(value, dict):
        return {k: _numbers_merged(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_numbers_merged(v) for v in value]
    return value


def _legacy_key(setting: Mapping[str, Any]) -> str:
    """The key a line written before :func:`setting_key` merged equal numbers has."""
    return digest(dict(setting))


class ResultsFileError(DataFileError):
    """A results file that is corrupt or not a results file; the message names file and line."""


#: The members of a results line (besides ``"null_reasons"`` and ``"check"``).
_MEMBERS = frozenset({"key", "setting", "result", "error", "metadata"})


def _record(line: bytes) -> dict[str, Any]:
    """The verified record of one results line: ValueError if it is not one, and
    :class:`VerificationError` if its checksum or its key does not match.

    A line without a checksum (written by an older version) is verified by its key alone,
    which may be the older key of its setting, and may have no other members (a changed
    byte in the name ``"check"`` would otherwise pass); the record returned has the current
    key.
    """
    record, checked = loads_checked(line.decode())  # JSON and UTF-8 errors are ValueErrors
    setting = record.get("setting")
    if not isinstance(record.get("key"), str) or not isinstance(setting, dict):
        raise ValueError("not a sweep record (no 'key' and 'setting')")
    if not checked and (unknown := sorted(set(record) - _MEMBERS)):  # e.g. "check" misspelt
        raise VerificationError(f"no checksum, and member(s) {unknown} of no results line")
    key = setting_key(setting)
    if record["key"] != key and (checked or record["key"] != _legacy_key(setting)):
        raise VerificationError("its key is not its setting's")
    record["key"] = key
    return record


#: What a line that is no record raises while it is read (a bad ``null_reasons`` entry, or
#: nesting deeper than the JSON decoder's recursion).
_CORRUPT = (ValueError, KeyError, IndexError, TypeError, AttributeError, RecursionError)


def _parse(data: bytes, name: Any, *, repair: bool = False, quiet: bool = False
           ) -> tuple[list[tuple[bytes, dict[str, Any]]], int]:
    """``(line, record)`` of every verified line of ``data``, and the end of its committed
    part (lines with their newline).

    A tail after the last newline, torn by a killed writer or NUL-filled by a crash (the file
    grew but its data never reached the disk), is dropped with a warning.  A line that fails
    its checks (:func:`_record`) is left out with a warning naming file and line (unless
    ``quiet``): a rerun computes its setting again.  Any other bad line raises
    :class:`ResultsFileError`, unless ``repair`` (then every bad line is dropped, with one
    warning).
    """
    *lines, tail = data.split(b"\n")
    text = tail.rstrip(b"\0").strip()
    if text and not _HEAD.startswith(text[: len(_HEAD)]) and not repair:
        raise ResultsFileError(f"{name}:{len(lines) + 1}: not a results line: {text[:40]!r}; "
                               f"--repair keeps the valid lines")
    if tail and not quiet:
        warn(f"{name}:{len(lines) + 1}: dropped an incomplete last line ({len(tail)} bytes, "
             f"{'NUL-filled' if not text else 'torn'})")
    records, dropped, unverified = [], 0, []
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            records.append((line, _record(line)))
        except VerificationError as exc:
            unverified.append((lineno, exc))
        except _CORRUPT as exc:
            if not repair:
                raise ResultsFileError(f"{name}:{lineno}: corrupt results line ({exc}); "
                                       f"--repair keeps the valid lines") from None
            dropped += 1
    if repair and dropped + len(unverified):
        warn(f"{name}: --repair dropped {dropped + len(unverified)} corrupt line(s)")
    elif unverified and not quiet:
        warn(_unverified_message(name, unverified))
    return records, len(data) - len(tail)


def _unverified_message(name: Any, unverified: list[tuple[int, Exception]]) -> str:
    """One warning line for the lines that failed their checks: where, and why (the first)."""
    where = ",".join(str(lineno) for lineno, _ in unverified[:5])
    more = f" and {len(unverified) - 5} more" if len(unverified) > 5 else ""
    return (f"{name}:{where}{more}: {len(unverified)} results line(s) fail their check "
            f"({unverified[0][1]}); ignored, so a rerun computes their settings again; "
            f"--repair drops them")


def read_results(path: str | os.PathLike[str], *, quiet: bool = False
                 ) -> list[dict[str, Any]]:
    """All verified records (successes and errors) of a results file, in file order.

    A last line without its newline (torn by a killed writer, or NUL-filled) is ignored with
    a warning, and so is a line that fails its checks (its key or checksum; naming file and
    line); any other corrupt line raises :class:`ResultsFileError` naming file and line.
    ``quiet``: no warnings.  Records have no ``"check"`` member.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "r.jsonl"
    >>> line = results_line({"setting": {"x": 1}, "result": 1})
    >>> _ = path.write_text(line + line.replace('"result": 1', '"result": 2') + line[:20])
    >>> [r["result"] for r in read_results(path, quiet=True)]
    [1]
    """
    with naming(path):
        data = Path(path).read_bytes()
    return [record for _, record in _parse(data, path, quiet=quiet)[0]]


def repair_results(path: str | os.PathLike[str]) -> int:
    """Rewrite a results file keeping its verified lines, byte for byte; how many it kept.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "r.jsonl"
    >>> line = results_line({"setting": {"x": 1}, "result": 1})
    >>> _ = path.write_text(line + "\\x00garbage\\n" + line.replace("1}", "2}"))
    >>> repair_results(path)  # doctest: +SKIP
    1
    """
    path = Path(path)
    if not path.exists():
        return 0
    with results_lock(path):
        with naming(path):
            data = path.read_bytes()
        records, _ = _parse(data, path, repair=True)
        atomic_write(path, b"".join(line + b"\n" for line, _ in records).decode())
    return len(records)


def results_line(record: Mapping[str, Any]) -> str:
    """The results line of ``record`` (its ``setting``, ``result`` or ``error``, and any
    further members) with its newline: the key computed from the setting first, the
    checksum last.

    Examples
    --------
    >>> line = results_line({"setting": {"x": 1.0}, "result": {"y": 2}})
    >>> line.startswith('{"key": "' + setting_key({"x": 1}) + '", "setting": {"x": 1.0}')
    True
    """
    members = {k: v for k, v in record.items() if k not in ("key", CHECK)}
    return dumps_checked({"key": setting_key(record["setting"])} | members) + "\n"


#: Descriptors holding a results lock; a forked worker closes its copies, so that a killed
#: run's lock ends with the run, not with its last worker.
_HELD_LOCKS: set[int] = set()


@contextlib.contextmanager
def results_lock(path: Path):
    """Hold an exclusive lock on ``path`` (created if missing) for one run.

    A second run on the same results file would compute every pending setting again, so it
    stops at once with a :class:`ParameterError` instead of waiting behind the first.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "r.jsonl"
    >>> with results_lock(path):
    ...     with results_lock(path):
    ...         pass
    Traceback (most recent call last):
    ...
    reduced_odes._params.ParameterError: results file ... is in use by another run ...
    """
    try:
        import fcntl
    except ImportError:  # no advisory locks on this platform: run unlocked
        yield
        return
    with open(path, "ab") as handle:
        try:
            with naming(path):  # e.g. no locks on this filesystem: the error names the file
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ParameterError(f"results file {str(path)!r} is in use by another run "
                                 f"(sweep or verify); wait for it to finish") from None
        _HELD_LOCKS.add(handle.fileno())
        try:
            yield
        finally:
            _HELD_LOCKS.discard(handle.fileno())
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def worker_count(requested: int | None, tasks: int) -> int:
    """Processes to start: ``requested`` (default: every core), capped at the cores and tasks.

    Examples
    --------
    >>> worker_count(32, 1)
    1
    >>> worker_count(None, 10**6) == (os.cpu_count() or 1)
    True
    """
    cores = os.cpu_count() or 1
    return max(1, min(requested or cores, cores, tasks))


def _worker_init(parent: int) -> None:
    """Worker set-up: Ctrl-C is the parent's to handle, no worker outlives its parent, and
    the worker's garbage collector leaves what it inherited alone."""
    import gc
    import signal

    # Everything forked from the parent (numba's and SymPy's objects, a loaded twin) lives as
    # long as the worker: frozen, the collector does not walk it again on every full
    # collection, nor write to (and so copy) every page of it.
    gc.freeze()

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # else each worker prints a traceback
    for fd in list(_HELD_LOCKS):
        with contextlib.suppress(OSError):
            os.close(fd)
    exit_with_parent(parent)


def process_pool(requested: int | None, tasks: int) -> cf.ProcessPoolExecutor:
    """A process pool of :func:`worker_count` workers that ignore Ctrl-C and die with the parent.

    Examples
    --------
    >>> with process_pool(4, 1) as pool:
    ...     pool._max_workers
    1
    """
    return cf.ProcessPoolExecutor(worker_count(requested, tasks), initializer=_worker_init,
                                  initargs=(os.getpid(),))


def _stop(pool: cf.ProcessPoolExecutor) -> None:
    """Stop a pool at once: cancel what waits and terminate the workers (which ignore Ctrl-C).

    Terminating the workers breaks the pool, and its manager thread then fails to
    mark the already-cancelled futures (``InvalidStateError``); that thread's
    report is expected here and is kept off stderr while the pool winds down.
    """
    import threading

    processes = list((getattr(pool, "_processes", None) or {}).values())
    manager = getattr(pool, "_executor_manager_thread", None)  # shutdown() forgets it
    previous = threading.excepthook

    def quiet(args):
        if not issubclass(args.exc_type, cf.InvalidStateError | cf.BrokenExecutor):
            previous(args)

    threading.excepthook = quiet
    try:
        pool.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            process.terminate()
        if manager is not None:
            manager.join(timeout=10)
    finally:
        threading.excepthook = previous


@dataclass(frozen=True)
class SweepReport:
    """Outcome of :func:`run_sweep`.

    Examples
    --------
    A setting whose task raises is counted as failed (its error line is written, and it
    is retried by the next run):

    >>> import pathlib, tempfile
    >>> from concurrent.futures import ThreadPoolExecutor
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
MAX_CHUNK = 256


def _run_chunk(task: Callable, settings: list[Setting]
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


def _lines(keys: list[str], pending: dict[str, Setting], future: cf.Future,
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
    task: Callable[[Setting], Mapping[str, Any]],
    results_path: str | os.PathLike[str],
    *,
    executor: cf.Executor | None = None,
    max_workers: int | None = None,
    progress: bool | None = None,
    metadata: Mapping[str, Any] | None = None,
    prepare: Callable[[list[Setting]], None] | None = None,
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
        Processes of the default executor (default: every core); never more than the
        cores or the pending settings.
    progress
        Progress on stderr (:class:`~reduced_odes._progress.Progress`); None: only if
        stderr is a terminal.
    metadata
        JSON-serialisable dict (versions, solver settings, ...) stored in every line.
    prepare
        Called here once with the settings to run, before the first one starts, and only
        if some are pending: e.g. to compile what every worker would otherwise compile.
    collect
        False: ``records`` is left empty, and the results file is not read back (a job
        that reports only the counts).

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
    # Fails early if it is not serialisable; as read back from a line (lists, not tuples), so
    # that it compares equal to the metadata of the lines it wrote.
    path = Path(results_path)
    metadata = json.loads(json.dumps(dict(metadata or {}), default=_tolist))
    todo: dict[str, Setting] = {}
    for setting in settings:  # a dict as it is: a large grid is not held twice
        todo.setdefault(setting_key(setting), setting if type(setting) is dict else
                        dict(setting))
    with results_lock(path):
        outcomes = _run_pending(todo, task, path, executor, max_workers, progress, metadata,
                                prepare)
        successes = ({r["key"]: r for r in read_results(path, quiet=True)
                      if _reusable(r, metadata)} if collect else {})
    pending = sum(outcomes.values())
    return SweepReport(
        total=len(todo), skipped=len(todo) - pending, completed=outcomes[True],
        failed=outcomes[False], results_path=path,
        records=[successes[key] for key in todo if key in successes],
    )


def _reusable(record: dict, metadata: Mapping[str, Any]) -> bool:
    """Whether ``record`` is a result computed under this run's :data:`RESUME_KEYS`."""
    theirs = record.get("metadata") or {}
    return "result" in record and all(theirs.get(k) == metadata[k] for k in RESUME_KEYS
                                      if k in metadata)


def _run_pending(todo: dict[str, Setting], task: Callable, path: Path, executor,
                 max_workers: int | None, progress: bool | None, metadata: dict,
                 prepare: Callable | None) -> dict:
    """Run the settings of ``todo`` without a result in ``path``; ``{ok: count}``."""
    with naming(path):
        data = path.read_bytes()
    parsed, intact = _parse(data, path)
    if intact < len(data):  # cut a torn last line, so that appends start on a fresh line
        os.truncate(path, intact)
    records = [record for _, record in parsed]
    done = {record["key"] for record in records if _reusable(record, metadata)}
    pending = {key: setting for key, setting in todo.items() if key not in done}
    stale = {r["key"] for r in records if "result" in r and r["key"] in pending}
    if stale:
        warn(f"{len(stale)} result(s) in {path} were computed under other "
             f"{'/'.join(k for k in RESUME_KEYS if k in metadata)} metadata; computing "
             f"them again")
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
            _stop(pool)
        raise
    finally:
        report.close()
    if executor is None:
        pool.shutdown()
    return outcomes
