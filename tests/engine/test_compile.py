"""Compiled code: agreement with the symbolic flow, and the disk cache's behaviour."""

import random

import numpy as np
import pytest
import sympy as sp

import reduced_odes.models.induction_head.derivation as flow_module
from reduced_odes import load_system
from reduced_odes._positions import SEQ_LEN as L
from reduced_odes.models.induction_head import derive_flow
from reduced_odes.models.induction_head.declaration import ALPHA, WSTAR
from reduced_odes.models.induction_head.derivation import LOG_STATE


@pytest.mark.parametrize("closure", ["linear", "meanfield"])
def test_compiled_rhs_and_jacobian_match_symbolic_flow(closure, tmp_path):
    system = load_system("induction_head", closure, directory=tmp_path)
    flow = derive_flow(closure)
    exprs = [e.rewrite(sp.exp) for e in list(flow.log_rhs) + list(flow.log_jacobian)]
    rng = random.Random(5)
    for _ in range(3):
        point = {ALPHA: rng.uniform(0.2, 0.8), WSTAR: rng.uniform(0.1, 0.4), L: rng.randint(5, 300),
                 LOG_STATE[0]: rng.uniform(-1, 1), LOG_STATE[1]: rng.uniform(-2, 4),
                 LOG_STATE[2]: rng.uniform(-1, 1), LOG_STATE[3]: rng.uniform(-8, -1.2)}
        y = [point[s] for s in LOG_STATE]
        args = (point[ALPHA], point[WSTAR], float(point[L]))
        numeric = list(system.rhs(0, y, *args)) + list(np.ravel(system.jac(0, y, *args)))
        reference = [float(e.evalf(30, subs=point)) for e in exprs]
        # 30-digit reference; double-precision evaluation of well-conditioned points
        np.testing.assert_allclose(numeric, reference, rtol=1e-11, atol=1e-14)


def test_warm_start_skips_derivation_and_parameters_never_recompile(tmp_path, monkeypatch):
    first = load_system("induction_head", "linear", directory=tmp_path)

    def forbidden(*_):
        raise AssertionError("re-derived")

    monkeypatch.setattr(flow_module, "derive_flow", forbidden)
    again = load_system("induction_head", "linear", directory=tmp_path)
    assert again.key == first.key
    # Parameters are runtime arguments: any (alpha, w_star, L) runs the same code.
    for args in ((0.2, 0.1, 50.0), (0.9, 0.45, 1e7)):
        assert np.all(np.isfinite(again.rhs(0, [0.1, 0.5, 0.1, -5.0], *args)))
    assert not list(tmp_path.glob("*.tmp"))


def test_a_system_loaded_within_the_check_window_is_not_checked_again(tmp_path,
                                                                      monkeypatch):
    """Quick solves in a loop do not stat the cache files each time; after the window the
    files are checked again (a replaced one is noticed)."""
    import reduced_odes._compile as compile_module

    first = load_system("induction_head", "linear", directory=tmp_path)
    stats = []
    real_stat = compile_module._stat
    monkeypatch.setattr(compile_module, "_stat", lambda path: stats.append(path) or
                        real_stat(path))
    assert load_system("induction_head", "linear", directory=tmp_path) is first
    assert stats == []
    monkeypatch.setattr(compile_module, "SOURCE_CHECK_SECONDS", -1.0)  # never trusted
    assert load_system("induction_head", "linear", directory=tmp_path) is first
    assert first.path in stats


def test_corrupt_cache_entries_are_rebuilt(tmp_path, monkeypatch):
    import reduced_odes._compile as compile_module

    monkeypatch.setattr(compile_module, "SOURCE_CHECK_SECONDS", -1.0)  # every call checks
    system = load_system("induction_head", "meanfield", directory=tmp_path)
    system.path.write_text(system.path.read_text()[:200] + "\n garbage(")
    rebuilt = load_system("induction_head", "meanfield", directory=tmp_path)
    assert rebuilt.key == system.key
    assert rebuilt.rhs(0, [0.1, 0.5, 0.1, -5.0], 0.5, 0.3, 200.0) == system.rhs(
        0, [0.1, 0.5, 0.1, -5.0], 0.5, 0.3, 200.0)
    for index in tmp_path.glob("index-*.json"):
        index.write_text("{not json")
    assert load_system("induction_head", "meanfield", directory=tmp_path).key == system.key


def test_generated_code_uses_common_subexpressions(tmp_path):
    source = load_system("induction_head", "linear", directory=tmp_path).path.read_text()
    jac_body = source.split("def jac")[1].split("def observables")[0]
    assert "_c0 =" in jac_body and jac_body.count("math.exp(ell)") <= 1


def _held_elsewhere(lock) -> bool:
    """Whether another open file holds ``lock`` (a non-blocking try from here fails)."""
    import fcntl

    with open(lock, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False


def test_a_derivation_holds_the_cache_lock_so_sharers_derive_once(tmp_path, monkeypatch):
    """Processes sharing a cache (the suite's workers, a job's pool) derive a system once:
    the derivation runs under a lock beside its index, which a second process waits for
    before it reads the cache again.  The lock is probed the way a second process would."""
    from reduced_odes import _compile
    from reduced_odes.models import get_model

    model = get_model("deep_linear")
    seen = []
    real = _compile._derive

    def derive(*args):
        seen.append([_held_elsewhere(lock) for lock in tmp_path.glob("index-*.lock")])
        return real(*args)

    monkeypatch.setattr(_compile, "_derive", derive)
    load_system(model, directory=tmp_path)
    assert seen == [[True]]  # derived once, its lock held meanwhile
    assert not _held_elsewhere(next(tmp_path.glob("index-*.lock")))  # released after
    load_system(model, directory=tmp_path)
    assert len(seen) == 1


def test_a_lock_that_cannot_be_taken_leaves_the_work_unlocked(tmp_path):
    """No lock (a directory that does not exist, here): the block runs all the same."""
    from reduced_odes._io import exclusive

    with exclusive(tmp_path / "missing" / "x.lock"):
        ran = True
    assert ran
