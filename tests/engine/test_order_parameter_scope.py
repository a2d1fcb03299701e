"""The order-parameter marks are scoped to the derivation that makes them
(``reduced_odes._derivation_scope``): two models that share a symbol ``m`` in one process
do not change each other's flow, whichever derives first."""

from __future__ import annotations

import contextvars

import pytest
import sympy as sp

from reduced_odes import DerivationError, declare_order_parameters, gradient_flow
from reduced_odes._compile import _derive
from reduced_odes.author import Model


def _loss(m: sp.Symbol) -> sp.Expr:
    return (1 - m) ** 2


class _Declares(Model):
    """``m`` declared an order parameter, with its own mobility (as a network's overlap)."""

    name = "declares_m"
    identity = False

    def derive(self, variant):
        (m,) = declare_order_parameters((sp.Symbol("m", real=True),))
        mobility = None if self.identity else sp.Matrix([[2]])
        return gradient_flow((m,), _loss(m), parameters=(), mobility=mobility)


class _DeclaresWithIdentity(_Declares):
    """The same declaration under the identity metric: refused, the guard still works."""

    name = "declares_m_identity"
    identity = True


class _Plain(Model):
    """Its own real ``m``, no order parameter: the identity metric is its flow."""

    name = "plain_m"

    def derive(self, variant):
        m = sp.Symbol("m", real=True)
        return gradient_flow((m,), _loss(m), parameters=())


class _NoModel:
    """A derive the compiler calls on an object that is no :class:`Model` (no wrapper)."""

    name = "no_model"

    def derive(self, variant):
        (m,) = declare_order_parameters((sp.Symbol("m", real=True),))
        return gradient_flow((m,), _loss(m), parameters=(), mobility=sp.Matrix([[2]]))


for _cls in (_Declares, _DeclaresWithIdentity, _Plain):
    _cls.__abstractmethods__ = frozenset()  # only derive is used here


def _plain_rate() -> sp.Expr:
    m = sp.Symbol("m", real=True)
    return _Plain().derive("default").rhs[0] - 2 * (1 - m)


@pytest.mark.parametrize("first", [_Declares, _DeclaresWithIdentity, _NoModel])
def test_a_model_that_declares_m_leaves_another_models_m_alone(first):
    def run():
        if first is _DeclaresWithIdentity:
            with pytest.raises(DerivationError, match="m are order parameters"):
                first().derive("default")
        elif first is _NoModel:
            _derive(first(), "default", {})  # the compiler's own scope
        else:
            first().derive("default")
        # Before the scopes: "m are order parameters: the identity metric is not their
        # gradient flow" for the plain model too (a process-wide mark).
        assert sp.simplify(_plain_rate()) == 0  # -grad (1 - m)^2 = 2 (1 - m), exactly

    contextvars.copy_context().run(run)  # whatever is marked stays in this test


def test_the_guard_holds_within_the_declaring_derivation_after_another_model():
    def run():
        _Plain().derive("default")
        with pytest.raises(DerivationError, match="m are order parameters"):
            _DeclaresWithIdentity().derive("default")
        assert _Declares().derive("default").mobility == sp.Matrix([[2]])

    contextvars.copy_context().run(run)


def test_a_mark_made_outside_any_derive_reaches_no_model():
    def run():
        declare_order_parameters((sp.Symbol("m", real=True),))  # a script's top level
        with pytest.raises(DerivationError, match="m are order parameters"):
            gradient_flow((sp.Symbol("m", real=True),), _loss(sp.Symbol("m", real=True)),
                          parameters=())  # the same top level: refused, as documented
        assert sp.simplify(_plain_rate()) == 0  # a model's derive starts without it

    contextvars.copy_context().run(run)
