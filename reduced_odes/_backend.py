"""Which integrator runs a trajectory: the pure-Python reference or the native backend.

``SolverConfig.backend`` is ``"python"``, ``"numba"`` or ``"auto"``.  A
trajectory records the backend that actually ran it, never ``"auto"``:

* :func:`resolve` turns ``auto`` into this process's preference (``python``
  unless a job set another with :func:`preferred_backend`);
* :func:`for_job` is what a command decides for ``auto``: the native backend
  when numba is installed and the job is large enough to pay for a first
  compile (:data:`NATIVE_MIN_SETTINGS` settings), else the reference, with one
  line on stderr when a large job could have used ``[fast]``.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import sys

from ._params import ParameterError

__all__ = ["BACKENDS", "NATIVE_MIN_SETTINGS", "for_job", "native_available",
           "preferred_backend", "prepare", "resolve"]

BACKENDS = ("python", "numba", "auto")
#: Settings from which ``auto`` compiles natively: a first compile (about 15 s) costs about
#: as much as 400 settings of a pure-Python sweep on two workers
#: (see ``benchmarks/bench_native.py``).
NATIVE_MIN_SETTINGS = 500
_INSTALL = "pip install 'reduced-odes[fast]'"
_preferred = ["python"]


@functools.cache  # asked for every SolverConfig; each search of sys.path costs ~0.1 ms
def native_available() -> bool:
    """Whether numba is importable (the ``[fast]`` extra is installed).

    Examples
    --------
    >>> isinstance(native_available(), bool)
    True
    """
    return importlib.util.find_spec("numba") is not None


def check_backend(backend: str) -> str:
    """``backend``, or ParameterError if it is ``numba`` and numba is not installed."""
    if backend == "numba" and not native_available():
        raise ParameterError(f"backend='numba' needs numba, which is not installed ({_INSTALL}); "
                             f"allowed without it: python, auto")
    return backend


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
    if native_available():
        return "numba"
    print(f"reduced-odes: {settings} settings on the pure-Python path; the native backend "
          f"runs them several times faster: {_INSTALL}", file=sys.stderr)
    return "python"


def prepare(model, variants, backend: str) -> None:
    """Derive and compile here, once, what a job's workers load: each variant's system and,
    for the native backend, its twin's machine code (else every worker would compile it).

    Examples
    --------
    >>> from reduced_odes.models import get_model
    >>> prepare(get_model("deep_linear"), ["default"], "python")
    """
    from ._compile import load_system

    for variant in variants:
        load_system(model, variant)
        if backend == "numba":
            from ._native import warm

            warm(model, variant)
