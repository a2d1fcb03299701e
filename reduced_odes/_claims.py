"""What a model's checks report: a verdict row (:class:`Claim`) and what the test suite
checks of its committed figures (:class:`CommittedFigures`).

Part of the model contract (:mod:`reduced_odes._contract`); authors import both from
:mod:`reduced_odes.author`.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

__all__ = ["Claim", "CommittedFigures"]


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

