"""Files written whole or not at all, and the one JSON-safe encoding of results.

A leaf of the engine (the standard library only): the compiler's cache, the
result files, the sweep's results lines and the verdicts are all written with
:func:`atomic_write`, and every JSON document the engine writes goes through
:func:`json_safe` first.  An I/O error names the file it concerns (:func:`naming`).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

__all__ = ["atomic_write", "exclusive", "json_safe", "naming"]


@contextlib.contextmanager
def naming(path: str | os.PathLike[str]) -> Iterator[None]:
    """Let every OSError raised inside name ``path``: a write to an open handle, its flush
    or fsync (a full disk), or a temporary file's rename, names no file or another one.

    Examples
    --------
    >>> import errno
    >>> with naming("results.jsonl"):
    ...     raise OSError(errno.ENOSPC, "No space left on device")
    Traceback (most recent call last):
    ...
    OSError: [Errno 28] No space left on device: 'results.jsonl'
    """
    try:
        yield
    except OSError as exc:
        if exc.errno is None:  # an error without a code prints no file: record it only
            exc.filename = str(path)
        if exc.errno is None or (exc.filename == str(path) and exc.filename2 is None):
            raise
        # A new error of the same kind (the errno picks the subclass), naming only ``path``.
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc


def atomic_write(path: Path, text: str | bytes | Iterable[bytes]) -> None:
    """Write ``text`` (or bytes, or an iterable of bytes: written as it is consumed, never
    held whole) to ``path`` whole or not at all (a temporary file, then a rename).

    An OSError (a full disk, a directory that is not writable) names ``path``.

    Examples
    --------
    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "a.txt"
    >>> atomic_write(path, "done\\n")
    >>> path.read_text()
    'done\\n'
    """
    with naming(path):
        _write_then_rename(Path(path), text)


@contextlib.contextmanager
def exclusive(path: Path) -> Iterator[None]:
    """Run the block holding an exclusive lock on the file ``path`` (created if need be),
    waiting while another process holds it.

    Two processes sharing a cache (a test session's workers, a job's pool) then do one
    piece of work once: the second waits, and finds the first one's files.  Where no lock
    can be taken (no ``fcntl``, a directory that is not writable) the block runs unlocked:
    every write is atomic (:func:`atomic_write`), so the worst is the work done twice.

    Examples
    --------
    >>> import tempfile
    >>> with exclusive(Path(tempfile.mkdtemp()) / "derive.lock"):
    ...     "one at a time"
    'one at a time'
    """
    try:
        import fcntl

        handle = open(path, "a")  # closed below, after the block
    except (ImportError, OSError):
        yield
        return
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX)  # released when the handle closes
        except OSError:
            pass
        yield


def _write_then_rename(path: Path, text: str | bytes | Iterable[bytes]) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)  # an ordinary file's mode, not mkstemp's private 0600
        binary = not isinstance(text, str)
        with os.fdopen(fd, "wb" if binary else "w", encoding=None if binary else "utf-8") \
                as handle:
            handle.writelines([text] if isinstance(text, str | bytes) else text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def json_safe(value: Any, reasons: dict[str, str] | None = None, pointer: str = "") -> Any:
    """A copy of ``value`` that strict JSON can hold: NumPy arrays and scalars as plain
    lists and numbers, tuples as lists, keys as strings, each non-finite float as None.

    ``reasons``, if given, receives the JSON pointer of each value made None, with the
    value's JSON spelling (``'NaN'``, ``'Infinity'`` or ``'-Infinity'``); ``pointer`` is
    ``value``'s own.

    Examples
    --------
    >>> import numpy as np
    >>> reasons = {}
    >>> json_safe({"t": np.array([1.0, np.inf]), 2: (np.int64(3), float("nan"))}, reasons)
    {'t': [1.0, None], '2': [3, None]}
    >>> reasons
    {'/t/1': 'Infinity', '/2/1': 'NaN'}
    """
    if isinstance(value, dict):
        return {str(k): json_safe(v, reasons, f"{pointer}/{k}") for k, v in value.items()}
    if hasattr(value, "tolist") and not isinstance(value, list | tuple | str):
        value = value.tolist()  # a NumPy array (nested lists) or scalar (a plain number)
    if isinstance(value, list | tuple):
        return [json_safe(v, reasons, f"{pointer}/{i}") for i, v in enumerate(value)]
    if isinstance(value, float) and not math.isfinite(value):
        if reasons is not None:
            reasons[pointer] = json.dumps(value)
        return None
    return value
