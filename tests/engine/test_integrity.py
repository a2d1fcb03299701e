"""Results files, grids and the environment that cannot silently go wrong.

Every results line is verified on read (its key against its setting, its checksum against
its members); a grid is checked whole before any work (keys, its model, types, nesting,
size); an empty environment variable is unset; a full cache falls back; every I/O error
names its file; a corrupt data file is one line naming it.
"""

from __future__ import annotations

import errno
import glob
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reduced_odes._grid import MAX_GRID_SETTINGS, load_grid
from reduced_odes._registry import get_model
from reduced_odes._reproduce import differences
from reduced_odes._results import (
    DataFileError,
    ResultsFileError,
    read_json,
    results_line,
    setting_key,
)
from reduced_odes._results_file import read_results, repair_results
from reduced_odes._setting import allowed_keys
from reduced_odes._sweep import run_sweep
from reduced_odes.cli import EXIT_BAD_INPUT, main

ROOT = Path(__file__).resolve().parents[2]
#: A hang guard only, never a measure of speed (no test depends on the clock): a correct
#: run takes seconds to minutes even on a loaded machine; a hung one fails within CI's time.
HANG_GUARD_S = 1800
#: Cheap and deterministic for the default run; ``-m slow`` runs the larger variants.
QUICK = settings(max_examples=12, deadline=None, derandomize=True, database=None,
                 suppress_health_check=[HealthCheck.too_slow])
THOROUGH = settings(max_examples=150, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow])


def _one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def _sweep(grid: Path, out: Path, *extra: str) -> int:
    """``reduced-odes sweep`` of the cheap model, in this process."""
    return main(["sweep", "--model", "deep_linear", "--grid", str(grid), "--out", str(out),
                 "--backend", "python", "--workers", "1", "--no-progress", *extra])


# -- results files: every line verified ----------------------------------------------------
def _square(setting):
    return {"y": setting["x"] ** 2, "z": setting["x"] / 7}


SQUARES = [{"x": x} for x in range(6)]


def _run(path: Path, items=SQUARES):
    with ThreadPoolExecutor(2) as pool:
        return run_sweep(items, _square, path, executor=pool, progress=False)


@pytest.fixture(scope="module")
def clean() -> bytes:
    """The bytes of a clean results file of :data:`SQUARES`."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "r.jsonl"
        _run(path)
        return path.read_bytes()


def _expected() -> dict[str, dict]:
    return {setting_key(s): _square(s) for s in SQUARES}


def _flip_digit(data: bytes, rng: random.Random) -> bytes:
    """A digit of a result changed to another digit: still valid JSON, another value."""
    lines = data.split(b"\n")
    i = rng.randrange(len(lines) - 1)
    start = lines[i].index(b'"result"')
    digits = [j for j in range(start, lines[i].index(b"}", start)) if chr(lines[i][j]).isdigit()]
    j = rng.choice(digits)
    new = rng.choice([d for d in b"0123456789" if d != lines[i][j]])
    lines[i] = lines[i][:j] + bytes([new]) + lines[i][j + 1:]
    return b"\n".join(lines)


def _flip_byte(data: bytes, rng: random.Random) -> bytes:
    j = rng.randrange(len(data))
    return data[:j] + bytes([rng.randrange(256)]) + data[j + 1:]


def _swap_settings(data: bytes, rng: random.Random) -> bytes:
    """Two lines' settings exchanged, all else (keys, results, checks) left."""
    lines = data.split(b"\n")
    i, j = rng.sample(range(len(lines) - 1), 2)
    a, b = json.loads(lines[i]), json.loads(lines[j])
    a["setting"], b["setting"] = b["setting"], a["setting"]
    lines[i], lines[j] = json.dumps(a).encode(), json.dumps(b).encode()
    return b"\n".join(lines)


def _truncate(data: bytes, rng: random.Random) -> bytes:
    return data[:rng.randrange(len(data))]


def _duplicate(data: bytes, rng: random.Random) -> bytes:
    lines = data.split(b"\n")
    i = rng.randrange(len(lines) - 1)
    lines.insert(rng.randrange(len(lines)), lines[i])
    return b"\n".join(lines)


