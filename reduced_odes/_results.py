"""Result files: trajectories and reports as JSON, with versions and settings stamped in."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ._io import atomic_write, json_safe
from ._params import ParameterError

__all__ = ["CHECK", "DataFileError", "ResultsFileError", "VerificationError", "digest",
           "dumps_checked", "dumps_record", "loads_checked", "loads_record", "numbers_merged",
           "parse_results_line", "read_json", "results_line", "setting_key",
           "trajectory_record", "write_json"]

#: Key of a record that lists, by JSON pointer, the values stored as ``null`` and why.
NULL_REASONS = "null_reasons"
#: Key of a line's checksum: sha256 of the canonical JSON (:func:`_canonical`) of the line's
#: other members, so that a changed byte that leaves valid JSON is still noticed.
CHECK = "check"
_NONFINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def dumps_record(record: dict, encoded: dict[str, str] | None = None) -> str:
    """One strict-JSON line (no bare ``NaN``): a non-finite float is stored as ``null`` and
    its JSON pointer and value are listed under ``"null_reasons"``.

    ``encoded``: further members after the record's own, given as their JSON text (strict
    and plain), e.g. the same metadata in every line of a file, encoded once; the line is
    the same as for ``record | {key: json.loads(text)}``.

    Examples
    --------
    >>> line = dumps_record({"key": "k", "result": {"rate": float("nan")}})
    >>> line
    '{"key": "k", "result": {"rate": null}, "null_reasons": {"/result/rate": "NaN"}}'
    >>> loads_record(line)["result"]["rate"]
    nan
    >>> dumps_record({"key": "k"}, {"metadata": '{"v": 1}'})
    '{"key": "k", "metadata": {"v": 1}}'
    """
    try:  # every float finite and every value plain: the same line, without the walk
        text = json.dumps(record, allow_nan=False)
    except (ValueError, TypeError):  # a non-finite float, or a NumPy value to convert
        pass
    else:
        if not encoded:
            return text
        members = ", ".join(f"{json.dumps(k)}: {v}" for k, v in encoded.items())
        return f"{text[:-1]}, {members}}}" if record else f"{{{members}}}"
    reasons: dict[str, str] = {}
    clean = json_safe(record | {k: json.loads(v) for k, v in (encoded or {}).items()}, reasons)
    if reasons:
        clean[NULL_REASONS] = reasons
    return json.dumps(clean, allow_nan=False, sort_keys=False)


class VerificationError(ValueError):
    """A line that parses but fails a check: its checksum (or, for a results line, its key)."""


def _canonical(value: Any) -> bytes:
    """The one spelling of ``value`` a digest covers: sorted keys, no spaces, floats by
    ``repr`` (which round-trips), NumPy values as the plain ones they hold."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=_tolist).encode()


