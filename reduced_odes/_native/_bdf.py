"""Native stiff integrator: SciPy's BDF, ported to numba to run a whole trajectory.

One compiled integrator serves every system whose legs step the same number of
coordinates (:data:`LEG_SIZE`).  A system reaches it as a *system tuple*
(:data:`SYSTEM_FIELDS`): the addresses of its compiled functions (``rates`` and
``jacobian`` of the whole system or of one independent block, ``margins``, ``state``,
``observables`` and ``settled``, C callbacks of the signatures below, generated in the
system's twin, :mod:`reduced_odes._native._twin`) and its sizes.  The integrator calls
them through their addresses, so that numba compiles and caches it (``cache=True``) once
for all those systems, and a new system compiles only its own functions.

One run of the integrator (``advance``) steps the whole system, or one block of
it in that block's own time variable ``s`` (``s = t``, or ``s = ln(1 + t/t0)``).
A run's *record* holds every block's accepted steps, stacked: ``ts[b, k]``,
``hs[b, k]``, ``orders[b, k]``, ``ds[b, k]`` for step ``k`` of block ``b`` in its
``s``, with ``counts[b]`` steps, ``t0s[b]`` (0: ``s = t``) and ``index[b]`` the
block's coordinates in the state (``-1`` beyond its size).  Everything after the
stepping reads the state at ``t`` from all blocks at once: the scans for the stop
rule, the domain and the crossings read it at the union of the blocks' step times,
merged with the state there once (``merge``: ``steps`` and ``y_steps``); a root between
two of those times reads it with ``_state_at``.

The stepping (``_step``, ``_newton``, ``_change_d``, ``_initial_step``) and the
dense output (``_dense_at``) are ported line by line from
``scipy/integrate/_ivp/bdf.py`` and ``common.py`` of SciPy 1.17 (the method of
Shampine & Reichelt's ``ode15s`` in SciPy's formulation: variable order 1..5,
quasi-constant step size, NDF coefficients ``kappa``).  Deviations, each
marked where it occurs: a non-finite Jacobian keeps the last finite one; a
non-finite error estimate rejects the step (SciPy would accept it); a Newton
iteration that stalls at the round-off of the rates, its residual below
``NEWTON_FLOOR`` of the error tolerance, has converged (SciPy would reject the
step and halve it, again and again, at a fixed point where ``h f`` rounds to more
than its Newton tolerance of ``10 eps / rtol``: 10^5 steps near a settled state at
rtol 1e-10); a step halved after its Newton iteration failed starts from a
Jacobian at its own prediction (SciPy keeps the one of the rejected trial, which a
large trial step may have evaluated far from the solution, e.g. 1e90 where the
solution's is 1: its corrections are then so small that SciPy's convergence test
accepts the prediction itself, or the step shrinks to nothing); a step is the size its
differences are scaled to, not the rounded ``t_new - t`` (as LSODA: far from ``t = 0``
the rounding puts ``f ulp(t)`` into the correction, which failed every error test of a
slow escape); and a NaN or infinite step size, or a step with no trial accepted in
``MAX_TRIALS``, is a failure with its reason (SciPy's loop would not end).

SciPy's licence::

    Copyright (c) 2001-2002 Enthought, Inc. 2003, SciPy Developers.
    All rights reserved.

    Redistribution and use in source and binary forms, with or without
    modification, are permitted provided that the following conditions
    are met:

    1. Redistributions of source code must retain the above copyright
       notice, this list of conditions and the following disclaimer.

    2. Redistributions in binary form must reproduce the above
       copyright notice, this list of conditions and the following
       disclaimer in the documentation and/or other materials provided
       with the distribution.

    3. Neither the name of the copyright holder nor the names of its
       contributors may be used to endorse or promote products derived
       from this software without specific prior written permission.

    THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS
    "AS IS" AND ANY EXPRESS OR IMPLIED WARRANTIES, INCLUDING, BUT NOT
    LIMITED TO, THE IMPLIED WARRANTIES OF MERCHANTABILITY AND FITNESS FOR
    A PARTICULAR PURPOSE ARE DISCLAIMED. IN NO EVENT SHALL THE COPYRIGHT
    OWNER OR CONTRIBUTORS BE LIABLE FOR ANY DIRECT, INDIRECT, INCIDENTAL,
    SPECIAL, EXEMPLARY, OR CONSEQUENTIAL DAMAGES (INCLUDING, BUT NOT
    LIMITED TO, PROCUREMENT OF SUBSTITUTE GOODS OR SERVICES; LOSS OF USE,
    DATA, OR PROFITS; OR BUSINESS INTERRUPTION) HOWEVER CAUSED AND ON ANY
    THEORY OF LIABILITY, WHETHER IN CONTRACT, STRICT LIABILITY, OR TORT
    (INCLUDING NEGLIGENCE OR OTHERWISE) ARISING IN ANY WAY OUT OF THE USE
    OF THIS SOFTWARE, EVEN IF ADVISED OF THE POSSIBILITY OF SUCH DAMAGE.
"""

import math
from collections import namedtuple

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

#: The coordinates every leg steps, if the same for all (the whole system, or blocks of one
#: size); 0: read from the arrays.  This file is the integrator for legs of any size; for a
#: size ``k``, a copy of it with ``LEG_SIZE = k`` (:mod:`reduced_odes._native._engines`).
LEG_SIZE = 0

#: The system tuple's fields, in order: the addresses of the system's compiled functions,
#: then its sizes (the coordinates, the domain's margins, the longest series buffer).
SYSTEM_FIELDS = ("rates", "jacobian", "margins", "state", "observables", "settled",
                 "n_coordinates", "n_margins", "n_series")
(S_RATES, S_JACOBIAN, S_MARGINS, S_STATE, S_OBSERVABLES, S_SETTLED, S_N_COORDINATES,
 S_N_MARGINS, S_N_SERIES) = range(len(SYSTEM_FIELDS))