def _junk(data: bytes, rng: random.Random) -> bytes:
    junk = rng.choice([b'{"key": "x", "setting": {"x": 1}, "result": {"y": 1}}', b"[1, 2]",
                       b'{"key": 3}', bytes(rng.randrange(1, 256) for _ in range(20))])
    lines = data.split(b"\n")
    lines.insert(rng.randrange(len(lines)), junk.replace(b"\n", b" "))
    return b"\n".join(lines)


def _reorder(data: bytes, rng: random.Random) -> bytes:
    lines = data.split(b"\n")
    body = lines[:-1]
    rng.shuffle(body)
    return b"\n".join([*body, lines[-1]])


MUTATIONS = [_flip_digit, _flip_byte, _swap_settings, _truncate, _duplicate, _junk, _reorder]


def _mutated(data: bytes, seed: int, count: int) -> bytes:
    rng = random.Random(seed)
    for _ in range(count):
        if data.count(b"\n") >= 2:
            try:
                data = rng.choice(MUTATIONS)(data, rng)
            except (ValueError, KeyError, TypeError):  # a line an earlier mutation broke or
                pass  # inserted: nothing of that kind to change there
    return data


def _check_resume_and_repair(clean_bytes: bytes, seed: int, count: int) -> None:
    """Resume gives exactly a clean run's results, and --repair keeps only verified lines."""
    expected = _expected()
    clean_lines = {json.dumps(r, sort_keys=True) for r in
                   (json.loads(line) for line in clean_bytes.splitlines())}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "r.jsonl"
        path.write_bytes(_mutated(clean_bytes, seed, count))
        try:
            report = _run(path)
        except ResultsFileError:  # a line that is no record at all: the run stops, --repair
            assert repair_results(path) >= 0
            for line in path.read_bytes().splitlines():  # every kept line is a clean one
                assert json.dumps(json.loads(line), sort_keys=True) in clean_lines
            report = _run(path)
        assert {r["key"]: r["result"] for r in report.records} == expected
        assert {r["key"] for r in read_results(path, quiet=True)} == set(expected)
        repair_results(path)
        for line in path.read_bytes().splitlines():  # what resume appended, and clean lines
            record = json.loads(line)
            assert record["key"] == setting_key(record["setting"])
            assert record["result"] == expected[record["key"]]


@QUICK
@given(seed=st.integers(0, 2**32 - 1), count=st.integers(1, 3))
def test_resume_recomputes_every_corrupted_setting_and_keeps_nothing_wrong(clean, seed, count):
    _check_resume_and_repair(clean, seed, count)


@pytest.mark.slow
@THOROUGH
@given(seed=st.integers(0, 2**32 - 1), count=st.integers(1, 6))
def test_resume_and_repair_under_many_mutations(clean, seed, count):
    _check_resume_and_repair(clean, seed, count)


def test_a_changed_result_that_stays_json_is_recomputed_and_repair_drops_it(tmp_path,
                                                                           capsys):
    grid = tmp_path / "grid.toml"
    grid.write_text("[grid]\nsigma = [0.01, 0.001]\n")
    out = tmp_path / "r.jsonl"
    assert _sweep(grid, out) == 0
    clean = out.read_bytes()
    first = clean.split(b"\n")[0]
    at = first.index(b'"T_half": ') + len(b'"T_half": ')
    digit = b"1" if first[at:at + 1] != b"1" else b"2"
    flipped = first[:at] + digit + first[at + 1:]
    out.write_bytes(clean.replace(first, flipped))
    capsys.readouterr()
    assert _sweep(grid, out) == 0  # resume: the changed line is computed again
    captured = capsys.readouterr()
    assert "2 settings, 1 already done, 1 completed" in captured.out
    assert f"{out}:1: 1 results line(s) fail their check (checksum mismatch" in captured.err
    assert sorted(r["result"]["phases"]["T_half"] for r in read_results(out, quiet=True)) == \
        sorted(json.loads(line)["result"]["phases"]["T_half"] for line in clean.splitlines())

    out.write_bytes(clean.replace(first, flipped))
    assert _sweep(grid, out, "--repair") == 0
    assert "1 valid line(s) kept" in capsys.readouterr().err
    assert out.read_bytes().startswith(clean.split(b"\n")[1] + b"\n")  # kept byte for byte


