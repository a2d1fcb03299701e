"""Independent blocks (:class:`~reduced_odes.Block`): asserted when derived, compiled one
function pair per block, and integrated natively one leg per block in its own time.

The sample model is two uncoupled decays with exact solutions, ``x(t) = e^{-t}`` (in
log time) and ``y(t) = 1 - e^{-t}``, a domain condition ``x > floor`` and a stop rule
in Python.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

from reduced_odes import (
    Block,
    Crossing,
    DerivationError,
    DomainError,
    Model,
    Parameters,
    SolverConfig,
    gradient_flow,
    interval,
    load_system,
    parameter,
    solve,
)
from reduced_odes._backend import native_available
from reduced_odes._compile import _load_module
from reduced_odes._stop_rules import SettledRule
from reduced_odes.models import get_model

X, Y, FLOOR = sp.symbols("x y floor", real=True)
BLOCKS = (Block(("x",), log_time=1.0), Block(("y",)))


@dataclass(frozen=True)
class DecayParams(Parameters):
    floor: float = parameter(1e-300, interval(0.0, 0.5, closed="lo"), "domain: x > floor")


class TwoDecays(Model):
    name = "two_decays"
    description = "two uncoupled exponential decays"
    Params = DecayParams

    blocks = BLOCKS

    def derive(self, variant):
        return gradient_flow((X, Y), (X**2 + (Y - 1) ** 2) / 2, parameters=(FLOOR,),
                             domain=(X > FLOOR,), blocks=self.blocks)

    def parameter_values(self, params, variant):
        return (params.floor,)

    def initial_state(self, params, variant):
        return (1.0, 0.0)

    def phases(self, params, variant, initial, thresholds):
        return [Crossing("T_x", "x", 0.5, -1), Crossing("T_y", "y", 0.9)]

    def settled(self, params, variant):
        return lambda t, y: max(abs(y[0]) - 1e-6, abs(y[1] - 1) - 1e-6)

    def horizon(self, params, variant):
        return 1.0  # short: the run must extend its horizon to settle


MODEL = TwoDecays()


class OneBlock(TwoDecays):
    """The same flow declared as one block in log time: a single leg, not in ``t``."""

    name = "one_block"
    blocks = (Block(("x", "y"), log_time=1.0),)


def test_blocks_are_compiled_one_function_pair_each():
    system = load_system(MODEL)
    assert system.blocks == ((0,), (1,)) and system.log_times == (1.0, None)
    module = _load_module(system.path)  # the block functions live there, beside rhs
    y, args = [0.3, 0.2], (1e-300,)
    full = system.rhs(0.0, y, *args)
    assert module.rhs_block0(0.0, [y[0]], *args) == [full[0]]
    assert module.rhs_block1(0.0, [y[1]], *args) == [full[1]]
    assert module.jac_block1(0.0, [y[1]], *args) == [[system.jac(0.0, y, *args)[1][1]]]


@pytest.mark.parametrize("blocks, words", [
    ((Block(("x",)), Block(("y",))), ["flow of x depends on y"]),
    ((Block(("x", "y")), Block(("y",))), ["must list each coordinate", "once"]),
    ((Block(("x",), log_time=-1.0), Block(("y",))), ["log_time=-1.0", "positive"]),
])
def test_a_wrong_declaration_is_a_derivation_error(blocks, words):
    coupled = (X**2 + (Y - 1) ** 2 + X * Y) / 2
    loss = coupled if "depends" in words[0] else (X**2 + (Y - 1) ** 2) / 2
    with pytest.raises(DerivationError) as error:
        gradient_flow((X, Y), loss, parameters=(), blocks=blocks)
    assert all(w in str(error.value) for w in words), str(error.value)


native = pytest.mark.skipif(not native_available(),
                            reason="numba is not installed (the [fast] extra)")


def _assert_exact(traj) -> None:
    # Root-finding on the dense output of rtol-1e-10 runs: 1e-8 relative.
    assert traj.phases["T_x"] == pytest.approx(math.log(2), rel=1e-8)
    assert traj.phases["T_y"] == pytest.approx(math.log(10), rel=1e-8)
    # Settled when both are within 1e-6 of their limits, at ln(1e6); the run goes on as long.
    # Near 1e-6 the states carry absolute errors of ~1e-10 (atol 1e-12 over hundreds of
    # steps), so t_settle is as sharp as 1e-10 / 1e-6: 1e-4.
    assert traj.t[-1] == pytest.approx(2 * math.log(1e6), rel=1e-4)
    t = traj.t[1:]
    # rtol 1e-10 per step, accumulated over the run: 1e-8 relative, 1e-9 absolute.
    assert np.allclose(traj.series["x"][1:], np.exp(-t), rtol=1e-8, atol=1e-9)
    assert np.allclose(traj.series["y"][1:], -np.expm1(-t), rtol=1e-8, atol=1e-9)
    # The dense output is in t, whatever time each block was stepped in (as the series).
    assert traj.at([math.log(2)])[0, 0] == pytest.approx(0.5, rel=1e-8)


@native
def test_each_block_in_its_own_time_gives_the_exact_solution():
    traj = solve(DecayParams(), solver=SolverConfig(backend="numba"), model=MODEL)
    _assert_exact(traj)
    pure = solve(DecayParams(), model=MODEL)
    assert traj.stats.steps > 0 and pure.phases["T_x"] == pytest.approx(math.log(2), rel=1e-8)


@native
def test_a_single_block_in_log_time_gives_the_exact_solution():
    _assert_exact(solve(DecayParams(), solver=SolverConfig(backend="numba"), model=OneBlock()))


@native
def test_leaving_the_domain_is_found_on_the_merged_state():
    with pytest.raises(DomainError, match=r"at t=1\.60944: condition -floor \+ x > 0 fails"):
        solve(DecayParams(floor=0.2), solver=SolverConfig(backend="numba"), model=MODEL)


@native
def test_a_fixed_end_is_reached_exactly_by_every_block():
    t_end = 7.0  # expm1(log1p(7.0)) != 7.0: the end must not go through the log time
    traj = solve(DecayParams(), solver=SolverConfig(t_end=t_end, backend="numba"), model=MODEL)
    assert traj.t[-1] == t_end
    # End states of rtol-1e-10 runs.
    assert traj.final["x"] == pytest.approx(math.exp(-t_end), rel=1e-8)
    assert traj.final["y"] == pytest.approx(-math.expm1(-t_end), rel=1e-8)


def _run_on(engine, twin):
    """A native run of the model's defaults with ``twin`` bound to the integrator ``engine``."""
    twin.bind(engine)
    return solve(MODEL.make_params({}), solver=SolverConfig(backend="numba"), model=MODEL)