_VECTOR = (types.CPointer(types.float64), types.intp)  # an array: its data and length
#: ``rates(t, y, n, args, n_args, out, n_out, block)``: ``out`` <- the rates of block
#: ``block`` (the whole system if it has none) at ``y`` (``n`` coordinates); ``jacobian``
#: the same with ``out`` an ``n x n`` matrix.
RATES_SIGNATURE = types.void(types.float64, *_VECTOR, *_VECTOR, *_VECTOR, types.int64)
#: ``margins``, ``state``, ``observables(y, n, args, n_args, out, n_out)``.
SERIES_SIGNATURE = types.void(*_VECTOR, *_VECTOR, *_VECTOR)
#: ``settled(t, y, n, args, n_args, constants, n_constants, values, n_values)``: the stop
#: rule's value (``<= 0``: settled), ``values`` its buffer for the observables.
SETTLED_SIGNATURE = types.float64(types.float64, *_VECTOR, *_VECTOR, *_VECTOR, *_VECTOR)

MAX_ORDER = 5
NEWTON_MAXITER = 4
#: The residual of the BDF equations (in units of the error tolerance) below which a Newton
#: iteration that no longer contracts has converged: SciPy's loosest Newton tolerance
#: (``min(0.03, ...)``).  There the iterate solves the equations as exactly as the rates'
#: round-off allows, to 3% of the tolerance of the step's error.
NEWTON_FLOOR = 0.03
MIN_FACTOR = 0.2
MAX_FACTOR = 10.0
EPS = np.finfo(np.float64).eps
_KAPPA = np.array([0.0, -0.1850, -1 / 9, -0.0823, -0.0415, 0.0])
GAMMA = np.concatenate((np.zeros(1), np.cumsum(1 / np.arange(1, MAX_ORDER + 1))))
ALPHA = (1 - _KAPPA) * GAMMA
ERROR_CONST = _KAPPA * GAMMA + 1 / np.arange(1, MAX_ORDER + 2)
RECIPROCALS = 1 / np.arange(1, MAX_ORDER + 1)


def _u_tables():
    """``U_TABLES[order, :order + 1, :order + 1]``: SciPy's ``compute_R(order, 1)``, which
    depends on the order only."""
    tables = np.zeros((MAX_ORDER + 1, MAX_ORDER + 1, MAX_ORDER + 1))
    for order in range(1, MAX_ORDER + 1):
        i = np.arange(1, order + 1)[:, None]
        j = np.arange(order + 1)[None, :]
        steps = np.vstack([np.ones(order + 1), (i - 1 - j) / i])
        steps[1:, 0] = 0.0
        tables[order, :order + 1, :order + 1] = np.cumprod(steps, axis=0)
    return tables


U_TABLES = _u_tables()

# Float workspace slots, int workspace slots, and the statuses of ``advance``.
F_T, F_H_ABS, F_BOUND, F_SETTLE, F_T0 = range(5)
I_ORDER, I_EQUAL, I_NFEV, I_NJEV, I_NLU, I_LU_OK, I_STEPS, I_BLOCK = range(8)
REACHED, SETTLED, FULL, EDGE, TOO_SMALL, STARTED_SETTLED, NOT_FINITE, NO_STEP = range(8)
#: ``_step``'s answer for an accepted step (else one of the failure statuses above).
ACCEPTED = -1
#: Trials of one step (rejections and retries) before it fails with ``NO_STEP``: a bound on
#: ``_step``'s loop that a finite step size never reaches (each rejection shrinks the step
#: by at least 0.9, and ``0.9**20000`` takes the largest float below the smallest).
MAX_TRIALS = 20000
#: Halvings of a bisection in time: 2100 take an interval from the largest float to the
#: smallest, more than enough for a relative width of 4 eps; the bound holds where
#: round-off (subnormal times) would keep the width from shrinking.
BISECTIONS = 2200

#: IEEE results (inf, NaN) where Python would raise, as in the generated system: a trial
#: state outside the domain makes the integrator retry a smaller step.  For the entry
#: points that allocate their scratch arrays (so they need numba's reference counting).
_ALLOCATING = dict(cache=True, error_model="numpy", nogil=True)
#: Everything else allocates nothing and runs without the reference counting
#: (``_nrt=False``): no incref/decref call on every array it touches, calls that cost more
#: than a step's arithmetic and keep LLVM from inlining (a quarter of the stepping time).
_JIT = dict(_ALLOCATING, _nrt=False)
#: For what runs at every step: the step and what it calls for every Newton iteration, and
#: the helpers of ``_state_at``, evaluated for every block at every step of a scan.  numba
#: inlines them in its IR: called, each passed its arrays as a dozen scalars apiece (a step
#: passes about a hundred), which cost a third of the stepping time and halved the scans'.
_INLINE = dict(_JIT, inline="always")


@intrinsic
def _borrowed(typingctx, array):
    """``array`` as a view without a reference count (its meminfo NULL).

    In a function with reference counting (``_ALLOCATING``), numba increfs and
    decrefs every array it binds, with an atomic operation each time; on views
    like this one those calls return at once.  Such entry points borrow their
    arrays, which their caller keeps alive for the whole call."""

    def codegen(context, builder, signature, args):
        source = context.make_array(signature.args[0])(context, builder, value=args[0])
        view = context.make_array(signature.return_type)(context, builder)
        cgutils.copy_struct(view, source)
        view.meminfo = cgutils.get_null_value(view.meminfo.type)
        view.parent = cgutils.get_null_value(view.parent.type)
        return view._getvalue()

    return array(array), codegen


def _c_arguments(context, builder, argument_types, values):
    """The C callback's arguments and their LLVM types: an array as its data and its
    length, a number as it is."""
    arguments, llvm_types = [], []
    for kind, value in zip(argument_types, values, strict=True):
        if isinstance(kind, types.Array):
            array = context.make_array(kind)(context, builder, value=value)
            arguments += [array.data, array.nitems]
            llvm_types += [array.data.type, array.nitems.type]
        else:
            arguments.append(value)
            llvm_types.append(context.get_value_type(kind))
    return arguments, llvm_types


@intrinsic
def _call_rates(typingctx, address, t, y, args, out, block):
    """``address(t, y, args, out, block)``: a system's rates or Jacobian (its C callback,
    each array passed as its data and its length)."""
    return _c_call(types.void, address, (t, y, args, out, block))


@intrinsic
def _call_series(typingctx, address, y, args, out):
    """``address(y, args, out)``: a system's margins, state variables or observables."""
    return _c_call(types.void, address, (y, args, out))


