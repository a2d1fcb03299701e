"""The cross-check policy: a phase time's error estimated from a second run at a hundredth
of the tolerances, and the ill-conditioned phases marked.

:func:`reduced_odes.solve` applies it with ``SolverConfig(cross_check=True)``; the second
run is the caller's (``rerun``: one run of a setting on its backend, without a retry),
so this module needs no stepper.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

from ._params import SolverConfig
from ._setting import Setting
from ._trajectory import DomainError, Trajectory

__all__ = ["CHECK_FACTOR", "ILL_CONDITIONED", "PHASE_AGREEMENT", "cross_checked"]


#: Relative difference of phase times the two backends are held to where both succeed,
#: cross-checked; no error estimate up to it marks a phase ill-conditioned.
PHASE_AGREEMENT = 1e-9
#: The cross-check solves again at this fraction of the tolerances (tolerance proportionality:
#: its error is about a hundredth of the first run's, so the difference estimates the first
#: run's error, and bounds the second's with a wide margin).
CHECK_FACTOR = 0.01
#: An error estimate beyond this multiple of ``rtol`` marks a phase ill-conditioned.  At their
#: defaults the phases of every model move by at most 25 ``rtol`` between ``rtol`` and a
#: hundredth of it (the committee machine's 23, the others below 20), and the tighter run is
#: then within ~1e-10 of runs at 1e-13 on both backends.  two_mixture's logistic T_thetaII
#: moves by 46-49 ``rtol``: its slow approach leaves LSODA at rtol 1e-12 still 1.2e-9 off
#: (against both backends at 1e-13), so it is marked.  Beyond this the phase amplifies the
#: integrator's local errors (a quantity grazing its level, an unstable direction, a slow
#: approach, a start far below ``atol``) rather than showing its accuracy.
ILL_CONDITIONED = 30
#: A check at less than this factor below the requested ``rtol`` (asked for ``rtol`` under
#: 1e-12: the check cannot go below ``SolverConfig``'s least ``rtol``, 1e-13) estimates no
#: error: the phases are then reported unchecked, saying so.
_CHECK_FACTOR_LEAST = 0.1


def cross_checked(result: Trajectory, setting: Setting,
                  rerun: Callable[[Setting], Trajectory]) -> Trajectory:
    """``result`` with its phase times taken from a second solve at a hundredth of the
    tolerances, on the backend that produced it, each with an error estimate (its distance
    from ``result``'s time: the first run's error, and a wide bound on the second's), and
    marked ill-conditioned where the estimate exceeds ``max(PHASE_AGREEMENT,
    ILL_CONDITIONED * rtol)``.

    The series and the dense output stay ``result``'s (they differ from the second run's by
    about its error, far below what a figure shows); the phase times are the second run's, so
    that two backends report the same well-conditioned time to ``PHASE_AGREEMENT``.

    Examples
    --------
    What :func:`~reduced_odes.solve` returns with ``cross_check=True``:

    >>> from reduced_odes import solve
    >>> from reduced_odes.models.deep_linear import DeepLinearParams
    >>> traj = solve(DeepLinearParams(s=2.0, sigma=1e-4), solver=SolverConfig(cross_check=True))
    >>> outcome = traj.to_dict()["phase_outcomes"]["T_half"]
    >>> outcome["ill_conditioned"], outcome["error_estimate"] < 1e-8
    (False, True)
    >>> exact = math.log(2.0 / 1e-8 - 1) / 4  # the logistic law's half-way time
    >>> abs(traj.phases["T_half"] / exact - 1) < 1e-10
    True
    """
    solver = result.solver  # the backend that produced it, after any retry
    rtol, atol = (max(getattr(solver, name) * CHECK_FACTOR, _least(name))
                  for name in ("rtol", "atol"))
    if rtol > solver.rtol * _CHECK_FACTOR_LEAST:
        return _every_phase(result, None, f"not cross-checked: at rtol {solver.rtol:g} no "
                                          f"tighter run is possible (rtol >= {_least('rtol'):g})")
    check = dataclasses.replace(solver, rtol=rtol, atol=atol, cross_check=False, n_output=2)
    limit = max(PHASE_AGREEMENT, ILL_CONDITIONED * solver.rtol)
    try:  # on the same backend: the check estimates this run's error, not the other's
        reference = rerun(setting.with_solver(check))
    except DomainError as exc:
        return _every_phase(result, True, f"the check at rtol {rtol:g} failed: {exc}")
    checked = {k: reference.phases.get(k, math.nan) for k in result.phases}
    conditioning = {k: _conditioning(t, checked[k], rtol, limit)
                    for k, t in result.phases.items()}
    # Where both runs reached a phase, the more accurate time is reported; where only one
    # did, the phase is marked, and the first run's outcome stands.
    phases = {k: checked[k] if math.isfinite(t) and math.isfinite(checked[k]) else t
              for k, t in result.phases.items()}
    return dataclasses.replace(result, phases=phases, conditioning=conditioning)


def _every_phase(result: Trajectory, ill_conditioned: bool | None, reason: str) -> Trajectory:
    """``result`` with every phase given the same cross-check outcome, without an estimate:
    marked (``True``) or not checked (``None``), for ``reason``."""
    return dataclasses.replace(result, conditioning={
        k: {"ill_conditioned": ill_conditioned, "error_estimate": math.nan, "reason": reason}
        for k in result.phases})


def _least(name: str) -> float:
    """The least value :class:`SolverConfig` allows for the tolerance ``name``."""
    return SolverConfig.__dataclass_fields__[name].metadata["allowed"].lo


def _conditioning(time: float, reference: float, rtol: float, limit: float) -> dict:
    """A phase's cross-check: its estimated relative error against the check's time
    ``reference`` (at ``rtol``), ill-conditioned beyond ``limit``."""
    reached, checked = math.isfinite(time), math.isfinite(reference)
    if not reached and not checked:
        return {"ill_conditioned": False, "error_estimate": math.nan, "reason": None}
    if reached != checked:
        return {"ill_conditioned": True, "error_estimate": math.inf,
                "reason": f"ill-conditioned: not reached at rtol {rtol:g}" if reached else
                          f"ill-conditioned: reached at rtol {rtol:g} (t={reference:.10g})"}
    estimate = abs(time - reference) / abs(reference) if reference else abs(time)
    if estimate <= limit:
        return {"ill_conditioned": False, "error_estimate": estimate, "reason": None}
    return {"ill_conditioned": True, "error_estimate": estimate,
            "reason": f"ill-conditioned: at rtol {rtol:g} the time is {reference:.10g}, "
                      f"{estimate:.2g} away (relative), more than {limit:.2g}"}