@native
def test_the_integrator_for_a_legs_size_is_the_shared_one_with_that_size_fixed():
    """A twin runs on the integrator for any size until numba has the one for its legs' size
    cached, or until a process has made many runs of it (``engine_for``, ``counted_run``):
    the two are one source, the second with the legs' length fixed (``LEG_SIZE``, so that
    LLVM unrolls the loops).  That they give the same bits is the slow test's below (it
    compiles the second, ~15 s of CPU)."""
    from types import SimpleNamespace

    from reduced_odes._native import _twin
    from reduced_odes._native._engines import ENGINE, engine_path

    assert _twin._leg_size(load_system(MODEL)) == 1
    assert _twin._leg_size(SimpleNamespace(blocks=((0,), (1, 2)), size=3)) == 0
    assert _twin._leg_size(SimpleNamespace(blocks=(), size=3)) == 3
    twin = _twin.load_twin(load_system(MODEL))
    shared = ENGINE.read_text(encoding="utf-8").splitlines()
    for_size = engine_path(1, Path(twin.__file__).parent).read_text(encoding="utf-8")
    changed = [(a, b) for a, b in zip(shared, for_size.splitlines(), strict=True) if a != b]
    assert changed == [("LEG_SIZE = 0", "LEG_SIZE = 1")]


@pytest.mark.slow
@native
def test_the_integrator_for_the_legs_size_changes_no_bit_of_a_run():
    """The integrators for any size and for the legs' size give the same run to the last bit,
    whichever a cache holds."""
    from reduced_odes._native import _engines, _twin
    from reduced_odes._native._engines import ENGINE, engine_path, load_engine

    twin = _twin.load_twin(load_system(MODEL))
    for_size = load_engine(engine_path(1, Path(twin.__file__).parent))
    any_size = load_engine(ENGINE)
    try:
        read, fixed = _run_on(any_size, twin), _run_on(for_size, twin)
    finally:
        twin.bind(load_engine(_engines.engine_for(1, Path(twin.__file__).parent)))
    assert for_size is not any_size and for_size.LEG_SIZE == 1 and any_size.LEG_SIZE == 0
    assert read.phases == fixed.phases and read.stats == fixed.stats
    for name, values in fixed.series.items():
        np.testing.assert_array_equal(read.series[name], values, err_msg=name)


@native
def test_many_runs_of_a_twin_bind_it_to_the_integrator_for_its_size(monkeypatch):
    """The runs are counted before they start; the one that reaches ``SPECIALISE_AFTER`` binds
    the twin, and runs, on the integrator for its size (not run here: that compile is the
    slow test's above)."""
    from reduced_odes._native import _engines, _twin
    from reduced_odes._native._engines import ENGINE, load_engine

    twin = _twin.load_twin(load_system(MODEL))
    twin.bind(load_engine(ENGINE))
    monkeypatch.setattr(_engines, "SPECIALISE_AFTER", 2)
    monkeypatch.setattr(_engines, "_RUNS", {})
    try:
        solve(MODEL.make_params({}), solver=SolverConfig(backend="numba"), model=MODEL)
        assert Path(twin._engine.__file__) == ENGINE  # one run: still the shared one
        _engines.counted_run(twin)  # what the second run does before it starts
        assert twin._engine.LEG_SIZE == 1 and Path(twin._engine.__file__).name.startswith(
            "engine-1-")
    finally:
        twin.bind(load_engine(_engines.engine_for(1, Path(twin.__file__).parent)))


@native
def test_one_compiled_integrator_serves_every_system_of_a_leg_size():
    """The integrator is compiled for the system tuple's types (and at most a leg size), not
    for a system: one block in log time and a whole system of another model, both stepping
    two coordinates, run on the same machine code (one signature of each entry point), so
    a new system compiles only its own functions."""
    from reduced_odes._native import _twin

    one_block, deep_linear = OneBlock(), get_model("deep_linear")
    twins = []
    for model in (one_block, deep_linear):
        solve(model.make_params({}), solver=SolverConfig(backend="numba"), model=model)
        rule = model.settled(model.make_params({}), model.variants[0])
        twins.append(_twin.load_twin(load_system(model), rule if isinstance(
            rule, SettledRule) else None))
    assert twins[0] is not twins[1] and twins[0]._engine is twins[1]._engine
    assert twins[0].LEG_SIZE == twins[1].LEG_SIZE == 2
    for name in ("advance", "merge", "outputs"):
        assert len(getattr(twins[0]._engine, name).signatures) == 1, name