@intrinsic
def _call_settled(typingctx, address, t, y, args, constants, values):
    """``address(t, y, args, constants, values)``: the system's stop rule, its value."""
    return _c_call(types.float64, address, (t, y, args, constants, values))


def _c_call(returns, address, argument_types):
    """An intrinsic's signature and code generator: call the C function at ``address``."""
    signature = returns(address, *argument_types)

    def codegen(context, builder, sig, values):
        arguments, llvm_types = _c_arguments(context, builder, argument_types, values[1:])
        function_type = ir.FunctionType(context.get_value_type(returns)
                                        if returns != types.void else ir.VoidType(), llvm_types)
        function = builder.inttoptr(values[0], function_type.as_pointer())
        result = builder.call(function, arguments)
        return result if returns != types.void else context.get_dummy_value()

    return signature, codegen


@njit(**_INLINE)
def _size(x):
    """``x``'s length (its first axis) in a step: ``LEG_SIZE`` if the integrator fixes it, a
    compile-time constant, so that LLVM unrolls the loops over the coordinates (a fifth
    of the stepping time at size 2); else read from ``x``."""
    return LEG_SIZE if LEG_SIZE > 0 else x.shape[0]


@njit(**_JIT)
def _norm(c, x, scale):
    """RMS norm of ``c x / scale`` (no temporary for ``c x``)."""
    acc = 0.0
    for i in range(_size(x)):
        acc += (c * x[i] / scale[i]) ** 2
    return math.sqrt(acc / _size(x))


@njit(**_JIT)
def _scale_of(y, rtol, atol, scale):
    """``scale`` <- ``atol + rtol |y|``, with one ``atol`` per coordinate (an array, as
    SciPy's BDF accepts)."""
    for i in range(_size(y)):
        scale[i] = atol[i] + rtol * abs(y[i])


@njit(**_JIT)
def _change_d(d, order, factor, ws):
    """Change the differences array in place when the step size changes: SciPy's
    ``D[:order + 1] = (R U).T @ D[:order + 1]`` with ``R = compute_R(order, factor)`` and
    ``U = compute_R(order, 1)``.

    Deviation (round-off only): computed as ``U.T (R.T D)``, ``U`` read from a table and
    each column of ``R`` formed as its running product while it is applied, with ``1 / i``
    multiplied rather than divided; a quarter of SciPy's arithmetic, and no matrices.
    ``ws.rows`` holds ``R.T D``."""
    m, n, u, rows = order + 1, _size(d[0]), U_TABLES[order], ws.rows
    for k in range(m):
        for col in range(n):
            rows[k, col] = d[0, col]
        r_ik = 1.0 if k > 0 else 0.0  # R[0, k]; R[i, 0] = 0 for i >= 1
        for i in range(1, m):
            r_ik *= (i - 1 - factor * k) * RECIPROCALS[i - 1]
            for col in range(n):
                rows[k, col] += r_ik * d[i, col]
    for j in range(m):
        for col in range(n):
            acc = 0.0
            for k in range(m):
                acc += u[k, j] * rows[k, col]
            d[j, col] = acc


@njit(**_JIT)
def _lu_factor(a, piv):
    """In-place LU with partial pivoting (LAPACK's getrf for a small dense matrix)."""
    n = _size(a[0])
    for k in range(n):
        p = k
        for i in range(k + 1, n):
            if abs(a[i, k]) > abs(a[p, k]):
                p = i
        piv[k] = p
        if p != k:
            for j in range(n):
                a[k, j], a[p, j] = a[p, j], a[k, j]
        if a[k, k] != 0.0:
            for i in range(k + 1, n):
                a[i, k] /= a[k, k]
                for j in range(k + 1, n):
                    a[i, j] -= a[i, k] * a[k, j]


@njit(**_JIT)
def _lu_solve(lu, piv, x):
    """Solve ``LU x = b`` in place (``x`` holds ``b`` on entry).

    Each row is summed in a local: through ``x[i]`` the compiler, not knowing that ``x``
    and ``lu`` do not overlap, would store and reload it at every term."""
    n = _size(x)
    for k in range(n):
        p = piv[k]
        if p != k:
            x[k], x[p] = x[p], x[k]
    for i in range(1, n):
        acc = x[i]
        for j in range(i):
            acc -= lu[i, j] * x[j]
        x[i] = acc
    for i in range(n - 1, -1, -1):
        acc = x[i]
        for j in range(i + 1, n):
            acc -= lu[i, j] * x[j]
        x[i] = acc / lu[i, i]


@njit(**_JIT)
def _all_finite(x):
    for i in range(_size(x)):
        if not math.isfinite(x[i]):
            return False
    return True


@njit(**_INLINE)
def _rates(s, y, args, out, fws, iws, system):
    """``out`` <- ``dy/ds`` of the system or block ``iws[I_BLOCK]`` in its time ``s``."""
    t0 = fws[F_T0]
    if t0 > 0.0:
        t = t0 * math.expm1(s)
        _call_rates(system[S_RATES], t, y, args, out, iws[I_BLOCK])
        for i in range(_size(y)):
            out[i] *= t0 + t  # dt/ds
    else:
        _call_rates(system[S_RATES], s, y, args, out, iws[I_BLOCK])


@njit(**_JIT)
def _initial_step(t0, t_bound, rtol, atol, args, fws, iws, ws, system):
    """SciPy's ``select_initial_step`` (Hairer, Norsett & Wanner, Sec. II.4), order 1, at
    ``(t0, ws.y)`` with ``ws.f = f(t0, y0)``."""
    y0, f0, scale, trial_y, f1 = ws.y, ws.f, ws.scale, ws.y_predict, ws.dy
    interval = abs(t_bound - t0)
    _scale_of(y0, rtol, atol, scale)
    d0, d1 = _norm(1.0, y0, scale), _norm(1.0, f0, scale)
    h0 = 1e-6 if (d0 < 1e-5 or d1 < 1e-5) else 0.01 * d0 / d1
    h0 = min(h0, interval)
    for i in range(_size(y0)):
        trial_y[i] = y0[i] + h0 * f0[i]
    _rates(t0 + h0, trial_y, args, f1, fws, iws, system)
    iws[I_NFEV] += 1
    for i in range(_size(y0)):
        f1[i] -= f0[i]
    d2 = _norm(1.0, f1, scale) / h0
    if d1 <= 1e-15 and d2 <= 1e-15:
        h1 = max(1e-6, h0 * 1e-3)
    else:
        h1 = (0.01 / max(d1, d2)) ** 0.5
    return min(100 * h0, h1, interval)