def test_a_line_whose_key_is_not_its_setting_is_not_reused(tmp_path, capsys):
    """Even with a checksum made for it: the key is computed again from the setting."""
    from reduced_odes._results import dumps_checked

    path = tmp_path / "r.jsonl"
    _run(path)
    lines = path.read_bytes().split(b"\n")
    a, b = json.loads(lines[0]), json.loads(lines[1])
    del a["check"]
    a["key"] = b["key"]  # another setting's key, on a line whose checksum covers it
    path.write_bytes(b"\n".join([dumps_checked(a).encode(), *lines[1:]]))
    assert len(read_results(path)) == len(SQUARES) - 1
    assert f"{path}:1: 1 results line(s) fail their check (its key is not its setting's)" \
        in _one_line(capsys.readouterr().err)
    report = _run(path)
    assert (report.skipped, report.completed) == (len(SQUARES) - 1, 1)


def test_lines_without_a_checksum_are_verified_by_their_key(tmp_path, capsys):
    """Files written before checksums (the committed data): read by the key alone, which
    may be the older key of a setting with an integer-valued float."""
    import hashlib

    setting = {"mu": 1.0, "sigma": 0.01}
    older = hashlib.sha256(b'{"mu":1.0,"sigma":0.01}').hexdigest()  # the older encoding
    good = json.dumps({"key": older, "setting": setting, "result": {"T": 2.5}})
    wrong = json.dumps({"key": older, "setting": {"mu": 2.0, "sigma": 0.01},
                        "result": {"T": 2.5}})
    path = tmp_path / "old.jsonl"
    path.write_text(good + "\n" + wrong + "\n")
    records = read_results(path)
    assert [r["setting"] for r in records] == [setting]
    assert records[0]["key"] == setting_key(setting) == setting_key({"mu": 1, "sigma": 0.01})
    assert f"{path}:2: 1 results line(s) fail their check" in _one_line(capsys.readouterr().err)


def test_a_line_whose_checksum_name_changed_is_no_older_line(tmp_path, capsys):
    """A changed byte in ``"check"`` leaves a line without a checksum but with a member no
    older line has: refused, or its changed result would pass on its key alone."""
    line = results_line({"setting": {"x": 2}, "result": {"z": 0.2857142857142857}})
    path = tmp_path / "r.jsonl"
    path.write_text(line.replace('"check"', '"cBeck"').replace("0.2857", "0.2858"))
    assert read_results(path) == []
    assert "member(s) ['cBeck'] of no results line" in _one_line(capsys.readouterr().err)


@pytest.mark.parametrize("raw", sorted(glob.glob(str(ROOT / "figures/data/*/verify-*.jsonl"))))
def test_committed_results_read_whole_and_compare_equal_once_rewritten(raw, tmp_path, capsys):
    """The committed data have no checksums: every line is read (no warning), its bytes are
    left alone, and a fresh file in today's encoding (checksums, merged keys) compares
    equal to it, as ``reproduce`` compares them."""
    committed = Path(raw)
    before = committed.read_bytes()
    records = read_results(committed)
    assert len(records) == before.count(b"\n") and capsys.readouterr().err == ""
    assert committed.read_bytes() == before
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    grid = committed.name.removeprefix("verify-").removesuffix(".jsonl")
    shutil.copy(committed.with_suffix(".json"), fresh)
    (fresh / committed.name).write_text("".join(results_line(r) for r in records))
    assert differences(fresh, committed.parent, grid) == []


# -- grids: checked whole, before any work ------------------------------------------------
def _grid_file(tmp_path: Path, body: str, name: str = "grid.toml") -> Path:
    path = tmp_path / name
    path.write_bytes(body.encode("utf-8", "surrogateescape"))  # a lone \udcff: a bad byte
    return path


