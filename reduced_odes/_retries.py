"""Which runs were retried on another backend or stepper, collected while a job measures.

:func:`~reduced_odes.solve` notes every run it returns that is not the first attempt's
(its trajectory's ``fallback_reason``); a job that does not see the trajectories (a
model's ``measure``, which ``verify`` runs) collects the notes with
:func:`noting_retries`.  The notes are per thread and per process: a thread pool's
settings do not mix.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

__all__ = ["note_retry", "noting_retries"]

_NOTES: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "reduced_odes_retries", default=None)


@contextlib.contextmanager
def noting_retries() -> Iterator[list[str]]:
    """The list of the retries noted inside the block (one line each: the run and why).

    Examples
    --------
    >>> with noting_retries() as notes:
    ...     note_retry("toy x=2: backend numba: the step size became too small")
    >>> notes
    ['toy x=2: backend numba: the step size became too small']
    >>> note_retry("outside any block: not kept")
    """
    notes: list[str] = []
    token = _NOTES.set(notes)
    try:
        yield notes
    finally:
        _NOTES.reset(token)


def note_retry(note: str) -> None:
    """Note a retried run, if a :func:`noting_retries` block is collecting."""
    notes = _NOTES.get()
    if notes is not None:
        notes.append(note)
