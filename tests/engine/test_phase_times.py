"""The phase diagrams' lean native path (``phase_time``): the value of the whole solve bit for
bit, read without the whole solve, and held against the pure path (skipped without numba)."""

from __future__ import annotations

import math

import pytest

from reduced_odes import Setting, solve
from reduced_odes._backend import native_available

#: One worker: every test here first needs the same derivation and twin (~20 s of CPU, under
#: their locks), which a second worker would only wait for.
pytestmark = [pytest.mark.skipif(not native_available(),
                                 reason="numba is not installed (the [fast] extra)"),
              pytest.mark.xdist_group("committee_machine-erf-2-2-native")]

#: The committee machine's corners and middle of the docs page's diagram (eta 0.05..1.5,
#: asymmetry 1e-10..1e-4), and a student narrower than its teacher.
#: The narrower student is another system: its compile (~15 s of CPU) is the slow run's.
SETTINGS = [{"eta": 0.05, "asymmetry": 1e-10}, {"eta": 1.5, "asymmetry": 1e-4},
            {"eta": 0.7, "asymmetry": 1e-7},
            pytest.param({"K": 2, "M": 3, "eta": 0.3, "asymmetry": 1e-6}, marks=pytest.mark.slow)]


def _setting(values: dict, backend: str = "numba") -> Setting:
    return Setting.from_mapping({"model": "committee_machine", "K": 2, "M": 2,
                                 "activation": "erf", "backend": backend, **values})


@pytest.mark.parametrize("values", SETTINGS)
def test_the_whole_solves_value_bit_for_bit(values):
    from reduced_odes._native._phase_times import phase_time

    setting = _setting(values)
    phases = solve(setting).phases
    for phase in setting.model.phase_order:
        whole = phases.get(phase, math.nan)
        lean = phase_time(setting, phase)
        assert (lean is None and not math.isfinite(whole)) or lean == whole, (phase, values)


def test_read_without_the_whole_solve_and_against_the_pure_path(monkeypatch):
    from reduced_odes import _integrate
    from reduced_odes._native._phase_times import phase_time

    values = {"eta": 0.7, "asymmetry": 1e-7}
    pure = solve(_setting(values, "python")).phases["T_escape"]

    def refused(*args, **kwargs):
        raise AssertionError("the lean path ran the whole solve")

    monkeypatch.setattr(_integrate, "solve", refused)
    lean = phase_time(_setting(values), "T_escape")
    # 1e-5: the two backends' T_escape differ by up to 2.4e-6 over the docs page's grid
    # (benchmarks/bench_phase_diagram.py; 8e-8 here): the escape amplifies the error of the
    # small specialising component over the plateau, at rtol 1e-10 on the pure path.
    assert lean == pytest.approx(pure, rel=1e-5)


def test_the_deep_linear_networks_exact_time():
    from reduced_odes._native._phase_times import phase_time

    setting = Setting.from_mapping({"model": "deep_linear", "s": 2.0, "sigma": 1e-4,
                                    "backend": "numba"})
    # 1e-8: root-finding on the native dense output at rtol 1e-11 against the closed form.
    assert phase_time(setting, "T_half") == pytest.approx(
        math.log(2.0 / 1e-8 - 1) / 4, rel=1e-8)


def test_the_phase_diagrams_task_reads_it_natively(monkeypatch):
    """``diagram_task`` on the native backend takes this path, and gives the same value."""
    from reduced_odes import _integrate, _phase_diagram
    from reduced_odes._native._phase_times import phase_time
    from reduced_odes._phase_diagram import diagram_task

    values = {"eta": 1.5, "asymmetry": 1e-4}
    expected = phase_time(_setting(values), "T_escape")
    for module in (_integrate, _phase_diagram):
        monkeypatch.setattr(module, "solve", lambda *a, **k: pytest.fail("solved whole"))
    task = {"model": "committee_machine", "K": 2, "M": 2, "activation": "erf",
            "backend": "numba", "quantity": "T_escape", **values}
    assert diagram_task(task) == {"value": expected}
