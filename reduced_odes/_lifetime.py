"""A helper process's lifetime: it exits once the process that started it is gone.

A parent killed by SIGKILL runs no cleanup, so its children must notice themselves: the
sweep's workers and the native backend's precompile helper each watch their parent.
"""

from __future__ import annotations

import os
import threading
import time

__all__ = ["exit_with_parent"]

#: Seconds between two looks at the parent: how long an orphan outlives it at most.
POLL = 0.5


def _watch_parent(parent: int) -> None:
    """Exit this process once ``parent`` is no longer its parent (re-parented: the parent
    died)."""
    while os.getppid() == parent:
        time.sleep(POLL)
    os._exit(1)


def exit_with_parent(parent: int) -> threading.Thread:
    """Watch ``parent`` (the pid of the process that started this one, as it passed it) from
    a daemon thread, and exit this process once it is gone; the thread.

    Examples
    --------
    >>> exit_with_parent(os.getppid()).daemon
    True
    """
    watcher = threading.Thread(target=_watch_parent, args=(parent,), daemon=True,
                               name="exit-with-parent")
    watcher.start()
    return watcher