def _tolist(value: Any) -> Any:
    """JSON fallback for NumPy scalars and arrays."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def digest(value: Any) -> str:
    """The sha256 of ``value``'s canonical JSON: what a results line's checksum and a
    setting's key are.

    Examples
    --------
    >>> digest({"b": 0.1, "a": 1}) == digest({"a": 1, "b": 0.1}) != digest({"a": 1})
    True
    """
    return hashlib.sha256(_canonical(value)).hexdigest()


def dumps_checked(record: dict, encoded: dict[str, str] | None = None) -> str:
    """:func:`dumps_record`'s line with a last member ``"check"``: the sha256 of the canonical
    JSON of the line's other members, which :func:`loads_checked` verifies.

    Examples
    --------
    >>> line = dumps_checked({"key": "k", "result": 1.5})
    >>> others, check = line.split(', "check": ')
    >>> others
    '{"key": "k", "result": 1.5'
    >>> canonical = b'{"key":"k","result":1.5}'  # sorted keys, no spaces
    >>> check == '"' + hashlib.sha256(canonical).hexdigest() + '"}'
    True
    >>> loads_checked(line)
    ({'key': 'k', 'result': 1.5}, True)
    >>> loads_checked(line.replace("1.5", "1.6"))
    Traceback (most recent call last):
    ...
    reduced_odes._results.VerificationError: checksum mismatch ...
    """
    line = dumps_record(record, encoded)
    members = json.loads(line)  # as a reader sees them: NumPy values and NaN already encoded
    return f'{line[:-1]}{", " if members else ""}"{CHECK}": "{digest(members)}"}}'


def loads_checked(line: str | bytes) -> tuple[dict, bool]:
    """:func:`loads_record` of a line, verifying and removing its ``"check"`` member; the
    record and whether it had one (a line written before checksums has none).

    Raises ValueError if ``line`` is not a JSON object, and :class:`VerificationError` if
    its checksum does not match.
    """
    members = _object(line)
    if CHECK not in members:
        return _restored(members), False
    check = members.pop(CHECK)
    try:
        expected = digest(members)
    except ValueError:  # a bare NaN or Infinity: not a line this module wrote
        expected = None
    if check != expected:
        raise VerificationError("checksum mismatch (the line was changed after it was "
                                "written)")
    return _restored(members), True


def loads_record(line: str | bytes) -> dict:
    """Inverse of :func:`dumps_record`: the ``null`` values it listed become floats again.

    Bare ``NaN`` (files written before strict JSON) is still read.  Raises ValueError if
    ``line`` is not a JSON object.
    """
    return _restored(_object(line))


def _object(line: str | bytes) -> dict:
    """The JSON object of ``line``; ValueError if it is none."""
    record = json.loads(line)
    if not isinstance(record, dict):
        raise ValueError("not a JSON object")
    return record


def _restored(record: dict) -> dict:
    """``record`` with the values its ``null_reasons`` list put back (and that member gone);
    ValueError if the list names a value the record does not have."""
    reasons = record.pop(NULL_REASONS, {})
    if not isinstance(reasons, dict):
        raise ValueError(f"{NULL_REASONS} is not an object")
    for pointer, text in reasons.items():
        if not (isinstance(text, str) and text in _NONFINITE):
            raise ValueError(f"{NULL_REASONS} gives {pointer!r} the value {text!r}")
        *parents, last = pointer.split("/")[1:] or [""]
        try:
            node = record
            for part in parents:
                node = node[int(part)] if isinstance(node, list) else node[part]
            if isinstance(node, list):
                node[int(last)] = _NONFINITE[text]
            elif isinstance(node, dict) and last in node:
                node[last] = _NONFINITE[text]
            else:
                raise KeyError(last)
        except (KeyError, IndexError, TypeError, ValueError):
            raise ValueError(f"{NULL_REASONS} names {pointer!r}, which the record does not "
                             f"have") from None
    return record


def trajectory_record(trajectory) -> dict:
    """The ``solve --json`` document plus the output arrays, for figures and archives.

    Examples
    --------
    >>> from reduced_odes import solve
    >>> from reduced_odes.models.induction_head import ModelParams
    >>> record = trajectory_record(solve(ModelParams(L=50, sigma=1e-2)))
    >>> sorted(record["series"])[:3]
    ['L_G4', 'L_IH', 'log_w_kq']
    """
    document = trajectory.to_dict()
    document["series"] = {"t": trajectory.t, **trajectory.series}
    return json_safe(document)


def write_json(path: str | Path, document: dict) -> Path:
    """Write ``document`` atomically as indented JSON (sorted keys: stable diffs).

    NumPy values become plain ones, and a non-finite float ``null``.

    Examples
    --------
    >>> import tempfile, numpy as np
    >>> path = write_json(f"{tempfile.mkdtemp()}/run.json", {"t": np.array([0.0, 1.5]),
    ...                                                        "T_half": float("nan")})
    >>> print(path.read_text(), end="")
    {
     "T_half": null,
     "t": [
      0.0,
      1.5
     ]
    }
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps(json_safe(document), indent=1, sort_keys=True,
                                  allow_nan=False) + "\n")
    return path


class DataFileError(ParameterError):
    """A data or results file that cannot be read as what it should be; the message names
    the file (and line), what is wrong and what to do."""


def read_json(path: str | Path) -> dict:
    """The JSON document in ``path``.

    A file that is not valid JSON (truncated by a full disk or a killed writer, say) raises
    :class:`DataFileError` naming it, rather than a decoder traceback.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> read_json(write_json(f"{tempfile.mkdtemp()}/a.json", {"phases": {"T": 2.5}}))
    {'phases': {'T': 2.5}}
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "data.json"
    >>> _ = path.write_text('{"t": [1, 2')
    >>> read_json(path)
    Traceback (most recent call last):
    ...
    reduced_odes._results.DataFileError: data file '...data.json' is not valid JSON ...
    """
    text = Path(path).read_bytes()
    try:
        return json.loads(text.decode("utf-8"))
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
        why = f"{exc.msg} at line {exc.lineno} column {exc.colno}" \
            if isinstance(exc, json.JSONDecodeError) else "not UTF-8 text"
        raise DataFileError(f"data file {str(path)!r} is not valid JSON ({why}; "
                            f"{len(text)} bytes); delete it to have it computed again, "
                            f"or restore it") from None