@pytest.mark.parametrize("body, needle", [
    ('[grid]\nsigma = 0.01\nmodel = "induction_head"\n', "is not the command's model"),
    ('[grid]\nsigma = 0.01\nmodel = "nope"\n', "grid key model='nope' is not registered"),
    # Grids are data: a module or file reference is refused, even one naming the command's
    # model (issue 34 item 5).
    ('[grid]\nsigma = 0.01\nmodel = "reduced_odes.models.deep_linear:MODEL"\n',
     "a model from a file or module comes from --model only"),
    ("[grid]\nsigma = 0.01\nmodel = 3\n", "model=3 is not a model reference"),
    ('[grid]\nsigma = 0.01\n[fixed]\nmodel = ["deep_linear", "two_mixture"]\n',
     "is not a model reference"),
    ("[grid]\nsigma = [0.01]\n[fixed]\nlr = 3\n", "unknown grid key(s) ['lr']"),
    ("[[grid]]\nsigma = [0.01]\n[[grid]]\nlr = [3]\n", "unknown grid key(s) ['lr']"),
    ("[grid]\nsigma = 1979-05-27\n", "sigma = 1979-05-27 is a date"),
    ("[grid]\nsigma = [[[0.01]]]\n", "sigma nests deeper than 2 levels"),
    ("[grid]\nsigma = [{a = {b = 1}}]\n", "sigma nests deeper than 2 levels"),
    ("[grid]\nsigma = " + "[" * 2000 + "]" * 2000 + "\n", "nests too deep for the TOML parser"),
    ("[grid]\nsigma = " + "{a = " * 2000 + "1" + "}" * 2000 + "\n", "nests too deep"),
    ("[grid]\ns = true\n", "s=True is not a number"),
    ("[grid]\ns = '\udcff'\n", "not UTF-8 text"),
])
def test_bad_grids_are_one_line_and_nothing_runs(tmp_path, capsys, monkeypatch, body, needle):
    import reduced_odes._sweep_command as command

    monkeypatch.setattr(command, "run_sweep", lambda *a, **k: pytest.fail("a sweep started"))
    out = tmp_path / "r.jsonl"
    assert _sweep(_grid_file(tmp_path, body), out) == EXIT_BAD_INPUT
    assert needle in _one_line(capsys.readouterr().err)
    assert not out.exists()


@pytest.mark.parametrize("value", ['"deep_linear"'])
def test_a_grid_may_name_the_commands_model(tmp_path, capsys, value):
    out = tmp_path / "r.jsonl"
    assert _sweep(_grid_file(tmp_path, f"[grid]\nsigma = 0.01\nmodel = {value}\n"), out) == 0
    assert [r["setting"]["model"] for r in read_results(out)] == ["deep_linear"]


def test_equal_numbers_are_one_setting(tmp_path, capsys):
    path = _grid_file(tmp_path, "[grid]\ns = [1, 1.0, 2]\nsigma = [0.01, 1e-2]\n")
    assert load_grid(path) == [{"s": 1, "sigma": 0.01}, {"s": 2, "sigma": 0.01}]
    union = _grid_file(tmp_path, "[[grid]]\ns = [1, 2]\n[[grid]]\ns = [2.0, 3.0]\n", "u.toml")
    assert load_grid(union) == [{"s": 1}, {"s": 2}, {"s": 3.0}]
    out = tmp_path / "r.jsonl"
    assert _sweep(path, out) == 0
    assert "2 settings, 0 already done, 2 completed" in capsys.readouterr().out
    assert _sweep(_grid_file(tmp_path, "[grid]\ns = [1.0, 2.0]\nsigma = 0.01\n", "f.toml"),
                  out) == 0
    assert "2 settings, 2 already done, 0 completed" in capsys.readouterr().out


