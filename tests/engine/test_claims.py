"""A model's claim tolerances as data: ``tolerances.toml`` beside its claims, read by
:func:`reduced_odes.author.load_tolerances`; a malformed file is one line naming the file
and the key, and ``verify`` exits 2 on it before any work."""

from __future__ import annotations

import textwrap
import tomllib
from pathlib import Path

import pytest

from reduced_odes import ParameterError
from reduced_odes.author import load_tolerances
from reduced_odes.cli import main

MODELS = Path(__file__).resolve().parents[2] / "reduced_odes" / "models"
#: Each built-in model's tables of tolerances and the module name that holds each, as read.
LOADED = {
    "committee_machine": {"claims": ("claims", "TOLERANCES"),
                          "activation_claims": ("claims", "ACTIVATION_TOLERANCES")},
    "induction_head": {"claims": ("claims", "TOLERANCES")},
    "two_mixture": {"claims": ("claims", "TOLERANCES")},
    "two_stage_features": {"claims": ("claims", "TOLERANCES"),
                           "compare": ("ground_truth", "TOLERANCES")},
}
GOOD = '[claims."T_half"]\ntolerance = 1e-2\nreason = "root-finding on a dense output"\n'


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "tolerances.toml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("model", sorted(LOADED))
def test_each_model_reads_every_table_of_its_file(model):
    """The names the models use hold the file's entries, in its order: compared with the
    file read by tomllib directly.  Every table of the file is read by some module."""
    import importlib

    path = MODELS / model / "tolerances.toml"
    document = tomllib.loads(path.read_text(encoding="utf-8"))
    assert set(document) == set(LOADED[model])
    for table, (module, name) in LOADED[model].items():
        used = getattr(importlib.import_module(f"reduced_odes.models.{model}.{module}"), name)
        expected = {k: (v["tolerance"], v["reason"]) for k, v in document[table].items()}
        if model == "induction_head":  # its verdict files list the tolerances alone
            expected = {k: value for k, (value, _) in expected.items()}
        assert list(used.items()) == list(expected.items())


def test_every_model_folder_with_claims_has_its_file():
    with_claims = {p.parent.name for p in MODELS.glob("*/claims.py")}
    assert with_claims == {p.parent.name for p in MODELS.glob("*/tolerances.toml")}
    assert with_claims == set(LOADED)


def test_a_file_read_by_path_and_by_package(tmp_path):
    assert load_tolerances(_write(tmp_path, GOOD)) == {
        "T_half": (0.01, "root-finding on a dense output")}
    # An integer is a tolerance too, read as its float (JSON writes 0.0 either way).
    [(value, _)] = load_tolerances(_write(tmp_path, GOOD.replace("1e-2", "0"))).values()
    assert value == 0.0 and type(value) is float
    assert load_tolerances("reduced_odes.models.two_mixture")["T1"][0] == 5e-3


@pytest.mark.parametrize(("text", "table", "says"), [
    ("", "claims", "table='claims' is missing or empty"),
    ("[claims]\n", "claims", "table='claims' is missing or empty"),
    (GOOD, "compare", "table='compare' is missing or empty; allowed: one of the file's "
                      "tables, ['claims']"),
    (GOOD.replace("1e-2", "1" + "0" * 400), "claims", "allowed: a finite number >= 0"),
    ("[claims\n", "claims", "not valid TOML (Expected ']' at the end of a table declaration"),
    (GOOD.replace("tolerance = 1e-2\n", ""), "claims",
     "[claims.\"T_half\"] holds ['reason']; allowed: the keys 'reason' and 'tolerance' alone"),
    (GOOD + "rtol = 1\n", "claims", "[claims.\"T_half\"] holds ['reason', 'rtol', 'tolerance']"),
    ('[claims]\n"T_half" = 0.01\n', "claims", "[claims.\"T_half\"] holds 0.01; allowed"),
    (GOOD.replace("1e-2", "true"), "claims", "tolerance=True; allowed: a finite number >= 0"),
    (GOOD.replace("1e-2", "-1e-2"), "claims", "tolerance=-0.01; allowed: a finite number >= 0"),
    (GOOD.replace("1e-2", "nan"), "claims", "tolerance=nan; allowed: a finite number >= 0"),
    (GOOD.replace("1e-2", "inf"), "claims", "tolerance=inf; allowed: a finite number >= 0"),
    (GOOD.replace('"root-finding on a dense output"', '" "'), "claims",
     "[claims.\"T_half\"] reason=' '; allowed: a non-empty string"),
    (GOOD.replace('"root-finding on a dense output"', "1"), "claims", "reason=1; allowed"),
], ids=["empty file", "empty table", "other table", "huge integer", "not TOML",
        "no tolerance", "extra key", "bare number", "bool", "negative", "nan", "inf",
        "blank reason", "reason no string"])
def test_a_malformed_file_is_one_line_naming_file_and_key(tmp_path, text, table, says):
    path = _write(tmp_path, text)
    with pytest.raises(ParameterError) as raised:
        load_tolerances(path, table)
    message = str(raised.value)
    assert message.startswith(f"{path}: ") and says in message and "\n" not in message


def test_a_missing_or_undecodable_file_names_it(tmp_path):
    with pytest.raises(ParameterError, match=r"tolerances\.toml: cannot be read \(No such file"):
        load_tolerances(tmp_path / "tolerances.toml")
    path = tmp_path / "tolerances.toml"
    path.write_bytes(b"\xff\xfe")
    with pytest.raises(ParameterError, match=r"tolerances\.toml: not valid TOML \('utf-8'"):
        load_tolerances(path)


def test_verify_exits_2_with_one_line_on_a_malformed_file(tmp_path, capsys):
    """A user's file model that reads its tolerances when ``verify`` asks for its settings:
    the malformed file stops the command there, before any setting runs."""
    _write(tmp_path, GOOD.replace("1e-2", '"1%"'))
    model = tmp_path / "checked.py"
    model.write_text(textwrap.dedent("""
        from pathlib import Path

        from reduced_odes.author import load_tolerances
        from reduced_odes.models.deep_linear.model import DeepLinear


        class Checked(DeepLinear):
            name = "checked"
            grids = ("quick",)

            def verify_settings(self, grid, variants):
                load_tolerances(Path(__file__).with_name("tolerances.toml"))
                raise AssertionError("a malformed file must stop verify here")

            def measure(self, setting):
                raise AssertionError("no setting may run")

            def claims(self, records, variants):
                raise AssertionError("no claim may be held")


        MODEL = Checked()
        """), encoding="utf-8")
    status = main(["verify", "--model", f"{model}:MODEL", "--grid", "quick",
                   "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert status == 2
    assert err.count("\n") == 1 and "tolerances.toml: [claims.\"T_half\"] tolerance='1%'" in err