@njit(**_JIT)
def _start(rtol, atol, args, fws, iws, d, jm, ws, system):
    """Initialise at ``(fws[F_T], d[0])``: ``D[1] = h f0``, order 1, the first Jacobian;
    False (nothing set) if the rates or the first step there are not finite (deviation:
    SciPy would step on with a NaN step size, which no bound on it stops)."""
    t0, n = fws[F_T], _size(d[0])
    for i in range(n):
        ws.y[i] = d[0, i]
    _rates(t0, ws.y, args, ws.f, fws, iws, system)
    iws[I_NFEV] += 1
    if not _all_finite(ws.f):
        return False
    h_abs = _initial_step(t0, fws[F_BOUND], rtol, atol, args, fws, iws, ws, system)
    if not (math.isfinite(h_abs) and h_abs > 0.0):
        return False
    for i in range(n):
        d[1, i] = ws.f[i] * h_abs
        for j in range(2, d.shape[0]):
            d[j, i] = 0.0
        for j in range(n):
            jm[i, j] = np.nan  # SciPy evaluates the Jacobian once at the start
    fws[F_H_ABS] = h_abs
    iws[I_ORDER], iws[I_EQUAL], iws[I_LU_OK] = 1, 0, 0
    _jacobian(t0, ws.y, args, jm, fws, iws, ws.trial, system)
    return True


#: One native call's scratch arrays, so that no step allocates: vectors of the state's
#: size, the Jacobian's trial matrix, ``_change_d``'s rows and a series buffer.
_Workspace = namedtuple("_Workspace", ["y_predict", "psi", "scale", "y", "dd", "f", "dy",
                                       "trial", "rows", "buffer"])


def scratch_size(n, buffer):
    """The length of the flat scratch array that :func:`_workspace` divides up, for ``n``
    coordinates and a series buffer of length ``buffer``."""
    size = MAX_ORDER + 1
    return 7 * n + n * n + size * n + buffer


@njit(**_JIT)
def _workspace(scratch, n):
    """The workspace's arrays: views of ``scratch`` (allocated by the caller)."""
    s = scratch
    size = MAX_ORDER + 1
    v = s[:7 * n].reshape((7, n))
    k = 7 * n
    trial = s[k:k + n * n].reshape((n, n))
    k += n * n
    rows = s[k:k + size * n].reshape((size, n))
    k += size * n
    return _Workspace(v[0], v[1], v[2], v[3], v[4], v[5], v[6], trial, rows, s[k:])


@njit(**_INLINE)
def _newton(t_new, c, lu, piv, tol, args, fws, iws, ws, system):
    """SciPy's ``solve_bdf_system``: simplified Newton on the BDF equations.

    Reads ``ws.y_predict``, ``ws.psi``, ``ws.scale``; leaves the iterate in ``ws.y`` and
    the correction in ``ws.dd``."""
    y, dd, f, dy = ws.y, ws.dd, ws.f, ws.dy
    n = _size(y)
    for i in range(n):
        y[i] = ws.y_predict[i]
        dd[i] = 0.0
    dy_norm_old = -1.0
    converged = False
    k = 0
    for k in range(NEWTON_MAXITER):
        _rates(t_new, y, args, f, fws, iws, system)
        iws[I_NFEV] += 1
        if not _all_finite(f):
            break
        for i in range(n):
            dy[i] = c * f[i] - ws.psi[i] - dd[i]
        residual = _norm(1.0, dy, ws.scale)
        _lu_solve(lu, piv, dy)
        dy_norm = _norm(1.0, dy, ws.scale)
        rate = -1.0 if dy_norm_old < 0 else dy_norm / dy_norm_old
        if rate >= 1 and residual <= NEWTON_FLOOR:
            # Deviation: stalled at the round-off of the rates.  The residual, not the
            # correction, is tested: a stale Jacobian far too large also makes the
            # corrections small, where the equations are far from solved.
            converged = True
            break
        if rate >= 0 and (rate >= 1 or rate ** (NEWTON_MAXITER - k) / (1 - rate) * dy_norm > tol):
            break
        for i in range(n):
            y[i] += dy[i]
            dd[i] += dy[i]
        if dy_norm == 0 or (rate >= 0 and rate / (1 - rate) * dy_norm < tol):
            converged = True
            break
        dy_norm_old = dy_norm
    return converged, k + 1


@njit(**_JIT)
def _jacobian(s, y, args, jm, fws, iws, trial, system):
    """``jm`` <- the Jacobian at ``(s, y)`` in ``t`` (``d rates / dy``, without the factor
    ``dt/ds``, which ``_step`` applies: a Jacobian that stays valid while ``dt/ds`` grows),
    unless it is not finite (then the last one stays)."""
    t0 = fws[F_T0]
    _call_rates(system[S_JACOBIAN], t0 * math.expm1(s) if t0 > 0.0 else s, y, args, trial,
                iws[I_BLOCK])
    iws[I_NJEV] += 1
    for i in range(_size(trial[0])):
        if not _all_finite(trial[i]):
            return
    for i in range(_size(jm[0])):
        for j in range(_size(jm[0])):
            jm[i, j] = trial[i, j]


@njit(**_INLINE)
def _predict(d, order, n, ws):
    """``ws.y_predict`` <- the sum of ``d[:order + 1]``; ``ws.psi``, SciPy's ``psi``."""
    for i in range(n):
        yp, ps = d[0, i], 0.0
        for j in range(1, order + 1):
            yp += d[j, i]
            ps += d[j, i] * GAMMA[j]
        ws.y_predict[i], ws.psi[i] = yp, ps / ALPHA[order]


@njit(**_INLINE)
def _factor(c, t_new, jm, lu, piv, fws, iws, n):
    """``lu`` <- the LU factors of ``I - c (dt/ds) J``, unless they are current."""
    if iws[I_LU_OK] == 0:
        g = c * (fws[F_T0] * math.exp(t_new) if fws[F_T0] > 0.0 else 1.0)
        for i in range(n):
            for j in range(n):
                lu[i, j] = -g * jm[i, j]
            lu[i, i] += 1.0
        _lu_factor(lu, piv)
        iws[I_NLU] += 1
        iws[I_LU_OK] = 1


