"""Which integrator runs a trajectory: the pure-Python reference or the native backend.

``SolverConfig.backend`` is ``"python"``, ``"numba"`` or ``"auto"``.  A
trajectory records the backend that actually ran it, never ``"auto"``:

* :func:`resolve` turns ``auto`` into this process's preference (``python``
  unless a job set another with :func:`preferred_backend`);
* :func:`for_job` is what a command decides for ``auto``: the native backend
  when numba is installed and the job is large enough to pay for a first
  compile (:data:`NATIVE_MIN_SETTINGS` settings), else the reference, with one
  line on stderr when a large job could have used ``[fast]``.

The names of the backends and whether one is installed are configuration, checked
with the rest of a :class:`~reduced_odes.SolverConfig` (:mod:`reduced_odes._params`);
what a job does once before its workers start (compiling each system and its native
twin) is :mod:`reduced_odes._prepare`.
"""

from __future__ import annotations

import contextlib
import sys

from . import _params
from ._params import _INSTALL, BACKENDS, check_backend, native_available  # configuration's

__all__ = ["BACKENDS", "NATIVE_MIN_SETTINGS", "check_backend", "for_job", "native_available",
           "preferred_backend", "resolve"]

#: Settings from which ``auto`` compiles natively: a first compile (about 15 s) costs about
#: as much as 400 settings of a pure-Python sweep on two workers
#: (see ``benchmarks/bench_native.py``).
NATIVE_MIN_SETTINGS = 500
_preferred = ["python"]


def resolve(backend: str) -> str:
    """The backend that runs a trajectory: ``auto`` is this process's preference.

    Examples
    --------
    >>> resolve("auto"), resolve("python")
    ('python', 'python')
    """
    return _preferred[-1] if backend == "auto" else check_backend(backend)


@contextlib.contextmanager
def preferred_backend(backend: str):
    """Resolve ``auto`` to ``backend`` within the block (a job's worker uses it).

    Examples
    --------
    >>> with preferred_backend("python"):
    ...     resolve("auto")
    'python'
    """
    _preferred.append(check_backend(resolve(backend)))
    try:
        yield
    finally:
        _preferred.pop()


def for_job(backend: str, settings: int) -> str:
    """A command's backend for a job of ``settings`` trajectories (``auto`` decided here).

    Examples
    --------
    >>> for_job("python", 10**6)
    'python'
    """
    if backend != "auto":
        return check_backend(backend)
    if settings < NATIVE_MIN_SETTINGS:
        return "python"
    if _params.native_available():  # read there: where a test without numba patches it
        return "numba"
    print(f"reduced-odes: {settings} settings on the pure-Python path; the native backend "
          f"runs them several times faster: {_INSTALL}", file=sys.stderr)
    return "python"
