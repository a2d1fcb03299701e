"""Version and settings stamps recorded in every output file."""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import platform
from pathlib import Path

from ._version import __version__

__all__ = ["platform_stamp", "source_stamp", "versions"]


def versions() -> dict[str, str]:
    """Versions of the package and of the libraries its results depend on.

    Examples
    --------
    >>> sorted(versions())
    ['matplotlib', 'mpmath', 'numpy', 'python', 'reduced-odes', 'scipy', 'sympy']
    """
    return dict(_versions())  # a copy: callers may add to it


@functools.cache
def _versions() -> dict[str, str]:
    """Read once per process: package metadata costs milliseconds per read, and every
    trajectory's record carries the versions."""
    stamp = {"reduced-odes": __version__, "python": platform.python_version()}
    for name in ("sympy", "scipy", "numpy", "mpmath", "matplotlib"):
        try:
            stamp[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            stamp[name] = "not installed"
    return stamp


@functools.cache
def source_stamp() -> str:
    """A hash of the package's own source files (16 hex digits).

    Results computed by other code carry another stamp: a resumed run recomputes them
    instead of mixing them with its own (:data:`reduced_odes._sweep.RESUME_KEYS`).

    Examples
    --------
    >>> len(source_stamp()), source_stamp() == source_stamp()
    (16, True)
    """
    root = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def _cpu() -> str:
    """The CPU's model name (``/proc/cpuinfo`` on Linux), else what :mod:`platform` knows."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _blas() -> list[dict] | dict:
    """The BLAS in use: ``threadpoolctl``'s runtime view if installed (it names the kernel
    OpenBLAS picked for this CPU), else NumPy's build configuration."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        import numpy as np

        config = np.show_config(mode="dicts") or {}
        return {"source": "numpy.show_config",
                **{k: v for k, v in config.get("Build Dependencies", {}).items()
                   if k in ("blas", "lapack")}}
    keys = ("internal_api", "version", "architecture", "threading_layer", "num_threads")
    return [{k: info.get(k) for k in keys} for info in threadpool_info()
            if info.get("user_api") == "blas"]


def platform_stamp() -> dict:
    """The machine a result was computed on: CPU, BLAS (numbers such as LSODA's nfev depend
    on the BLAS kernel chosen per CPU) and the ``OPENBLAS_CORETYPE`` override, if any.

    Examples
    --------
    >>> sorted(platform_stamp())
    ['blas', 'cpu', 'machine', 'openblas_coretype', 'system']
    """
    import os

    coretype = os.environ.get("OPENBLAS_CORETYPE") or None  # empty: unset
    return {"cpu": _cpu(), "machine": platform.machine(), "system": platform.system(),
            "blas": _blas(), "openblas_coretype": coretype}