@njit(**_INLINE)
def _solve_stage(t_new, c, current_jac, newton_tol, args, fws, iws, jm, lu, piv, ws, n,
                 system):
    """Newton on the step's equations with the Jacobian as it is, then once more with a
    fresh one; (converged, iterations, whether the Jacobian is now current)."""
    converged, n_iter = False, 0
    for _attempt in range(2):
        _factor(c, t_new, jm, lu, piv, fws, iws, n)
        converged, n_iter = _newton(t_new, c, lu, piv, newton_tol, args, fws, iws, ws, system)
        if converged or current_jac:
            break
        _jacobian(t_new, ws.y_predict, args, jm, fws, iws, ws.trial, system)
        iws[I_LU_OK] = 0
        current_jac = True
    return converged, n_iter, current_jac


@njit(**_INLINE)
def _error_norm(order, rtol, atol, ws):
    """The step's error against ``atol + rtol |y|``; infinite if not finite (deviation:
    SciPy's ``> 1`` would accept a NaN)."""
    _scale_of(ws.y, rtol, atol, ws.scale)
    error_norm = _norm(ERROR_CONST[order], ws.dd, ws.scale)
    return error_norm if math.isfinite(error_norm) else np.inf


@njit(**_INLINE)
def _accept(d, order, n, ws):
    """SciPy's update of the differences after an accepted step."""
    for i in range(n):
        d[order + 2, i] = ws.dd[i] - d[order + 1, i]
        d[order + 1, i] = ws.dd[i]
    for j in range(order, -1, -1):
        for i in range(n):
            d[j, i] += d[j + 1, i]


@njit(**_INLINE)
def _to_bound(t, t_bound, h_abs, d, order, iws, ws):
    """The step's end and size, cut at ``t_bound`` (the differences rescaled to it)."""
    t_new = t + h_abs
    if t_new - t_bound > 0:
        t_new = t_bound
        _change_d(d, order, abs(t_new - t) / h_abs, ws)
        iws[I_EQUAL] = 0
        iws[I_LU_OK] = 0
        h_abs = abs(t_new - t)
    return t_new, h_abs


@njit(**_INLINE)
def _step(rtol, atol, newton_tol, args, fws, iws, d, jm, lu, piv, ws, system):
    """One accepted step of SciPy's ``BDF._step_impl``: ``ACCEPTED``, or why none was:
    ``TOO_SMALL`` (the step size fell below ``min_step``), ``NOT_FINITE`` (it became NaN or
    infinite; deviation: SciPy's ``h_abs < min_step`` is never true of a NaN, and its loop
    never ends) or ``NO_STEP`` (``MAX_TRIALS`` trials)."""
    t, order, n = fws[F_T], iws[I_ORDER], _size(d[0])
    # Deviation: one ulp of t, where SciPy takes ten.  Steps are exact (h_abs, see below),
    # so a step of a few ulps moves the state right and t to within ulp(t) / 2 of its end:
    # a slow escape at t ~ 5e13 needs steps of ~0.05 = 6 ulps, which SciPy's floor refuses.
    min_step = abs(np.nextafter(t, np.inf) - t)
    h_abs = fws[F_H_ABS]
    if not math.isfinite(h_abs):
        return NOT_FINITE
    if h_abs < min_step:
        _change_d(d, order, min_step / h_abs, ws)
        h_abs = min_step
        iws[I_EQUAL] = 0
    current_jac = refresh = False
    for _trial in range(MAX_TRIALS):
        if not math.isfinite(h_abs):
            return NOT_FINITE
        if h_abs < min_step:
            return TOO_SMALL
        t_new, h_abs = _to_bound(t, fws[F_BOUND], h_abs, d, order, iws, ws)
        # Deviation: the step is h_abs, to which the differences D are scaled, not SciPy's
        # rounded ``t_new - t`` (they differ by up to ulp(t) / 2, which the error test would
        # read as the step's error far from t = 0: a slow escape at t ~ 1e8).
        _predict(d, order, n, ws)
        _scale_of(ws.y_predict, rtol, atol, ws.scale)
        c = h_abs / ALPHA[order]
        if fws[F_T0] > 0.0:
            iws[I_LU_OK] = 0  # dt/ds grows at every step: the factors are made anew
        if refresh:  # deviation: not the Jacobian of the rejected trial (see the docstring)
            _jacobian(t_new, ws.y_predict, args, jm, fws, iws, ws.trial, system)
            iws[I_LU_OK] = 0
            current_jac, refresh = True, False
        converged, n_iter, current_jac = _solve_stage(t_new, c, current_jac, newton_tol, args,
                                                      fws, iws, jm, lu, piv, ws, n, system)
        if not converged:
            h_abs *= 0.5
            _change_d(d, order, 0.5, ws)
            iws[I_EQUAL], iws[I_LU_OK], refresh = 0, 0, True
            continue
        safety = 0.9 * (2 * NEWTON_MAXITER + 1) / (2 * NEWTON_MAXITER + n_iter)
        error_norm = _error_norm(order, rtol, atol, ws)
        if error_norm <= 1:
            break
        factor = max(MIN_FACTOR, safety * error_norm ** (-1 / (order + 1)))
        h_abs *= factor
        _change_d(d, order, factor, ws)
        iws[I_EQUAL] = 0
    else:
        return NO_STEP
    iws[I_EQUAL] += 1
    fws[F_T], fws[F_H_ABS] = t_new, h_abs
    _accept(d, order, n, ws)
    if iws[I_EQUAL] < order + 1:
        return ACCEPTED
    _choose_order(order, error_norm, safety, fws, iws, d, ws)
    return ACCEPTED


@njit(**_INLINE)
def _choose_order(order, error_norm, safety, fws, iws, d, ws):
    """SciPy's order and step-size change after ``order + 1`` steps of equal size."""
    scale = ws.scale
    error_m = _norm(ERROR_CONST[order - 1], d[order], scale) if order > 1 else np.inf
    error_p = (_norm(ERROR_CONST[order + 1], d[order + 2], scale) if order < MAX_ORDER
               else np.inf)
    best, delta = -1.0, 0
    for k, e in enumerate((error_m, error_norm, error_p)):
        factor_k = e ** (-1.0 / (order + k)) if e > 0 else np.inf  # SciPy: divide='ignore'
        if factor_k > best:  # argmax: the first of equal factors
            best, delta = factor_k, k - 1
    order += delta
    iws[I_ORDER] = order
    fws[F_H_ABS] *= min(MAX_FACTOR, safety * best)
    _change_d(d, order, min(MAX_FACTOR, safety * best), ws)
    iws[I_EQUAL] = 0
    iws[I_LU_OK] = 0


