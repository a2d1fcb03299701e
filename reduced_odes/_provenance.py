"""Version and settings stamps recorded in every output file."""

from __future__ import annotations

import importlib.metadata
import platform

from ._version import __version__

__all__ = ["versions"]


def versions() -> dict[str, str]:
    """Versions of the package and of the libraries its results depend on.

    Examples
    --------
    >>> sorted(versions())
    ['matplotlib', 'mpmath', 'numpy', 'python', 'reduced-odes', 'scipy', 'sympy']
    """
    stamp = {"reduced-odes": __version__, "python": platform.python_version()}
    for name in ("sympy", "scipy", "numpy", "mpmath", "matplotlib"):
        try:
            stamp[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            stamp[name] = "not installed"
    return stamp
