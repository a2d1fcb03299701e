"""Progress on stderr for every long run: a count, elapsed time and ETA (:class:`Progress`), and
one long step that cannot be counted, such as a derivation (:class:`Activity`)."""

from __future__ import annotations

import math
import sys
import threading
import time
from datetime import timedelta
from typing import TextIO

__all__ = ["Activity", "Progress"]


class Progress:
    """``label done/total (pct) elapsed H:MM:SS eta H:MM:SS[, k failed]`` on stderr.

    On a terminal one line is rewritten in place.  Otherwise (a log file, CI)
    plain lines with no carriage returns, one per 5% of the work or per 30 s,
    whichever comes first, so that logs stay short.  Nothing is printed in the
    first ``quiet`` seconds, so that short runs stay silent.

    Parameters
    ----------
    label : str
        What is counted, e.g. ``"sweep"``.
    total : int
        Units of work.
    show : bool, optional
        Print at all (default: only when ``stream`` is a terminal).
    quiet : float
        Seconds of silence at the start.
    stream : file, optional
        Default ``sys.stderr``.

    Examples
    --------
    >>> import io
    >>> out = io.StringIO()
    >>> bar = Progress("tables", total=2, show=True, stream=out)
    >>> bar.tick(); bar.tick(); bar.close()
    >>> out.getvalue().splitlines()[-1].split(" elapsed")[0]
    'tables 2/2 (100%)'
    """

    def __init__(self, label: str, total: int, *, show: bool | None = None,
                 quiet: float = 0.0, stream: TextIO | None = None):
        self.label, self.total, self.quiet = label, max(total, 1), quiet
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.show = self.tty if show is None else show
        self.start, self.done, self.failed = time.monotonic(), 0, 0
        self.last = (-1, -math.inf)  # (done, time) of the last line printed

    def tick(self, count: int = 1, *, failed: int = 0) -> None:
        """``count`` more units finished, ``failed`` of them unsuccessfully."""
        self.update(self.done + count, self.failed + failed)

    def update(self, done: int, failed: int = 0, *, final: bool = False) -> None:
        """Report ``done`` finished units; print if a line is due."""
        self.done, self.failed = done, failed
        now = time.monotonic()
        step = max(1, self.total // 20)
        due = self.tty or final or done // step > self.last[0] // step or now - self.last[1] > 30
        if (not self.show or not due or now - self.start < self.quiet
                or (final and (self.last[0] < 0 or (not self.tty and done == self.last[0])))):
            return
        self.last = (done, now)
        elapsed = now - self.start
        eta = timedelta(seconds=round(elapsed / done * (self.total - done))) if done else "?"
        failures = f", {failed} failed" if failed else ""
        text = (f"{self.label} {done}/{self.total} ({100 * done // self.total}%) elapsed "
                f"{timedelta(seconds=round(elapsed))} eta {eta}{failures}")
        if self.tty:
            print(f"\r{text}  ", end="\n" if final else "", file=self.stream, flush=True)
        else:
            print(text, file=self.stream, flush=True)

    def close(self) -> None:
        """The final line (ending the terminal's rewritten line), if anything was shown."""
        self.update(self.done, self.failed, final=True)


class Activity:
    """One long step that cannot be counted (a derivation: one SymPy computation), shown on
    stderr while it runs: a line when it starts, a plain line every ``every`` seconds while
    it goes on (a log shows it is alive), and one when it ends, with the time it took.

    Parameters
    ----------
    label : str
        What is being done, e.g. ``"deriving committee_machine erf[K=2,M=2]"``.
    show : bool
        Print at all (the commands pass their ``--progress`` setting).
    every : float
        Seconds between the lines while it runs.
    stream : file, optional
        Where the lines go (default ``sys.stderr``).

    Examples
    --------
    >>> import io
    >>> out = io.StringIO()
    >>> with Activity("deriving deep_linear", show=True, stream=out):
    ...     pass
    >>> [line.split(" in ")[0] for line in out.getvalue().splitlines()]
    ['reduced-odes: deriving deep_linear ...', 'reduced-odes: deriving deep_linear: done']
    """

    def __init__(self, label: str, *, show: bool, every: float = 30.0,
                 stream: TextIO | None = None):
        self.label, self.show, self.every = label, show, every
        self.stream = stream or sys.stderr
        self.stop = threading.Event()
        self.start = time.monotonic()
        self.thread = threading.Thread(target=self._beat, daemon=True)

    def _print(self, text: str) -> None:
        print(f"reduced-odes: {self.label}{text}", file=self.stream, flush=True)

    def note(self, text: str) -> None:
        """A line about a part of the step that ended (if shown)."""
        if self.show:
            print(f"reduced-odes: {text}, elapsed {self._elapsed()}", file=self.stream,
                  flush=True)

    def _elapsed(self) -> timedelta:
        return timedelta(seconds=round(time.monotonic() - self.start))

    def _beat(self) -> None:
        while not self.stop.wait(self.every):
            self._print(f": still running, elapsed {self._elapsed()}")

    def __enter__(self) -> Activity:
        if self.show:
            self._print(" ...")
            self.thread.start()
        return self

    def __exit__(self, kind, value, traceback) -> None:
        if self.show:
            self.stop.set()
            self.thread.join()
            self._print(f": {'done' if kind is None else 'failed'} in {self._elapsed()}")