@njit(**_JIT)
def advance(rtol, atol, args, consts, fws, iws, d, jm, lu, piv, ts, hs, orders, ds, limit,
            scratch, system):
    """Step until ``s`` reaches ``fws[F_BOUND]``, the state settles, the domain edge is
    crossed, ``limit`` steps are recorded, or a step fails (``TOO_SMALL``, ``NOT_FINITE``:
    also rates that are not finite at the start, ``NO_STEP``); the status.

    Steps the system (``iws[I_BLOCK] = -1``) or one block of it in its time ``s``
    (``fws[F_T0]``).  The first call (``iws[I_ORDER] == 0``) starts at
    ``(fws[F_T], d[0])``.  Step ``k`` (``1 <= k < limit``) is recorded as ``ts[k]``,
    ``hs[k]``, ``orders[k]`` and ``ds[k]`` (the differences of its interpolant).
    ``fws[F_SETTLE] >= 0`` means settling is watched with the generated rule (the whole
    system only): ``STARTED_SETTLED`` if it holds at the start, else ``SETTLED`` at the
    first step where it holds.  The domain is watched for the whole system only.
    ``atol`` holds one absolute tolerance per coordinate stepped.
    """
    ws = _workspace(scratch, _size(d[0]))
    whole = iws[I_BLOCK] < 0
    newton_tol = max(10 * EPS / rtol, min(0.03, rtol ** 0.5))  # once, as SciPy's __init__
    if iws[I_ORDER] == 0:
        if not _start(rtol, atol, args, fws, iws, d, jm, ws, system):
            return NOT_FINITE
        if fws[F_SETTLE] >= 0 and _call_settled(system[S_SETTLED], fws[F_T], ws.y, args,
                                                consts, ws.buffer) <= 0:
            return STARTED_SETTLED
    k = iws[I_STEPS]
    while k + 1 < limit:
        if fws[F_T] >= fws[F_BOUND]:
            return REACHED
        stepped = _step(rtol, atol, newton_tol, args, fws, iws, d, jm, lu, piv, ws, system)
        if stepped != ACCEPTED:
            return stepped
        k += 1
        iws[I_STEPS] = k
        # As SciPy's dense output: the interpolant in the step size and order chosen for
        # the next step (``_change_d`` re-expressed the same polynomial in them).
        order = iws[I_ORDER]
        ts[k], hs[k], orders[k] = fws[F_T], fws[F_H_ABS], order
        y = ws.y  # the state at the step's end, d[0], without a view of ``d``
        for i in range(_size(d[0])):
            y[i] = d[0, i]
            for j in range(ds.shape[1]):
                ds[k, j, i] = d[j, i] if j <= order else 0.0
        if system[S_N_MARGINS] and whole:  # a domain condition violated: a margin <= 0
            _call_series(system[S_MARGINS], y, args, ws.buffer)
            for i in range(system[S_N_MARGINS]):
                if ws.buffer[i] <= 0:
                    return EDGE
        if fws[F_SETTLE] >= 0 and _call_settled(system[S_SETTLED], fws[F_T], y, args, consts,
                                                ws.buffer) <= 0:
            return SETTLED
    return FULL


@njit(**_INLINE)
def _dense_at(s, k, ts, hs, orders, ds, y):
    """``y`` <- the interpolant of step ``k`` (ending at ``ts[k]``) at ``s``: SciPy's
    ``BdfDenseOutput``, its products ``prod_j (s - (t_k - j h)) / ((1 + j) h)`` taken as
    ``prod_j (x + j) / (1 + j)`` with ``x = (s - t_k) / h`` (one division, not ``order``)."""
    order = orders[k]
    for i in range(y.size):
        y[i] = ds[k, 0, i]
    x = (s - ts[k]) / hs[k]
    p = 1.0
    for j in range(order):
        p *= (x + j) * RECIPROCALS[j]
        for i in range(y.size):
            y[i] += ds[k, j + 1, i] * p


@njit(**_JIT)
def _first_at_or_after(ts, count, t):
    """The first ``k < count`` with ``ts[k] >= t`` (``count`` if none): NumPy's
    ``searchsorted(ts[:count], t)``, whose generic implementation takes seconds to compile."""
    lo, hi = 0, count
    while lo < hi:
        mid = (lo + hi) // 2
        if ts[mid] < t:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(**_INLINE)
def _step_of(ts, count, s, hint):
    """The step whose interpolant serves ``s``: the first ``k`` with ``ts[k] >= s``, within
    ``[1, count - 1]``; searched forward from ``hint`` (the last answer, as in a scan of
    increasing times) when ``s`` is not before that step, else by bisection."""
    if 1 <= hint < count and ts[hint - 1] < s:
        while hint < count - 1 and ts[hint] < s:
            hint += 1
        return hint
    return min(max(_first_at_or_after(ts, count, s), 1), count - 1)


@njit(**_INLINE)
def _t_of(s, t0):
    """The time ``t`` of a block's time ``s`` (``t0 = 0``: ``s`` is ``t``)."""
    return s if t0 == 0.0 else t0 * math.expm1(s)


@njit(**_INLINE)
def _block_at(t, b, hint, ts, hs, orders, ds, counts, t0s, index, y, part):
    """Block ``b``'s coordinates of ``y`` <- its interpolant at its own ``s(t)``, from the
    step found from ``hint``; that step."""
    s = t if t0s[b] == 0.0 else math.log1p(t / t0s[b])
    k = _step_of(ts[b], counts[b], s, hint)
    _dense_at(s, k, ts[b], hs[b], orders[b], ds[b], part)
    for i in range(index.shape[1]):
        if index[b, i] >= 0:
            y[index[b, i]] = part[i]
    return k


