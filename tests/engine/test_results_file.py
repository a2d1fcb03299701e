"""Tests for reduced_odes._results_file: results files read as a stream, in bounded memory,
and a refused file's one error line."""

import tracemalloc
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from reduced_odes._results import ResultsFileError, results_line
from reduced_odes._results_file import ResultsReader, read_results
from reduced_odes._sweep import run_sweep
from reduced_odes.cli import EXIT_BAD_INPUT, main

GOOD = results_line({"setting": {"x": 1}, "result": {"y": 1}}).encode()


def _square(setting):
    return {"y": setting["x"] ** 2}


def test_a_refused_file_with_a_torn_tail_prints_the_error_alone(tmp_path, capsys):
    """Issue 34 defect 3: a corrupt line and a torn last line gave a warning (the tail)
    and then the error; a refused file prints one line, the error."""
    grid = tmp_path / "grid.toml"
    grid.write_text("[grid]\ns = [2.0]\nsigma = 0.01\n")
    out = tmp_path / "r.jsonl"
    out.write_bytes(GOOD + b'{"key": "b", "sett\n' + GOOD + GOOD[:30])
    status = main(["sweep", "--model", "deep_linear", "--grid", str(grid), "--out", str(out),
                   "--backend", "python", "--workers", "1", "--no-progress"])
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert status == EXIT_BAD_INPUT
    assert len(err) == 1 and "r.jsonl:2: corrupt results line" in err[0], err


def test_the_warnings_of_an_accepted_file_come_after_it_is_read(tmp_path, capsys):
    """A torn tail and a line failing its check: both warned about (once each), and the
    append offset is the end of the last whole line."""
    path = tmp_path / "r.jsonl"
    changed = GOOD.replace(b'"y": 1', b'"y": 2')
    path.write_bytes(GOOD + changed + GOOD[:30])
    reader = ResultsReader(path)
    assert [record["result"] for _, record in reader] == [{"y": 1}]
    assert reader.intact == len(GOOD) + len(changed)
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and "r.jsonl:3: dropped an incomplete" in err[0], err
    assert "r.jsonl:2: 1 results line(s) fail their check" in err[1], err


def test_the_reader_is_lazy(tmp_path):
    """One line in hand at a time: the first record comes before the file is read to its
    end, and the corrupt third line is met only when the iteration reaches it."""
    path = tmp_path / "r.jsonl"
    path.write_bytes(GOOD + GOOD + b"junk\n")
    lines = iter(ResultsReader(path))
    assert next(lines)[0] == GOOD[:-1]
    assert next(lines)[0] == GOOD[:-1]
    with pytest.raises(ResultsFileError, match=r"r\.jsonl:3: corrupt"):
        next(lines)


def _resume_peak(path: Path, lines: int) -> int:
    """Peak bytes allocated (tracemalloc) by a resume of a two-setting grid whose results
    file holds ``lines`` lines of those settings (a file rerun many times)."""
    settings = [{"x": 1}, {"x": 2}]
    with ThreadPoolExecutor(1) as pool:
        run_sweep(settings, _square, path, executor=pool, progress=False)
        done = path.read_bytes()
        path.write_bytes(done * (lines // 2))
        tracemalloc.start()
        try:
            report = run_sweep(settings, _square, path, executor=pool, progress=False,
                               collect=False)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert (report.skipped, report.completed) == (2, 0)
    return peak


def test_resume_memory_does_not_grow_with_the_results_file(tmp_path):
    """Issue 34 defect 15: a resume held every line twice (bytes and record).  Streamed,
    its peak is the same for 200 lines as for 4000 (20 times the file)."""
    small = _resume_peak(tmp_path / "small.jsonl", 200)
    large = _resume_peak(tmp_path / "large.jsonl", 4000)
    # The file grows by 3800 lines (~0.3 MB); held whole, the peak would grow by more than
    # that.  The slack of 64 KiB covers the interpreter's own caches (tracemalloc counts
    # allocations, not time: the figure is the same on any machine load).
    assert large - small < 64 * 1024, (small, large)
    assert len(read_results(tmp_path / "large.jsonl", quiet=True)) == 4000


def test_a_long_resume_shows_progress_in_a_log(tmp_path, capsys, monkeypatch):
    """Issue 34 defect 17: reading a large results file back takes minutes; past the quiet
    seconds (none here: no clock in the test) a log gets plain lines of the bytes read."""
    import reduced_odes._sweep as sweep

    monkeypatch.setattr(sweep, "READ_QUIET_SECONDS", 0.0)
    path = tmp_path / "r.jsonl"
    settings = [{"x": x} for x in range(3000)]
    with ThreadPoolExecutor(1) as pool:
        run_sweep(settings, _square, path, executor=pool, progress=False)
        capsys.readouterr()
        run_sweep(settings, _square, path, executor=pool, progress=True, collect=False)
    err = capsys.readouterr().err
    size = path.stat().st_size
    lines = [line for line in err.splitlines() if line.startswith("reading r.jsonl")]
    assert "\r" not in err and len(lines) >= 2, err
    assert lines[-1].startswith(f"reading r.jsonl {size}/{size} (100%)"), err
