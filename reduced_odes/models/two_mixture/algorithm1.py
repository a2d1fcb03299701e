"""Algorithm 1, layer-wise training: neurons, then attention, then neurons again.

Each stage is one flow of the engine (the other block's gate set to 0),
started from the state where the previous stage ended: stage I ends at the
first ``A >= A_I``, stage II at the first ``theta >= theta_II`` (both
event-located by :func:`~reduced_odes.solve`), stage III runs for
``stage3_factor`` times the first two stages together (or up to the solver's
``t_end``).  The stages are stitched into one :class:`~reduced_odes.Trajectory`
whose phases hold the stage durations and the crossings ``T1, T2, T3`` of the
whole run (one that no stage reached is NaN, with its reason in ``unreached``: e.g. T2
with ``theta_II < theta2``, where stage II stops the attention below ``theta2`` and stage
III trains the neurons only), and whose final values hold the stage-III loss.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from reduced_odes import SolverConfig, SolverStats, Trajectory
from reduced_odes.author import ParameterError

from .params import TwoMixtureParams

__all__ = ["STAGES", "run_algorithm1"]

#: Algorithm 1: (phase name of the duration, trained block, crossing that ends the stage).
STAGES = (("stage_I", "neurons", "T_AI"), ("stage_II", "attention", "T_thetaII"),
          ("stage_III", "neurons", None))
#: Crossings of the whole run, reported at their first stage.
CROSSINGS = ("T1", "T2", "T3")


def _stage_run(flow: TwoMixtureParams, variant: str, solver: SolverConfig, start,
               event: str | None, duration: float | None) -> Trajectory:
    """One stage, up to its ending crossing ``event`` (or for ``duration``)."""
    from reduced_odes import solve

    if event is not None:
        probe = solve(flow, variant, replace(solver, t_end=None), initial=start)
        duration = probe.phases[event]
        if not math.isfinite(duration):
            raise ParameterError(f"Algorithm 1 stage training the {flow.train} never reaches "
                                 f"{event}; allowed: A_I, theta_II that the stage can reach")
    return solve(flow, variant, replace(solver, t_end=duration), initial=start)


def _stage_three_time(params: TwoMixtureParams, solver: SolverConfig, elapsed: float) -> float:
    if solver.t_end is None:
        return params.stage3_factor * elapsed
    if solver.t_end <= elapsed:
        raise ParameterError(f"t_end={solver.t_end!r} must exceed the first two stages of "
                             f"Algorithm 1 ({elapsed:.6g})")
    return solver.t_end - elapsed


def run_algorithm1(params: TwoMixtureParams, variant: str, solver: SolverConfig | None = None,
                   initial: Mapping | Sequence | None = None) -> Trajectory:
    """Run Algorithm 1 on the reduced flow and stitch its stages into one trajectory.

    Parameters
    ----------
    params : TwoMixtureParams
        With ``protocol="algorithm1"``; ``A_I``, ``theta_II`` end stages I and II.
    variant : {"square", "logistic"}
    solver : SolverConfig, optional
        ``t_end`` (if set) ends stage III; otherwise ``stage3_factor`` does.
    initial : mapping or sequence, optional
        The state at which stage I starts (as for :func:`~reduced_odes.solve`).

    Returns
    -------
    Trajectory
        Stage times offset to one clock; ``phases`` has ``stage_I``, ``stage_II``,
        ``stage_III`` (durations) and ``T1``, ``T2``, ``T3``, ``T_AI``, ``T_thetaII``
        of the whole run; ``final["loss"]`` is the stage-III loss.

    Examples
    --------
    >>> params = TwoMixtureParams(protocol="algorithm1", stage3_factor=1)
    >>> traj = run_algorithm1(params, "square")  # doctest: +SKIP
    >>> p = traj.phases  # doctest: +SKIP
    >>> round(p["stage_I"], 3), p["T_AI"] == p["stage_I"]  # doctest: +SKIP
    (35.206, True)
    """
    solver = solver or SolverConfig()
    stages, start, elapsed = [], initial, 0.0
    for _, train, event in STAGES:
        duration = None if event else _stage_three_time(params, solver, elapsed)
        traj = _stage_run(replace(params, protocol="joint", train=train), variant, solver,
                          start, event, duration)
        stages.append(traj)
        elapsed += float(traj.t[-1])
        start = {name: float(traj.series[name][-1]) for name in traj.system.coordinate_names}
    return stitch(params, solver, stages)


def stitch(params: TwoMixtureParams, solver: SolverConfig,
           stages: Sequence[Trajectory]) -> Trajectory:
    """One trajectory of consecutive stage runs: stage ``k`` starts where ``k - 1`` ended.

    The first output point of each later stage repeats the previous end and is dropped.
    """
    durations = [float(s.t[-1]) for s in stages]
    offsets = np.concatenate([[0.0], np.cumsum(durations)])
    keep = [slice(None)] + [slice(1, None)] * (len(stages) - 1)
    t = np.concatenate([s.t[k] + o for s, k, o in zip(stages, keep, offsets[:-1], strict=True)])
    series = {name: np.concatenate([s.series[name][k] for s, k in zip(stages, keep, strict=True)])
              for name in stages[0].series}
    phases = {name: d for (name, _, _), d in zip(STAGES, durations, strict=True)}
    phases["T_AI"], phases["T_thetaII"] = float(offsets[1]), float(offsets[2])
    for name in CROSSINGS:
        phases[name] = next((o + s.phases[name] for s, o in zip(stages, offsets[:-1], strict=True)
                             if math.isfinite(s.phases[name])), math.nan)
    first = stages[0]
    # A crossing no stage reached: the last stage's reason, where the whole run ends.
    unreached = {name: f"in no stage of Algorithm 1; stage III, from t={offsets[-2]:.6g} "
                       f"(its own clock here): {stages[-1].unreached.get(name, 'not reached')}"
                 for name in CROSSINGS if not math.isfinite(phases[name])}
    stats = SolverStats(first.stats.method, solver.rtol, solver.atol,
                        *(sum(getattr(s.stats, f) for s in stages)
                          for f in ("nfev", "njev", "nlu", "steps")))
    return Trajectory(first.model, first.variant, first.variant_option, params, solver, None, t,
                      series, phases, stats, _stitched_dense(stages, offsets), first.system,
                      unreached, system_args=_values(params, first.variant))


def _values(params: TwoMixtureParams, variant: str) -> tuple[float, ...]:
    """The whole run's parameter values (the protocol's, not one stage's)."""
    from reduced_odes import get_model

    return tuple(get_model("two_mixture").parameter_values(params, variant))


def _stitched_dense(stages: Sequence[Trajectory], offsets: np.ndarray):
    """``dense(times)`` of the stitched run: each time answered by its stage's dense output."""
    def dense(times):
        scalar = np.ndim(times) == 0
        times = np.atleast_1d(np.asarray(times, dtype=float))
        index = np.clip(np.searchsorted(offsets, times, side="right") - 1, 0, len(stages) - 1)
        out = np.empty((stages[0].system.size, times.size))
        for k, stage in enumerate(stages):
            chosen = index == k
            if chosen.any():
                local = np.clip(times[chosen] - offsets[k], 0.0, float(stage.t[-1]))
                out[:, chosen] = np.reshape(stage.dense(local), (stage.system.size, -1))
        return out[:, 0] if scalar else out
    return dense