@njit(**_JIT)
def _state_at(t, ts, hs, orders, ds, counts, t0s, index, y, part, hints):
    """``y`` <- the state at time ``t``: each block's interpolant at its own ``s(t)``
    (``hints``: each block's last step, updated)."""
    for b in range(counts.size):
        hints[b] = _block_at(t, b, hints[b], ts, hs, orders, ds, counts, t0s, index, y, part)


@njit(**_ALLOCATING)
def dense_into(times, ts, hs, orders, ds, counts, t0s, index, out):
    """``out[i]`` <- the state at ``times[i]`` (the dense output of a record).

    Block by block, so that for increasing times each block's steps are walked once
    (any order is served, by bisection where a time goes back)."""
    times, ts, hs, orders, ds = (_borrowed(times), _borrowed(ts), _borrowed(hs),
                                 _borrowed(orders), _borrowed(ds))
    counts, t0s, index, out = _borrowed(counts), _borrowed(t0s), _borrowed(index), _borrowed(out)
    part = np.empty(ds.shape[3])
    for b in range(counts.size):
        k = 1
        for i in range(times.size):
            k = _block_at(times[i], b, k, ts, hs, orders, ds, counts, t0s, index, out[i], part)


@njit(**_ALLOCATING)
def merge(ts, hs, orders, ds, counts, t0s, index, steps, y_steps):
    """``steps[:m]`` <- the union of the blocks' step times in ``t``, increasing, each once,
    and ``y_steps[:m]`` <- the state at each; ``m``.

    A block that steps at a time gives its step's end state itself; the others are
    interpolated there (their steps walked once, as the times increase)."""
    ts, hs, orders, ds = _borrowed(ts), _borrowed(hs), _borrowed(orders), _borrowed(ds)
    counts, t0s, index = _borrowed(counts), _borrowed(t0s), _borrowed(index)
    steps, y_steps = _borrowed(steps), _borrowed(y_steps)
    n_blocks = counts.size
    pos = np.zeros(n_blocks, np.int64)  # each block's next step to merge
    hints = np.ones(n_blocks, np.int64)
    heads = np.empty(n_blocks)  # the time of that step
    part = np.empty(ds.shape[3])
    for b in range(n_blocks):
        heads[b] = _t_of(ts[b, 0], t0s[b])
    m = 0
    for _ in range(counts.sum() + 1):  # each pass merges at least one block's step
        t = np.inf
        for b in range(n_blocks):
            if pos[b] < counts[b] and heads[b] < t:
                t = heads[b]
        if not t < np.inf:
            return m
        y = y_steps[m]
        for b in range(n_blocks):
            k = pos[b]
            if k < counts[b] and heads[b] == t:
                for i in range(index.shape[1]):
                    if index[b, i] >= 0:
                        y[index[b, i]] = ds[b, k, 0, i]
                pos[b] = k + 1
                if k + 1 < counts[b]:
                    heads[b] = _t_of(ts[b, k + 1], t0s[b])
            else:
                hints[b] = _block_at(t, b, hints[b], ts, hs, orders, ds, counts, t0s, index, y,
                                     part)
        steps[m] = t
        m += 1
    return m


@njit(**_JIT)
def _past(y, kind, index, level, sign, args, buffer, system):
    """How far series ``index`` of ``kind`` (0 coordinate, 1 state variable, 2 observable)
    is past ``level`` at ``y``, in the crossing's direction: ``sign (value - level)``, which
    turns ``>= 0`` at the crossing."""
    if kind == 0:
        value = y[index]
    else:
        _call_series(system[S_STATE] if kind == 1 else system[S_OBSERVABLES], y, args, buffer)
        value = buffer[index]
    return sign * (value - level)


@njit(**_JIT)
def _root_between(a, b, kind, index, level, sign, args, record, y, part, hints, buffer,
                  system):
    """First ``t`` in ``[a, b]`` where ``sign (quantity - level)`` turns ``>= 0``:
    regula falsi (Illinois) safeguarded by bisection, to a few ulps of ``t``."""
    ts, hs, orders, ds, counts, t0s, where = record
    _state_at(a, ts, hs, orders, ds, counts, t0s, where, y, part, hints)
    ga = _past(y, kind, index, level, sign, args, buffer, system)
    if ga >= 0:
        return a
    _state_at(b, ts, hs, orders, ds, counts, t0s, where, y, part, hints)
    gb = _past(y, kind, index, level, sign, args, buffer, system)
    if gb < 0:  # interpolation round-off at the step end: the step end is the crossing
        return b
    side = 0
    for _ in range(200):
        if b - a <= 4 * EPS * max(abs(a), abs(b)):
            break
        m = (a * gb - b * ga) / (gb - ga)
        if not (a < m < b):
            m = 0.5 * (a + b)
        _state_at(m, ts, hs, orders, ds, counts, t0s, where, y, part, hints)
        gm = _past(y, kind, index, level, sign, args, buffer, system)
        if gm >= 0:
            b, gb = m, gm
            if side == 1:
                ga *= 0.5
            side = 1
        else:
            a, ga = m, gm
            if side == -1:
                gb *= 0.5
            side = -1
        if gm == 0:
            break
    return b


@njit(**_JIT)
def _first_monotone(steps, y_steps, kind, index, level, sign, args, buffer, system):
    """The first merged step where ``sign (quantity - level) >= 0`` for a quantity monotone
    along the flow, by bisection as the pure path's ``first_index``; -1 if none."""
    lo, hi = 0, steps.size - 1
    if _past(y_steps[hi], kind, index, level, sign, args, buffer, system) < 0:
        return -1
    if _past(y_steps[lo], kind, index, level, sign, args, buffer, system) >= 0:
        return 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _past(y_steps[mid], kind, index, level, sign, args, buffer, system) < 0:
            lo = mid
        else:
            hi = mid
    return hi


