"""Results files of sweeps, read as a stream: one line in memory at a time, however long
the file.

A results file is JSON Lines in the format of :func:`reduced_odes._results.results_line`.
Every line read back is verified (:func:`reduced_odes._results.parse_results_line`): its
key is computed again from its setting and its checksum must match, so a line changed
after it was written is never reused.  Resuming a sweep keeps only what it needs of each
line (whether its setting is done), so its memory does not grow with the file.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ._io import atomic_write, naming
from ._params import ParameterError, warn
from ._results import ResultsFileError, VerificationError, parse_results_line

__all__ = ["ResultsReader", "read_results", "repair_results", "results_lock"]

_HEAD = b'{"key": "'  # how every results line starts
#: What a line that is no record raises while it is read (a bad ``null_reasons`` entry, or
#: nesting deeper than the JSON decoder's recursion).
_CORRUPT = (ValueError, KeyError, IndexError, TypeError, AttributeError, RecursionError)


class ResultsReader:
    """The verified ``(line, record)`` pairs of a results file, read one line at a time.

    A tail after the last newline, torn by a killed writer or NUL-filled by a crash (the
    file grew but its data never reached the disk), is dropped with a warning.  A line that
    fails its checks is left out, with one warning naming file and lines (unless ``quiet``):
    a rerun computes its setting again.  Any other bad line raises
    :class:`~reduced_odes._results.ResultsFileError` naming file and line, unless
    ``repair`` (then every bad line is dropped, with one warning).  Warnings are given
    only once the whole file has been read, so that a file that is refused prints its one
    error line alone (``hold_warnings``: not before :meth:`give_warnings`).  After the
    iteration, :attr:`intact` is the length of the file's complete lines (where an append
    must start).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from reduced_odes._results import results_line
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "r.jsonl"
    >>> line = results_line({"setting": {"x": 1}, "result": 1}).encode()
    >>> _ = path.write_bytes(line + line[:20])
    >>> reader = ResultsReader(path, quiet=True)
    >>> [record["result"] for _, record in reader], reader.intact == len(line)
    ([1], True)
    """

    def __init__(self, path: str | os.PathLike[str], *, repair: bool = False,
                 quiet: bool = False, hold_warnings: bool = False):
        self.path, self.repair, self.quiet, self.hold = path, repair, quiet, hold_warnings
        self.intact = 0
        self.warnings: list[str] = []  # given at the end, or by give_warnings() if held
        self._corrupt = 0  # lines dropped under repair
        self._unverified: list[tuple[int, Exception]] = []  # the first five failing checks
        self._failed = 0  # how many failed their checks

    def __iter__(self) -> Iterator[tuple[bytes, dict[str, Any]]]:
        self.intact, self._corrupt, self._unverified, self._failed = 0, 0, [], 0
        self.warnings = []
        lineno, tail = 0, b""
        with naming(self.path), open(self.path, "rb") as handle:
            for lineno, line in enumerate(handle, 1):  # noqa: B007 (the tail's number)
                if not line.endswith(b"\n"):
                    tail = line
                    break
                self.intact += len(line)
                if (record := self._verified(line[:-1], lineno)) is not None:
                    yield line[:-1], record
        self._finish(tail, lineno)
        if not self.hold:
            self.give_warnings()

    def give_warnings(self) -> None:
        """Print the warnings about the file read (one line each); held by
        ``hold_warnings=True`` until the caller has ended its own progress line."""
        for message in self.warnings:
            warn(message)
        self.warnings = []

    def _verified(self, line: bytes, lineno: int) -> dict[str, Any] | None:
        """The record of ``line``; None if it is blank, fails its checks (noted for the
        warning), or is corrupt under ``repair``; ResultsFileError if it is corrupt."""
        if not line.strip():
            return None
        try:
            return parse_results_line(line)
        except VerificationError as exc:
            self._failed += 1
            if len(self._unverified) < 5:  # the warning names five: the rest are counted
                self._unverified.append((lineno, exc))
        except _CORRUPT as exc:
            if not self.repair:
                raise ResultsFileError(f"{self.path}:{lineno}: corrupt results line ({exc}); "
                                       f"--repair keeps the valid lines") from None
            self._corrupt += 1
        return None

    def _finish(self, tail: bytes, lineno: int) -> None:
        """Refuse a tail that is no results line; then the warnings, one line each."""
        text = tail.rstrip(b"\0").strip()
        if text and not _HEAD.startswith(text[: len(_HEAD)]) and not self.repair:
            raise ResultsFileError(f"{self.path}:{lineno}: not a results line: "
                                   f"{text[:40]!r}; --repair keeps the valid lines")
        if tail and not self.quiet:
            self.warnings.append(f"{self.path}:{lineno}: dropped an incomplete last line "
                                 f"({len(tail)} bytes, {'NUL-filled' if not text else 'torn'})")
        if self.repair and self._corrupt + self._failed:
            self.warnings.append(f"{self.path}: --repair dropped "
                                 f"{self._corrupt + self._failed} corrupt line(s)")
        elif self._failed and not self.quiet:
            self.warnings.append(_unverified_message(self.path, self._unverified,
                                                     self._failed))


def _unverified_message(name: Any, first: list[tuple[int, Exception]], count: int) -> str:
    """One warning line for the ``count`` lines that failed their checks: where (the
    ``first`` few), and why (the first)."""
    where = ",".join(str(lineno) for lineno, _ in first)
    more = f" and {count - len(first)} more" if count > len(first) else ""
    return (f"{name}:{where}{more}: {count} results line(s) fail their check "
            f"({first[0][1]}); ignored, so a rerun computes their settings again; "
            f"--repair drops them")


def read_results(path: str | os.PathLike[str], *, quiet: bool = False
                 ) -> list[dict[str, Any]]:
    """All verified records (successes and errors) of a results file, in file order.

    A last line without its newline (torn by a killed writer, or NUL-filled) is ignored with
    a warning, and so is a line that fails its checks (its key or checksum; naming file and
    line); any other corrupt line raises :class:`~reduced_odes._results.ResultsFileError`
    naming file and line.  ``quiet``: no warnings.  Records have no ``"check"`` member.
    To go through a file without holding it, iterate over a :class:`ResultsReader`.

    Examples
    --------
    >>> from reduced_odes._results import results_line
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "r.jsonl"
    >>> line = results_line({"setting": {"x": 1}, "result": 1})
    >>> _ = path.write_text(line + line.replace('"result": 1', '"result": 2') + line[:20])
    >>> [r["result"] for r in read_results(path, quiet=True)]
    [1]
    """
    return [record for _, record in ResultsReader(path, quiet=quiet)]


def repair_results(path: str | os.PathLike[str]) -> int:
    """Rewrite a results file keeping its verified lines, byte for byte; how many it kept.

    The file is streamed into its replacement, never held whole.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from reduced_odes._results import results_line
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "r.jsonl"
    >>> line = results_line({"setting": {"x": 1}, "result": 1})
    >>> _ = path.write_text(line + "\\x00garbage\\n" + line.replace("1}", "2}"))
    >>> repair_results(path)  # doctest: +SKIP
    1
    """
    path = Path(path)
    if not path.exists():
        return 0
    kept = 0

    def verified_lines() -> Iterator[bytes]:
        nonlocal kept
        for line, _ in ResultsReader(path, repair=True):
            kept += 1
            yield line + b"\n"

    with results_lock(path):
        atomic_write(path, verified_lines())
    return kept


#: Descriptors holding a results lock; a forked worker closes its copies, so that a killed
#: run's lock ends with the run, not with its last worker.
HELD_LOCKS: set[int] = set()


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
        HELD_LOCKS.add(handle.fileno())
        try:
            yield
        finally:
            HELD_LOCKS.discard(handle.fileno())
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
