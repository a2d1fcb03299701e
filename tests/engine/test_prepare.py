"""What a job does before its workers start: each system its settings need derived once, a
line on stderr while a derivation runs, and the main job's derivations on a pool."""

import io
from concurrent.futures import ThreadPoolExecutor

from reduced_odes._compile import is_cached
from reduced_odes._prepare import derive_all, prepare, systems
from reduced_odes._progress import Activity
from reduced_odes.cli import main
from reduced_odes.models import get_model


def test_systems_are_the_distinct_variants_and_structures_of_the_settings():
    machine = get_model("committee_machine")
    settings = [{"activation": "erf", "K": 2, "M": 2}, {"activation": "erf", "K": 2, "M": 2},
                {"activation": "relu", "K": 3, "M": 2}, {"activation": "erf"},
                {"activation": "erf", "K": 0}]  # out of range: left to the run
    found = [s[1:] for s in systems(machine, ["erf", "relu"], settings)]

    def structure(**values):  # the model's own: more than K and M (eta > 0 adds a term)
        return tuple(sorted(machine.structure(machine.make_params(values)).items()))

    assert structure() == structure(K=2, M=2)  # the defaults: the last is the first's system
    assert found == [("erf", structure(K=2, M=2)), ("relu", structure(K=3, M=2))]
    assert [s[1:] for s in systems(get_model("deep_linear"), ["default"])] == [("default", ())]


def test_a_derivation_not_in_the_cache_is_shown_while_it_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("REDUCED_ODES_CACHE", str(tmp_path))
    model = get_model("deep_linear")
    prepare(model, ["default"], "python", show=True)
    first = capsys.readouterr().err.splitlines()
    assert [line.split(":")[1].strip() for line in first] == ["deriving deep_linear default ...",
                                                               "deriving deep_linear default"]
    assert first[-1].split(": ")[-1].startswith("done in ")
    assert is_cached(model, "default")
    prepare(model, ["default"], "python", show=True)  # cached: nothing to show
    assert capsys.readouterr().err == ""


def test_an_activity_says_it_is_alive_while_it_runs():
    out = io.StringIO()
    with Activity("deriving a big system", show=True, every=0.001, stream=out):
        while "still running" not in out.getvalue():  # no clock: a line, however late
            pass
    lines = out.getvalue().splitlines()
    assert lines[0] == "reduced-odes: deriving a big system ..."
    assert "deriving a big system: still running, elapsed " in lines[1]
    assert ": done in " in lines[-1]
    quiet = io.StringIO()
    with Activity("nothing shown", show=False, every=0.001, stream=quiet):
        pass
    assert quiet.getvalue() == ""


def test_derive_all_derives_what_is_missing_once_and_says_so(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("REDUCED_ODES_CACHE", str(tmp_path))
    wanted = systems(get_model("deep_linear"), ["default"]) * 2  # twice: derived once
    with ThreadPoolExecutor(2) as pool:
        assert derive_all(wanted, pool) == 1
        assert derive_all(wanted, pool) == 0
    err = capsys.readouterr().err
    assert "reduced-odes: derived deep_linear default (1/1), elapsed" in err


def test_reproduce_says_what_it_did_for_a_model_with_only_a_flow(tmp_path, capsys):
    """deep_linear has no derivation export, claims or figures: the main job said nothing
    after its header; it says that its flow was derived and compiled."""
    assert main(["reproduce", "--only", "deep_linear", "--results", str(tmp_path / "r")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[out.index("== deep_linear") + 1].startswith(
        "deep_linear: flow derived and compiled (default: log_a, log_b)")