@njit(**_ALLOCATING)
def crossings(kinds, indices, levels, signs, monotone, args, steps, y_steps, ts, hs, orders,
              ds, counts, t0s, index, out, system):
    """``out[c]`` <- the first time crossing ``c`` happens (NaN: never), from the states
    ``y_steps`` at the (merged, increasing) step times ``steps``: a ``monotone`` one's step
    by bisection, the others' by one scan that reads each state once for every pending
    crossing; a crossing's time within its step from the record."""
    args, steps, y_steps = _borrowed(args), _borrowed(steps), _borrowed(y_steps)
    ts, hs, orders, ds = _borrowed(ts), _borrowed(hs), _borrowed(orders), _borrowed(ds)
    counts, t0s, index = _borrowed(counts), _borrowed(t0s), _borrowed(index)
    record = (ts, hs, orders, ds, counts, t0s, index)
    root_y, part = np.empty(system[S_N_COORDINATES]), np.empty(ds.shape[3])
    root_hints = np.zeros(counts.size, np.int64)
    buffers = np.empty((3, system[S_N_SERIES]))
    found = np.full(kinds.size, -1, np.int64)  # each crossing's step; -1: not (yet) found
    waiting = np.zeros(3, np.int64)  # pending scanned crossings of each kind: a series of a
    for c in range(kinds.size):  # kind is evaluated only while one of them is pending
        if monotone[c]:
            found[c] = _first_monotone(steps, y_steps, kinds[c], indices[c], levels[c],
                                       signs[c], args, buffers[2], system)
        else:
            waiting[kinds[c]] += 1
    for m in range(steps.size):
        if waiting.sum() == 0:
            break
        y = y_steps[m]
        if waiting[1]:
            _call_series(system[S_STATE], y, args, buffers[0])
        if waiting[2]:
            _call_series(system[S_OBSERVABLES], y, args, buffers[1])
        for c in range(kinds.size):
            if monotone[c] or found[c] >= 0:
                continue
            value = y[indices[c]] if kinds[c] == 0 else buffers[kinds[c] - 1, indices[c]]
            if signs[c] * (value - levels[c]) >= 0:
                found[c] = m
                waiting[kinds[c]] -= 1
    for c in range(kinds.size):
        m = found[c]
        out[c] = np.nan if m < 0 else steps[0] if m == 0 else _root_between(
            steps[m - 1], steps[m], kinds[c], indices[c], levels[c], signs[c], args, record,
            root_y, part, root_hints, buffers[2], system)


@njit(**_ALLOCATING)
def first_events(steps, y_steps, start, args, consts, edges, rule, system):
    """``(m, what)``: the first ``m >= start`` where, at ``steps[m]`` (the state
    ``y_steps[m]``), a domain margin is ``<= 0`` (``what = 0``; if ``edges``) or the
    generated stop rule holds (``what = 1``; if ``rule``); ``(-1, -1)`` if neither happens."""
    steps, y_steps = _borrowed(steps), _borrowed(y_steps)
    args, consts = _borrowed(args), _borrowed(consts)
    buffer = np.empty(system[S_N_SERIES])
    for m in range(start, steps.size):
        y = y_steps[m]
        if edges and system[S_N_MARGINS]:
            _call_series(system[S_MARGINS], y, args, buffer)
            for i in range(system[S_N_MARGINS]):
                if buffer[i] <= 0:
                    return m, 0
        if rule and _call_settled(system[S_SETTLED], steps[m], y, args, consts, buffer) <= 0:
            return m, 1
    return -1, -1


@njit(**_ALLOCATING)
def settle_time(a, b, args, consts, ts, hs, orders, ds, counts, t0s, index, system):
    """Where the generated stop rule turns ``<= 0`` in ``[a, b]``, by bisection."""
    ts, hs, orders, ds = _borrowed(ts), _borrowed(hs), _borrowed(orders), _borrowed(ds)
    args, consts, counts = _borrowed(args), _borrowed(consts), _borrowed(counts)
    t0s, index = _borrowed(t0s), _borrowed(index)
    y, part = np.empty(system[S_N_COORDINATES]), np.empty(ds.shape[3])
    hints = np.zeros(counts.size, np.int64)
    buffer = np.empty(system[S_N_SERIES])
    _state_at(a, ts, hs, orders, ds, counts, t0s, index, y, part, hints)
    if _call_settled(system[S_SETTLED], a, y, args, consts, buffer) <= 0:
        return a
    for _ in range(BISECTIONS):
        if not b - a > 4 * EPS * max(abs(a), abs(b)):
            break
        m = 0.5 * (a + b)
        _state_at(m, ts, hs, orders, ds, counts, t0s, index, y, part, hints)
        if _call_settled(system[S_SETTLED], m, y, args, consts, buffer) <= 0:
            b = m
        else:
            a = m
    return b


@njit(**_JIT)
def series_into(ys, args, states, values, system):
    """State variables and observables (with the margins) at the rows of ``ys``."""
    for i in range(ys.shape[0]):
        _call_series(system[S_STATE], ys[i], args, states[i])
        _call_series(system[S_OBSERVABLES], ys[i], args, values[i])


@njit(**_ALLOCATING)
def outputs(times, args, steps, y_steps, ts, hs, orders, ds, counts, t0s, index, ys, states,
            values, kinds, indices, levels, signs, monotone, crossed, system):
    """A finished run's outputs: the dense output at ``times`` into ``ys`` (its first row
    the initial state; a block's last step exactly where it ends at the last time), the
    series at those rows, and the crossing times into ``crossed`` (from ``y_steps``, the
    states at the merged step times ``steps``)."""
    dense_into(times, ts, hs, orders, ds, counts, t0s, index, ys)
    last = ys.shape[0] - 1
    for b in range(counts.size):
        at_end = _t_of(ts[b, counts[b] - 1], t0s[b]) == times[last]
        for i in range(index.shape[1]):
            if index[b, i] >= 0:
                ys[0, index[b, i]] = ds[b, 0, 0, i]
                if at_end:
                    ys[last, index[b, i]] = ds[b, counts[b] - 1, 0, i]
    series_into(ys, args, states, values, system)
    crossings(kinds, indices, levels, signs, monotone, args, steps, y_steps, ts, hs, orders, ds,
              counts, t0s, index, crossed, system)


#: The entry points that take a system tuple, as their last argument.
SYSTEM_ENTRIES = ("advance", "crossings", "first_events", "settle_time", "series_into",
                  "outputs")


def bound(system: tuple) -> tuple:
    """:data:`SYSTEM_ENTRIES` with ``system`` (a system tuple) bound as their last argument,
    in that order: a twin's entry points."""
    def binding(entry):
        def call(*arguments):
            return entry(*arguments, system)
        call.__name__ = call.__qualname__ = entry.__name__
        return call

    return tuple(binding(globals()[name]) for name in SYSTEM_ENTRIES)
