"""Numba versions of a model's fused kernels, compiled from the kernels module's own code.

A kernels module (named by ``Derivation.kernels``) is plain ``math`` code.
Each requested function is rebuilt from its code object with every plain
Python function it calls (module helpers, ``eval``-built polynomials, ...)
replaced by that function's numba version, recursively, and compiled with
``numba.njit``.  Nothing is copied: the numba version runs the module's own
bytecode, so it stays in step with the module.

A kernel that numba cannot type because a helper's result length depends on
a flag argument (a helper called as ``parts(p, L, True)``) is specialised: each helper called
with constant arguments is rewritten with those constants substituted and the
branches on them folded away, so that each specialisation returns one tuple.
"""


from __future__ import annotations

import ast
import importlib
import inspect
import textwrap
import types
from collections.abc import Sequence

__all__ = ["jit_kernels"]

#: Like the generated system: IEEE results (inf, NaN) where Python would raise, so a
#: trial state outside the domain makes the integrator retry instead of aborting.
_OPTIONS = dict(error_model="numpy", nogil=True)
_MEMO: dict[tuple[str, str], object] = {}


def _jit(function: types.FunctionType, module: str):
    """``function`` compiled lazily by numba, with the plain functions it calls compiled too.

    Not cached on their own: the kernels are compiled into the twin's functions, which
    are cached (``cache=True``) with everything they call, so a warm start compiles and
    loads no kernel."""
    import numba

    key = (module, function.__qualname__ + str(id(function.__code__)))
    if key in _MEMO:
        return _MEMO[key]
    namespace = dict(function.__globals__)
    for name in function.__code__.co_names:
        value = namespace.get(name)
        if isinstance(value, types.FunctionType):
            namespace[name] = _jit(value, module)
    rebuilt = types.FunctionType(function.__code__, namespace, function.__name__,
                                 function.__defaults__, function.__closure__)
    _MEMO[key] = compiled = numba.njit(**_OPTIONS)(rebuilt)
    return compiled


class _Fold(ast.NodeTransformer):
    """Substitute constant parameters and fold ``not c`` and ``if c`` on constants."""

    def __init__(self, values: dict):
        self.values = values

    def visit_Name(self, node):
        return ast.Constant(self.values[node.id]) if node.id in self.values else node

    def visit_UnaryOp(self, node):
        node = self.generic_visit(node)
        if isinstance(node.op, ast.Not) and isinstance(node.operand, ast.Constant):
            return ast.Constant(not node.operand.value)
        return node

    def visit_If(self, node):
        node = self.generic_visit(node)
        if isinstance(node.test, ast.Constant):
            return (node.body if node.test.value else node.orelse) or ast.Pass()
        return node


def _specialised(function: types.FunctionType, values: dict) -> types.FunctionType:
    """``function`` with the parameters ``values`` fixed and their branches folded."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    definition = tree.body[0]
    definition.args.args = [a for a in definition.args.args if a.arg not in values]
    definition.decorator_list, definition.returns = [], None
    tree = ast.fix_missing_locations(_Fold(values).visit(tree))
    namespace = dict(function.__globals__)
    code = compile(tree, inspect.getsourcefile(function), "exec")
    exec(code, namespace)  # noqa: S102  (the kernels module's own code, specialised)
    return namespace[function.__name__]


def _composed(source: types.ModuleType, name: str):
    """Kernel ``name`` with each helper it calls on constant arguments specialised."""
    function = getattr(source, name)
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    namespace = dict(function.__globals__)
    for call in ast.walk(tree):
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)):
            continue
        helper = namespace.get(call.func.id)
        constants = {i: a.value for i, a in enumerate(call.args) if isinstance(a, ast.Constant)}
        if isinstance(helper, types.FunctionType) and constants:
            names = helper.__code__.co_varnames
            namespace[call.func.id] = _jit(
                _specialised(helper, {names[i]: v for i, v in constants.items()}), name)
            call.args = [a for a in call.args if not isinstance(a, ast.Constant)]
    definition = tree.body[0]
    definition.decorator_list = []
    exec(compile(ast.fix_missing_locations(tree), inspect.getsourcefile(function), "exec"),
         namespace)  # noqa: S102
    return _jit(namespace[name], name)


def jit_kernels(module: str, names: Sequence[str]) -> tuple:
    """Numba versions of the functions ``names`` of the kernels module ``module``.

    Examples
    --------
    >>> phi_psi, = jit_kernels("reduced_odes.models.induction_head.kernels",
    ...                        ["phi_psi"])  # doctest: +SKIP
    >>> phi_psi(0.3, 10.0)  # doctest: +SKIP
    (0.2778551790968831, 0.16970325787498433)
    """
    source = importlib.import_module(module)
    return tuple(_composed(source, name) for name in names)