def test_a_huge_grid_is_refused_by_its_size_before_it_is_expanded(tmp_path, capsys,
                                                                 monkeypatch):
    import reduced_odes._grid as grid

    monkeypatch.setattr(grid, "expand_grid", lambda spec: pytest.fail("expanded"))
    axis = ", ".join(str(0.5 + i / 1000) for i in range(1000))
    sigma = ", ".join(f"{(i + 1) / 1e4}" for i in range(100))
    rtol = ", ".join(f"{(i + 1) / 1e9}" for i in range(100))
    path = _grid_file(tmp_path, f"[grid]\ns = [{axis}]\nsigma = [{sigma}]\nrtol = [{rtol}]\n")
    out = tmp_path / "r.jsonl"
    assert _sweep(path, out) == EXIT_BAD_INPUT
    line = _one_line(capsys.readouterr().err)
    assert "10,000,000 settings (1000 x 100 x 100)" in line
    assert f"at most {MAX_GRID_SETTINGS:,}" in line
    assert not out.exists()


# Hypothesis: TOML grids of the model's keys and junk, through the command line.
KEYS = allowed_keys(get_model("deep_linear"))  # its parameters, variant, solver settings
JUNK_KEYS = ["model", "lr", "S", "grid", "sigma ", "é"]


def _toml(value) -> str:
    """``value`` in TOML (json's spelling of strings is TOML's basic string)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return {"inf": "inf", "-inf": "-inf", "nan": "nan"}.get(repr(value), repr(value))
    if isinstance(value, int | str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + "}"
    return str(value)  # a date: TOML's own spelling


_scalar = st.one_of(
    st.floats(1e-3, 3.0), st.floats(allow_nan=True, allow_infinity=True), st.integers(-5, 5),
    st.integers(-2**70, 2**70), st.booleans(), st.sampled_from(
        # not "numba": a first native compile takes half a minute (test_native covers it)
        ["LSODA", "BDF", "Radau", "default", "python", "auto", "deep_linear",
         "induction_head", "", "x"]), st.dates())
_value = st.recursive(_scalar, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.sampled_from("ab"), inner, max_size=2)),
    max_leaves=6)
_table = st.dictionaries(st.sampled_from(KEYS * 3 + JUNK_KEYS), _value, max_size=4)
_huge = st.just({"s": [0.5 + i / 1e3 for i in range(101)],
                 "sigma": [(i + 1) / 1e4 for i in range(101)],
                 "rtol": [(i + 1) / 1e9 for i in range(101)]})
_document = st.one_of(
    st.builds(lambda grid, fixed: f"[grid]\n{_body(grid)}[fixed]\n{_body(fixed)}",
              _table, _table),
    st.builds(lambda grids: "".join(f"[[grid]]\n{_body(g)}" for g in grids),
              st.lists(_table, min_size=1, max_size=3)),
    st.builds(lambda grid: f"[grid]\n{_body(grid)}", _huge),
    st.text(max_size=40))


def _body(table: dict) -> str:
    return "".join(f"{json.dumps(k)} = {_toml(v)}\n" for k, v in table.items())


def _check_grid(document: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        grid, out = Path(tmp) / "grid.toml", Path(tmp) / "r.jsonl"
        grid.write_text(document, encoding="utf-8")
        stderr = tempfile.TemporaryFile("w+")
        saved, sys.stderr = sys.stderr, stderr
        try:
            status = _sweep(grid, out)
        finally:
            sys.stderr = saved
        stderr.seek(0)
        err = stderr.read()
        assert status in (0, 1, 2), (status, err)
        assert "Traceback" not in err
        if status == EXIT_BAD_INPUT:
            _one_line(err)
            assert not out.exists(), "written on exit 2"


@QUICK
@given(document=_document)
def test_any_grid_exits_0_1_or_2_and_2_is_one_line_with_nothing_written(document):
    _check_grid(document)


@pytest.mark.slow
@settings(max_examples=120, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(document=_document)
def test_many_grids_exit_0_1_or_2_and_2_is_one_line(document):
    _check_grid(document)


# -- environment -----------------------------------------------------------------------
def test_an_empty_cache_variable_is_unset(tmp_path):
    """``REDUCED_ODES_CACHE=`` used to put the cache into the working directory."""
    work, xdg = tmp_path / "work", tmp_path / "xdg"
    work.mkdir()
    result = subprocess.run([sys.executable, "-m", "reduced_odes", "solve", "--model",
                             "deep_linear", "--json"], capture_output=True, text=True,
                            timeout=HANG_GUARD_S, cwd=work,
                            env={**os.environ, "PYTHONPATH": str(ROOT),
                                 "REDUCED_ODES_CACHE": "", "XDG_CACHE_HOME": str(xdg)})
    assert result.returncode == 0, result.stderr
    assert list(work.iterdir()) == []
    assert any((xdg / "reduced-odes").glob("system-*.py"))


def test_an_empty_openblas_coretype_is_unset():
    from reduced_odes._blas import KERNEL, _cpu_flags

    code = "import os, reduced_odes; print(os.environ['OPENBLAS_CORETYPE'])"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=HANG_GUARD_S, env={**os.environ, "PYTHONPATH": str(ROOT),
                                              "OPENBLAS_CORETYPE": ""})
    pinned = {"avx2", "fma"} <= _cpu_flags()
    assert result.stdout.strip() == (KERNEL if pinned else "")


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    """A cache directory of its own, with the process's record of probes and fallbacks
    empty, as in a new process."""
    import reduced_odes._compile as compile_

    root = tmp_path / "cache"
    monkeypatch.setenv("REDUCED_ODES_CACHE", str(root))
    monkeypatch.setattr(compile_, "_PROBED", set())
    monkeypatch.setattr(compile_, "_FALLBACKS", {})
    return root


def test_a_cache_that_fills_up_after_the_probe_falls_back(fresh_cache, monkeypatch, capsys):
    import reduced_odes._compile as compile_
    from reduced_odes import solve
    from reduced_odes.models.deep_linear import MODEL

    written = compile_.atomic_write

    def full_disk(path, text):
        if Path(path).parent == fresh_cache:
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        written(path, text)

    monkeypatch.setattr(compile_, "atomic_write", full_disk)
    trajectory = solve(MODEL.make_params({}), model=MODEL)
    assert trajectory.phases == solve(MODEL.make_params({}), model=MODEL).phases
    warning = _one_line(capsys.readouterr().err)
    assert f"cache directory {fresh_cache} is not usable (No space left on device)" in warning
    fallback = compile_.cache_dir()
    assert fallback != fresh_cache and any(fallback.glob("system-*.py"))
    assert list(fresh_cache.iterdir()) == []


def test_a_full_results_disk_names_the_file(tmp_path, capsys, monkeypatch):
    from reduced_odes._compile import load_system

    load_system("deep_linear")  # compiled now: the only writes left are the results file's
    grid = _grid_file(tmp_path, "[grid]\nsigma = 0.01\n")
    out = tmp_path / "r.jsonl"

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    assert _sweep(grid, out) == EXIT_BAD_INPUT
    assert f"'{out}' No space left on device" in _one_line(capsys.readouterr().err)


def test_an_atomic_write_that_fails_names_its_target_and_leaves_nothing(tmp_path,
                                                                        monkeypatch):
    from reduced_odes._io import atomic_write

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError) as excinfo:
        atomic_write(tmp_path / "a.json", "{}")
    assert excinfo.value.filename == str(tmp_path / "a.json")
    assert excinfo.value.errno == errno.ENOSPC and list(tmp_path.iterdir()) == []


# -- data files ----------------------------------------------------------------------------
@pytest.mark.parametrize("data", [b'{"t": [1, 2', b"\xff\xfe{}", b""])
def test_a_corrupt_data_file_is_one_error_naming_it(tmp_path, data):
    path = tmp_path / "trajectory.json"
    path.write_bytes(data)
    with pytest.raises(DataFileError, match=r"trajectory\.json' is not valid JSON .*delete it"):
        read_json(path)


def test_figures_from_a_truncated_data_file_exit_2_naming_it(tmp_path, capsys):
    data = tmp_path / "data"
    shutil.copytree(ROOT / "figures/data/two_stage_features", data)
    for path in data.glob("*.json"):
        text = path.read_bytes()
        path.write_bytes(text[: len(text) // 2])
    status = main(["figures", "--model", "two_stage_features", "--data", str(data), "--out",
                   str(tmp_path / "out"), "--format", "png"])
    assert status == EXIT_BAD_INPUT
    line = _one_line(capsys.readouterr().err)
    assert str(data) in line and "is not valid JSON" in line and "delete it" in line
