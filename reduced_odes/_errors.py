"""The error of a derivation that fails: a leaf, so that the symbolic layer and the model
contract both raise it without importing each other.

Bad input is a :class:`~reduced_odes.ParameterError`, defined with the parameter
declarations (:mod:`reduced_odes._params`, itself a leaf); a trajectory that leaves its
domain is a :class:`~reduced_odes.DomainError` (:mod:`reduced_odes._trajectory`).
"""

from __future__ import annotations

__all__ = ["DerivationError"]


class DerivationError(RuntimeError):
    """A model's declaration failed to derive; the message names the step that failed.

    Examples
    --------
    >>> error = DerivationError("metric", "shape (2, 3) does not match 2 states")
    >>> str(error), error.step
    ("derivation step 'metric' failed: shape (2, 3) does not match 2 states", 'metric')
    """

    def __init__(self, step: str, detail: str):
        super().__init__(f"derivation step {step!r} failed: {detail}")
        self.step = step
