"""What the tests of the compile locks share: the order numba cached a module's functions."""

from pathlib import Path


def compiled_in_order(path: Path, entries) -> list[str]:
    """Those of ``entries`` (function names of the generated module ``path``) that numba has
    cached, in the order it cached them (its index files' times), where
    :func:`reduced_odes._native._engines.cached` looks for them."""
    from reduced_odes._native._engines import _numba_cache_dir

    directory = _numba_cache_dir(path)
    times = {}
    for entry in entries:
        indexes = list(directory.glob(f"{path.stem}.{entry}-*.nbi"))
        if indexes:
            times[entry] = min(p.stat().st_mtime_ns for p in indexes)
    return sorted(times, key=times.get)
