"""The options the commands that run work share, and the checks of their values.

``--backend``, ``--workers``, ``--scheduler`` and ``--repair``, with what they
decide (the executor of a run, a repaired results file), and :func:`writable`,
which checks an output location before any work.  Used by :mod:`reduced_odes.cli`
and by the commands in modules of their own (:mod:`reduced_odes._sweep_command`),
which the command line imports: so these sit below both.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path

from ._cluster import (
    CONNECT_TIMEOUT_S,
    MAX_CONNECT_TIMEOUT_S,
    check_connect_timeout,
    cluster_executor,
)
from ._params import ParameterError
from ._results_file import repair_results

__all__ = ["add_backend_option", "add_executor_options", "add_run_options",
           "check_run_options", "repair_if_asked", "run_executor", "writable"]


def writable(path: str | Path, kind: str, option: str = "out") -> Path:
    """``path`` checked (before any work) to be writable as a ``kind`` ("file" or "dir").

    A directory is created (the command owns it); for a file, its parent directories are.
    Raises :class:`ParameterError` naming the option, the path and why.

    Examples
    --------
    >>> import tempfile
    >>> writable(tempfile.mkdtemp() + "/a/b", "dir").is_dir()
    True
    >>> writable("/proc/x", "dir")
    Traceback (most recent call last):
    ...
    reduced_odes._params.ParameterError: out='/proc/x' cannot be created: ...
    """
    target = Path(path)
    directory = target if kind == "dir" else target.parent
    if kind == "file" and target.is_dir():
        raise ParameterError(f"{option}={str(path)!r} is a directory; allowed: a file path")
    if kind == "dir" and target.exists() and not target.is_dir():
        raise ParameterError(f"{option}={str(path)!r} is a file; allowed: a directory")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        blocker = next((a for a in (directory, *directory.parents) if a.exists()), None)
        why = f"{str(blocker)!r} is a file" if blocker is not None and not blocker.is_dir() \
            else exc.strerror or str(exc)
        raise ParameterError(f"{option}={str(path)!r} cannot be created: {why}") from None
    if not os.access(directory, os.W_OK | os.X_OK) or (
            kind == "file" and target.exists() and not os.access(target, os.W_OK)):
        raise ParameterError(f"{option}={str(path)!r} is not writable")
    return target


def add_backend_option(parser: argparse.ArgumentParser, auto: str,
                       default: str = "auto") -> None:
    """``--backend``: the pure-Python reference or the native backend (``[fast]``)."""
    parser.add_argument("--backend", choices=("auto", "python", "numba"), default=default,
                        help=f"python: the reference; numba: native, SciPy's BDF compiled by "
                             f"numba (pip install 'reduced-odes[fast]'); auto: {auto} "
                             f"(default: {default})")


def add_executor_options(parser: argparse.ArgumentParser) -> None:
    """``--workers``, ``--scheduler`` and ``--connect-timeout``: where a command's parallel work
    runs."""
    parser.add_argument("--workers", type=int, default=None, metavar="N",
                        help="worker processes, at most the cores and the tasks "
                             "(default: every core)")
    parser.add_argument("--scheduler", metavar="ADDRESS|local", default=None,
                        help="run on dask.distributed: a scheduler address, or 'local' for a "
                             "LocalCluster of worker processes; only this process writes "
                             "results (default: a local process pool; needs the "
                             "[distributed] extra)")
    parser.add_argument("--connect-timeout", type=float, default=CONNECT_TIMEOUT_S,
                        metavar="SECONDS",
                        help="with a scheduler address: how long to wait for it before exiting "
                             f"2 (default: {CONNECT_TIMEOUT_S:g}; at most "
                             f"{MAX_CONNECT_TIMEOUT_S:g})")


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """The options of the commands that run a resumable sweep: where, and ``--repair``."""
    add_executor_options(parser)
    parser.add_argument("--repair", action="store_true",
                        help="first drop the corrupt lines of the results file, keeping the "
                             "valid ones (default: off; a corrupt file stops the run)")


@contextlib.contextmanager
def run_executor(args: argparse.Namespace):
    """``(executor, max_workers)`` of a resumable run: a dask cluster with ``--scheduler``
    (connected here, before any work), else the default process pool."""
    if not getattr(args, "scheduler", None):
        yield None, args.workers
        return

    executor = cluster_executor(args.scheduler, workers=args.workers,
                                connect_timeout=args.connect_timeout)
    try:
        yield executor, None
    finally:
        executor.shutdown()


def check_run_options(args: argparse.Namespace, results: Path | None = None) -> None:
    """Validate ``--workers`` and ``--connect-timeout``; with ``--repair`` and ``results``,
    repair ``results`` (before any work)."""
    if args.workers is not None and args.workers < 1:
        raise ParameterError(f"workers={args.workers} must be an integer >= 1")
    check_connect_timeout(args.connect_timeout)
    if results is not None:
        repair_if_asked(args, results)


def repair_if_asked(args: argparse.Namespace, results: Path) -> None:
    """With ``--repair``: keep only the verified lines of ``results``, saying how many."""
    if getattr(args, "repair", False):
        kept = repair_results(results)
        print(f"repaired {results}: {kept} valid line(s) kept", file=sys.stderr)
