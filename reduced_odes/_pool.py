"""The default executor of sweeps: a process pool whose workers ignore Ctrl-C, release the
parent's results lock, and never outlive the parent; and how to stop it at once."""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import os

from ._lifetime import exit_with_parent
from ._results_file import HELD_LOCKS

__all__ = ["process_pool", "stop_pool", "worker_count"]


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
    for fd in list(HELD_LOCKS):
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


def stop_pool(pool: cf.ProcessPoolExecutor) -> None:
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

