"""One BLAS kernel on every x86-64 machine, so that the reference path's bits do not depend
on the CPU.

OpenBLAS picks its kernels for the CPU it runs on: an AVX-512 machine sums a dot product in
other partial sums than an AVX2 one.  LSODA's Newton iterations call BLAS, so the same run
takes other steps on the two machines (the same phase times to ~3e-9, but a stop rule that
trips at another step ends the run ~1e-5 later, and every value read at the end moves with
it).  Before NumPy or SciPy first load OpenBLAS, :func:`pin_kernel` asks it for its Haswell
kernels (AVX2 and FMA), which every x86-64 CPU that has those instructions runs, and with
which the committed data were computed.

It changes nothing when

* ``OPENBLAS_CORETYPE`` is already set, not empty (the user's choice wins),
* ``REDUCED_ODES_BLAS=native`` is set (keep the kernel OpenBLAS would pick),
* NumPy or SciPy is already imported (OpenBLAS has chosen; a process that imports NumPy
  before :mod:`reduced_odes` keeps its own kernel),
* the CPU is not x86-64 with AVX2 and FMA (another kernel would not run there).

The kernel in force is recorded in every output file
(:func:`reduced_odes._provenance.platform_stamp`).
"""

from __future__ import annotations

import os
import platform
import sys

__all__ = ["KERNEL", "pin_kernel"]

#: The OpenBLAS kernel of the committed data: AVX2 with FMA.
KERNEL = "Haswell"
_NEEDS = frozenset({"avx2", "fma"})


def _cpu_flags() -> frozenset[str]:
    """The CPU's feature flags (Linux's ``/proc/cpuinfo``; empty elsewhere)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def pin_kernel(environ: dict | None = None) -> str | None:
    """Ask OpenBLAS for :data:`KERNEL` unless something above rules it out; the kernel set.

    Examples
    --------
    >>> pin_kernel({"OPENBLAS_CORETYPE": "Prescott"}) is None  # the user's choice stays
    True
    >>> pin_kernel({"REDUCED_ODES_BLAS": "native"}) is None
    True
    """
    environ = os.environ if environ is None else environ
    # A variable set to the empty string counts as unset (OpenBLAS then picks for the CPU).
    if environ.get("OPENBLAS_CORETYPE") or environ.get("REDUCED_ODES_BLAS") == "native":
        return None
    if "numpy" in sys.modules or "scipy" in sys.modules:
        return None
    if platform.machine().lower() not in ("x86_64", "amd64") or not _NEEDS <= _cpu_flags():
        return None
    environ["OPENBLAS_CORETYPE"] = KERNEL
    return KERNEL
