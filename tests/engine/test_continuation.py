"""Pseudo-arclength continuation: a fold of a user model, and the deep linear network's
line of fixed points followed in ``s``; exact branches written here by hand."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest

from reduced_odes import ParameterError
from reduced_odes._continuation import Continuation, continue_branch
from reduced_odes.author import Crossing, Model, Parameters, interval, parameter


@dataclass(frozen=True)
class FoldParams(Parameters):
    p: float = parameter(1.0, interval(-10.0, 10.0), "the fold's parameter")


class Fold(Model):
    """``dx/dt = p - x^2`` (the gradient flow of ``x^3/3 - p x``): a fold at ``p = 0``,
    ``x = +sqrt(p)`` stable and ``x = -sqrt(p)`` unstable."""

    name = "fold_normal_form"
    description = "saddle-node normal form"
    Params = FoldParams

    def derive(self, variant):
        import sympy as sp

        from reduced_odes.author import gradient_flow

        x, p = sp.Symbol("x", real=True), sp.Symbol("p", real=True)
        return gradient_flow((x,), x**3 / 3 - p * x, parameters=(p,),
                             observables={"x2": x**2})

    def parameter_values(self, params, variant):
        return (params.p,)

    def initial_state(self, params, variant):
        return (0.0,)

    def phases(self, params, variant, initial, thresholds):
        return [Crossing("T", "x2", 0.5)]

    def settled(self, params, variant):
        return lambda y: abs(params.p - y[0] ** 2) - 1e-12

    def horizon(self, params, variant):
        return 10.0


def test_fold_is_found_and_the_branch_turns_back():
    c = Continuation(Fold(), {"p": 1.0}, "p", to=-1.0)
    branch = continue_branch(c, [0.9], 1.0, -1.0)
    folds = [b for b in branch.bifurcations if b["kind"] == "fold"]
    assert len(folds) == 1
    # The fold's location is a branch point's parameter, within one step of p = 0 (the
    # step is 0.04 near it); stability changes exactly there (bisected to 1e-12).
    assert abs(folds[0]["param"]) < 0.05
    changes = [b for b in branch.bifurcations if b["kind"] != "fold"]
    assert [b["kind"] for b in changes] == ["saddle_change"] or [
        b["kind"] for b in changes] == ["loss_of_stability"]
    # 1e-9: bisection to 1e-12 relative on a crossing whose eigenvalue is -2x ~ sqrt(p).
    assert abs(changes[0]["param"]) < 1e-9
    # Every point is on the exact branch p = x^2; the last is x = -1 at p = 1 (back at the start).
    for value, point in zip(branch.values, branch.points, strict=True):
        assert abs(point.state["x"] ** 2 - value) < 1e-12
    assert branch.values[-1] == pytest.approx(1.0, abs=1e-12)
    assert branch.points[-1].state["x"] == pytest.approx(-1.0, abs=1e-12)
    assert branch.points[-1].kind == "unstable" and branch.points[0].kind == "stable"


def test_deep_linear_line_followed_in_s():
    c = Continuation("deep_linear", {"s": 1.0}, "s", to=8.0)
    branch = continue_branch(c, [0.0, 0.0], 1.0, 8.0)
    assert branch.values[-1] == 8.0 and branch.bifurcations == []
    for s, point in zip(branch.values, branch.points, strict=True):
        a, b = point.state["a"], point.state["b"]
        # 1e-12 relative: round-off of rates ~ s.
        assert abs(a * b - s) <= 1e-12 * s
        assert point.eigenvalues.real[-1] == pytest.approx(-(a * a + b * b), rel=1e-12)


def test_bad_parameter_is_named():
    with pytest.raises(ParameterError, match="param='sigma2'"):
        Continuation("deep_linear", {"s": 1.0}, "sigma2")
    with pytest.raises(ParameterError, match="s"):
        Continuation("deep_linear", {"s": 1.0}, "s", to=-1.0)
    c = Continuation("deep_linear", {"s": 1.0}, "s")
    with pytest.raises(ParameterError, match="seed="):
        continue_branch(c, [math.nan, 0.0], 1.0, 2.0)
    assert np.all(np.isfinite(c.rates(np.zeros(2), 1.0)))


class SymmetricFold(Fold):
    """The fold with a declared symmetric state: the unstable branch, which no trajectory
    from the model's start reaches."""

    name = "fold_with_symmetric_states"

    def symmetric_states(self, params, variant):
        return [{"x": -1.5 * math.sqrt(params.p)}]


def test_declared_symmetric_states_seed_newton():
    from reduced_odes._fixed_points import find_fixed_points

    plain = find_fixed_points(Fold(), {"p": 4.0})
    both = find_fixed_points(SymmetricFold(), {"p": 4.0})
    assert [p.kind for p in plain] == ["stable"]
    assert [p.kind for p in both] == ["unstable", "stable"]
    # 1e-12: Newton to round-off on x^2 = 4.
    assert [p.state["x"] for p in both] == pytest.approx([-2.0, 2.0], abs=1e-12)
