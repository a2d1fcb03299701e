"""The error of a derivation that fails: a leaf, so that the symbolic layer and the model
contract both raise it without importing each other.

Bad input is a :class:`~reduced_odes.ParameterError`, defined with the parameter
declarations (:mod:`reduced_odes._params`, itself a leaf); a trajectory that leaves its
domain is a :class:`~reduced_odes.DomainError` (:mod:`reduced_odes._trajectory`).
"""

from __future__ import annotations

__all__ = ["EXIT_BAD_INPUT", "EXIT_DIFFERS", "EXIT_FAILED", "EXIT_INTERRUPTED",
           "EXIT_NOT_REACHED", "EXIT_OK", "DerivationError"]

#: Exit statuses of the command line (see :mod:`reduced_odes.cli`): success, a verified
#: claim failed, bad input, a phase not reached, fresh results that differ from the
#: committed ones, interrupted.
EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_NOT_REACHED, EXIT_DIFFERS = 0, 1, 2, 3, 4
EXIT_INTERRUPTED = 130


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