# The results-line format of sweeps: one JSON line per finished setting, keyed by
# its setting and checked by its checksum.

def setting_key(setting: Mapping[str, Any]) -> str:
    """Stable key of a setting: sha256 of its JSON with sorted keys (floats via ``repr``).

    Equal numbers give equal keys: a float that equals an integer is written as that integer
    (``1.0`` as ``1``), so that ``L = 200`` and ``L = 200.0`` are one setting.  A bool is not
    a number (``true`` is not ``1``).

    Examples
    --------
    >>> setting_key({"b": 0.1, "a": 1}) == setting_key({"a": 1, "b": 0.1}) != setting_key({"a": 1})
    True
    >>> setting_key({"L": 200.0}) == setting_key({"L": 200}) != setting_key({"L": True})
    True
    """
    return digest(numbers_merged(dict(setting)))


#: Types whose JSON is their key's as it is (a bool stays a bool: it is not a number).
_AS_IS = frozenset({str, int, bool, type(None)})


def numbers_merged(value: Any) -> Any:
    """``value`` with every float that equals an integer as that integer, at any depth."""
    kind = type(value)
    if kind in _AS_IS:
        return value
    if kind is dict:  # a setting: its plain values without a call each (a key per setting)
        return {k: v if type(v) in _AS_IS else numbers_merged(v) for k, v in value.items()}
    if hasattr(value, "tolist") and not isinstance(value, list | tuple | str | float):
        value = value.tolist()  # a NumPy scalar or array
    if isinstance(value, float):
        return int(value) if value.is_integer() else value
    if isinstance(value, dict):
        return {k: numbers_merged(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [numbers_merged(v) for v in value]
    return value


def _legacy_key(setting: Mapping[str, Any]) -> str:
    """The key a line written before :func:`setting_key` merged equal numbers has."""
    return digest(dict(setting))



class ResultsFileError(DataFileError):
    """A results file that is corrupt or not a results file; the message names file and line."""


#: The members of a results line (besides ``"null_reasons"`` and ``"check"``).
_MEMBERS = frozenset({"key", "setting", "result", "error", "metadata"})


def parse_results_line(line: bytes) -> dict[str, Any]:
    """The verified record of one results line: ValueError if it is not one, and
    :class:`VerificationError` if its checksum or its key does not match.

    A line without a checksum (written by an older version) is verified by its key alone,
    which may be the older key of its setting, and may have no other members (a changed
    byte in the name ``"check"`` would otherwise pass); the record returned has the current
    key.
    """
    record, checked = loads_checked(line.decode())  # JSON and UTF-8 errors are ValueErrors
    setting = record.get("setting")
    if not isinstance(record.get("key"), str) or not isinstance(setting, dict):
        raise ValueError("not a sweep record (no 'key' and 'setting')")
    if not checked and (unknown := sorted(set(record) - _MEMBERS)):  # e.g. "check" misspelt
        raise VerificationError(f"no checksum, and member(s) {unknown} of no results line")
    key = setting_key(setting)
    if record["key"] != key and (checked or record["key"] != _legacy_key(setting)):
        raise VerificationError("its key is not its setting's")
    record["key"] = key
    return record



def results_line(record: Mapping[str, Any]) -> str:
    """The results line of ``record`` (its ``setting``, ``result`` or ``error``, and any
    further members) with its newline: the key computed from the setting first, the
    checksum last.

    Examples
    --------
    >>> line = results_line({"setting": {"x": 1.0}, "result": {"y": 2}})
    >>> line.startswith('{"key": "' + setting_key({"x": 1}) + '", "setting": {"x": 1.0}')
    True
    """
    members = {k: v for k, v in record.items() if k not in ("key", CHECK)}
    return dumps_checked({"key": setting_key(record["setting"])} | members) + "\n"
