"""Cost per line of verifying results lines: the checksum written, and the key and checksum
checked on read, against the same line without them.

Run from the repository root::

    python benchmarks/bench_results_check.py [--repeat 5]

Uses the committed verify lines of every model (``figures/data/*/verify-*.jsonl``, lines
of 0.4 to 1.3 kB), re-encoded as today's writer writes them.  Prints, per file, the
microseconds per line of writing (``dumps_record`` vs ``results_line``) and of reading
(``loads_record`` vs the verified read), best of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _best(repeat: int, work) -> float:
    """The fastest of ``repeat`` runs of ``work()``, in seconds."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    from reduced_odes._results import results_line
    from reduced_odes._results_file import read_results

    print(f"{'file':50s} {'lines':>5s} {'bytes':>6s}  write: plain checked   read: plain "
          f"verified  (us per line)")
    for path in sorted(ROOT.glob("figures/data/*/verify-*.jsonl")):
        records = read_results(path)
        checked = [results_line(r).rstrip("\n").encode() for r in records]
        per_line = {k: 1e6 * v / len(records) for k, v in _costs(records, args.repeat).items()}
        size = sum(map(len, checked)) // len(records)
        print(f"{str(path.relative_to(ROOT)):50s} {len(records):5d} {size:6d}  "
              f"{per_line['write plain']:11.1f} {per_line['write checked']:7.1f}   "
              f"{per_line['read plain']:10.1f} {per_line['read verified']:8.1f}")


def _costs(records: list[dict], repeat: int) -> dict[str, float]:
    """Seconds to write and to read ``records`` as lines, without and with the checks."""
    from reduced_odes._results import dumps_record, loads_record, results_line
    from reduced_odes._results import parse_results_line as _record

    plain = [dumps_record(r) for r in records]
    checked = [results_line(r).rstrip("\n").encode() for r in records]
    return {
        "write plain": _best(repeat, lambda: [dumps_record(r) for r in records]),
        "write checked": _best(repeat, lambda: [results_line(r) for r in records]),
        "read plain": _best(repeat, lambda: [loads_record(line) for line in plain]),
        "read verified": _best(repeat, lambda: [_record(line) for line in checked]),
    }

if __name__ == "__main__":
    main()
