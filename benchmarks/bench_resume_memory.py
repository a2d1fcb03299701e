"""Peak memory (RSS) of resuming a sweep whose results file is complete.

Run from the repository root::

    python benchmarks/bench_resume_memory.py [--lines 1000000] [--keep FILE.jsonl]

Writes a synthetic results file of ``--lines`` settings, each line carrying a real
``solve --json`` document of ``deep_linear`` (about 2.6 KB, as a sweep writes), then, in a
fresh process each:

* ``grid``: builds the grid's settings only (what any run of that grid holds);
* ``resume``: runs :func:`reduced_odes._sweep.run_sweep` on that grid and file, which
  verifies every line and finds nothing left to run.

Prints the peak RSS of both and their difference: what reading the file back costs.
The results file is written once: ``--keep FILE`` reuses it on a second run, and
completes it if a first run was killed while writing.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _settings(lines: int) -> list[dict]:
    return [{"model": "deep_linear", "s": 1.0 + i * 1e-7, "sigma": 0.01, "backend": "python"}
            for i in range(lines)]


def _complete_lines(path: Path) -> int:
    """How many whole lines ``path`` holds; a torn last line (a killed writer) is cut off."""
    count, intact = 0, 0
    with open(path, "rb") as fh:
        for line in fh:
            if line.endswith(b"\n"):
                count, intact = count + 1, intact + len(line)
    os.truncate(path, intact)
    return count


def _write(path: Path, lines: int) -> None:
    """Append the lines ``path`` lacks of the first ``lines`` settings (so that a killed
    writer is resumed, not restarted)."""
    from reduced_odes._results import results_line
    from reduced_odes._sweep_command import solve_setting

    done = _complete_lines(path) if path.exists() else 0
    document = solve_setting(_settings(1)[0])
    metadata = {"versions": {"reduced_odes": "bench"}}
    with open(path, "a") as fh:
        for setting in _settings(lines)[done:]:
            fh.write(results_line({"setting": setting, "result": document,
                                   "metadata": metadata}))


def _child(mode: str, path: str, lines: int) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from reduced_odes._sweep import run_sweep

    settings = _settings(lines)
    start = time.perf_counter()
    if mode == "resume":
        with ThreadPoolExecutor(1) as pool:
            report = run_sweep(settings, dict, path, executor=pool, progress=False,
                               collect=False)
        assert (report.skipped, report.completed) == (lines, 0), report
    wall = time.perf_counter() - start
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    print(f"{peak_kb} {wall:.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--keep", type=Path, default=None,
                        help="results file to write, or to reuse and complete")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child[0], args.child[1], args.lines)
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = args.keep or Path(tmp) / "results.jsonl"
        start = time.perf_counter()
        _write(path, args.lines)
        print(f"{args.lines:,} lines, {path.stat().st_size / 1e9:.2f} GB, written in "
              f"{time.perf_counter() - start:.0f} s")
        peaks = {}
        for mode in ("grid", "resume"):
            out = subprocess.run([sys.executable, __file__, "--lines", str(args.lines),
                                  "--child", mode, str(path)], check=True,
                                 capture_output=True, text=True).stdout.split()
            peaks[mode] = int(out[0]) / 1024 ** 2
            print(f"{mode:6}: peak RSS {peaks[mode]:.2f} GB, {float(out[1]):.0f} s")
        print(f"reading the file back: {peaks['resume'] - peaks['grid']:+.2f} GB "
              f"({(peaks['resume'] - peaks['grid']) * 1024 ** 3 / args.lines:.0f} bytes "
              f"per line)")


if __name__ == "__main__":
    main()
