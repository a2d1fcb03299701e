"""What a model's checks report: a verdict row (:class:`Claim`), the tolerances the rows
are held to (:func:`load_tolerances`, read from a data file) and what the test suite
checks of its committed figures (:class:`CommittedFigures`).

Part of the model contract (:mod:`reduced_odes._contract`); authors import these names
from :mod:`reduced_odes.author`.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING

from ._params import ParameterError

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

__all__ = ["TOLERANCES_FILE", "Claim", "CommittedFigures", "load_tolerances"]

#: The data file, in a model's package folder, of its claims' tolerances.
TOLERANCES_FILE = "tolerances.toml"


@dataclass(frozen=True)
class Claim:
    """One row of the verdict table: a prediction, its measurement, and whether they agree.

    Examples
    --------
    >>> row = Claim("T_half against ln(s/u0)/(2s)", 4.6, 4.61, 0.002, 0.01, True)
    >>> row.passed, row.as_dict()["measured"]
    (True, 4.61)
    >>> nan = float("nan")
    >>> Claim("no data", nan, nan, nan, 0.01, False).as_dict()["error"] is None  # JSON null
    True
    """

    name: str
    predicted: float
    measured: float
    error: float
    tolerance: float
    passed: bool
    detail: str = ""
    informative: bool = False

    def __post_init__(self):
        # A model's claims often compute with NumPy: its scalars become plain Python ones,
        # so that the verdict serialises (np.bool_ is no bool to JSON).
        for item in fields(self):
            value = getattr(self, item.name)
            if type(value).__module__ == "numpy" and hasattr(value, "item"):
                object.__setattr__(self, item.name, value.item())

    def as_dict(self) -> dict:
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v)
                for k, v in asdict(self).items()}



@dataclass(frozen=True)
class CommittedFigures:
    """What the test suite checks of a model's committed figures (``figures/<model>/``)
    and of their data files (``figures/data/<model>/``).

    Every committed figure is drawn again from the committed data alone (no
    integration) and compared byte for byte, where the matplotlib version that
    wrote it is the one installed.  Each data file named here is computed afresh
    (by :meth:`Model.figures`, as when it is missing) and compared with the
    committed one to two units of its last kept digit.

    Attributes
    ----------
    digits : int, optional
        Significant digits the data files keep; required with ``data`` or ``slow_data``.
    floor : float
        Values within ``floor`` of zero are written as 0 (0: none are); a fresh value
        may differ from a committed one by ten times that.
    data : tuple of str
        Data files computed afresh in the default test run.
    slow_data : tuple of str
        Data files too slow for the default run: computed afresh in ``pytest -m slow``.
    slow_drawing : bool
        Drawing the figures takes too long for the default run: they are drawn in
        ``pytest -m slow`` only.

    Examples
    --------
    >>> checks = CommittedFigures(digits=5, data=("stages.json",), slow_data=("scaling.json",))
    >>> checks.data + checks.slow_data
    ('stages.json', 'scaling.json')
    >>> CommittedFigures(data=("stages.json",))
    Traceback (most recent call last):
    ...
    ValueError: digits=None; allowed: the significant digits the data files keep
    """

    digits: int | None = None
    floor: float = 0.0
    data: tuple[str, ...] = ()
    slow_data: tuple[str, ...] = ()
    slow_drawing: bool = False

    def __post_init__(self):
        if (self.data or self.slow_data) and self.digits is None:
            raise ValueError(f"digits={self.digits!r}; allowed: the significant digits the "
                             f"data files keep")


def load_tolerances(source: str | os.PathLike[str],
                    table: str = "claims") -> dict[str, tuple[float, str]]:
    r"""The tolerances of a model's claims, each with its reason, read from a data file.

    Tolerances are data, not code: a model keeps them in ``tolerances.toml`` in its
    package folder, a top-level table per group of claims and in it a table per claim,
    with the claim's ``tolerance`` and the ``reason`` for it::

        [claims."T_half against ln(s/u0)/(2s)"]
        tolerance = 1e-2
        reason = "root-finding on an rtol-1e-10 dense output"

    Reading the file runs no code.

    Parameters
    ----------
    source : str or path-like
        The model's package (``__package__`` of its ``claims`` module), whose folder holds
        ``tolerances.toml``; or the path of a TOML file of the same layout.
    table : str
        The group of claims: a top-level table of the file.

    Returns
    -------
    dict of str to (float, str)
        Claim name -> ``(tolerance, reason)``, in the file's order.

    Raises
    ------
    ParameterError
        One line naming the file and the key: the file unreadable or not TOML, ``table``
        missing or empty, or a claim whose entry is not a ``tolerance`` (a finite number
        >= 0) and a ``reason`` (a non-empty string) alone.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> entry = '[claims."T_half"]\ntolerance = {}\nreason = "dense output"\n'
    >>> path = pathlib.Path(tempfile.mkdtemp(), "tolerances.toml")
    >>> path.write_text(entry.format("1e-2")) and load_tolerances(path)
    {'T_half': (0.01, 'dense output')}
    >>> _ = path.write_text(entry.format('"1%"'))  # a string, no number
    >>> try:
    ...     load_tolerances(path)
    ... except ParameterError as error:  # one line, naming the file and the key
    ...     print(str(error).replace(str(path), "tolerances.toml"))
    tolerances.toml: [claims."T_half"] tolerance='1%'; allowed: a finite number >= 0
    """
    path = _tolerances_file(source)
    document = _read_toml(path)
    entries = document.get(table)
    if not isinstance(entries, dict) or not entries:
        raise ParameterError(f"{path}: table={table!r} is missing or empty; allowed: one of "
                             f"the file's tables, {sorted(document)}")
    return {name: _tolerance(f"{path}: [{table}.{json.dumps(name)}]", entry)
            for name, entry in entries.items()}


def _tolerances_file(source: str | os.PathLike[str]) -> Traversable:
    """The file of ``source``: ``tolerances.toml`` in a package's folder (a resource, also
    in a zipped install), or the path given."""
    if not isinstance(source, str):
        return Path(source)
    # Imported here: only a model's claims read tolerances, and a solve never does.
    from importlib.resources import files

    return files(source) / TOLERANCES_FILE


def _read_toml(path: Traversable) -> dict:
    """The TOML document at ``path`` (a path or a package resource); ParameterError naming
    it, in one line, if it cannot be read or is no TOML."""
    import tomllib

    try:
        return tomllib.loads(path.read_bytes().decode("utf-8"))
    except OSError as error:
        raise ParameterError(f"{path}: cannot be read ({error.strerror or error}); a model's "
                             f"tolerances are in {TOLERANCES_FILE} in its package") from None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise ParameterError(f"{path}: not valid TOML ({error})") from None


def _tolerance(where: str, entry: object) -> tuple[float, str]:
    """One claim's ``(tolerance, reason)``; ParameterError naming ``where`` if malformed."""
    if not isinstance(entry, dict) or set(entry) != {"tolerance", "reason"}:
        found = sorted(entry) if isinstance(entry, dict) else repr(entry)
        raise ParameterError(f"{where} holds {found}; allowed: the keys 'reason' and "
                             f"'tolerance' alone")
    value, reason = entry["tolerance"], entry["reason"]
    # An integer is read as its float (exactly, up to 2**53); a bool is no number here.
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) <= 2**53:
        value = float(value)
    if not (isinstance(value, float) and math.isfinite(value) and value >= 0):
        raise ParameterError(f"{where} tolerance={value!r}; allowed: a finite number >= 0")
    if not isinstance(reason, str) or not reason.strip():
        raise ParameterError(f"{where} reason={reason!r}; allowed: a non-empty string")
    return value, reason
