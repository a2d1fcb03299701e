"""Scaling laws: a phase time over decades of one parameter, fitted to a power, a logarithm,
or a power times a logarithm.

Each law has an additive constant (the phase time's part that does not grow: the time
from the end of the slow stretch to the phase's level), so the exponent is the
asymptotic one, not a slope biased by the first decades:

* ``log``:       ``T = C + A ln x``          (exponent 0)
* ``power``:     ``T = C + A x^b``
* ``power_log``: ``T = C + A x^b ln x``

Each is fitted by least squares on the relative residuals ``(fit - T) / T`` (the times
span decades).  The simplest law whose RMS relative residual is within :data:`FIT_RTOL`
is chosen; if none is, the best is reported with ``fit_ok`` false and the reason.  The
exponent's interval is the Student-t interval from the fit's covariance; the local
slopes ``d ln T / d ln x`` between consecutive values are reported beside it.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from ._integrate import solve
from ._params import ParameterError, SolverConfig
from ._registry import get_model

__all__ = ["FIT_RTOL", "ScalingFit", "fit_law", "measure_scaling"]

#: A law fits when the RMS relative residual of its fit is within this: the laws are
#: asymptotic, and corrections of relative size 1/x (e.g. ln(1 - m0^2) at m0 = 0.1) reach
#: a few 1e-3 at the first decade.
FIT_RTOL = 1e-2
#: The laws in order of simplicity (number of fitted constants, then form).
LAWS = ("log", "power", "power_log")


@dataclass(frozen=True)
class ScalingFit:
    """A phase time's law in one parameter.

    Attributes
    ----------
    law : str
        ``log``, ``power`` or ``power_log``.
    exponent : float
        ``b`` (0 for ``log``); ``interval`` its 95% interval.
    coefficients : dict
        ``C``, ``A`` (and ``b``).
    residual : float
        RMS relative residual of the fit.
    fit_ok : bool
        Whether the residual is within :data:`FIT_RTOL`; ``reason`` says why not.
    local_slopes : list of float
        ``d ln T / d ln x`` between consecutive values.

    Examples
    --------
    >>> x = np.logspace(1, 7, 13)
    >>> fit = fit_law(x, 2.0 + x ** 0.5 * np.log(x))
    >>> fit.law, round(fit.exponent, 6), fit.fit_ok
    ('power_log', 0.5, True)
    """

    law: str
    exponent: float
    interval: tuple[float, float]
    coefficients: dict
    residual: float
    fit_ok: bool
    reason: str
    values: list[float]
    times: list[float]
    local_slopes: list[float]
    others: dict

    def to_dict(self) -> dict:
        return {**dataclasses.asdict(self), "interval": list(self.interval)}


def _law(law: str, x: np.ndarray, p: np.ndarray) -> np.ndarray:
    ln = np.log(x)
    if law == "log":
        return p[0] + p[1] * ln
    growth = np.exp(p[2] * ln)
    return p[0] + p[1] * growth * (ln if law == "power_log" else 1.0)


def _fitted(law: str, x: np.ndarray, times: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """``(constants, covariance, rms relative residual)`` of one law's least-squares fit."""
    ln_x, ln_t = np.log(x), np.log(times)
    slope = float(np.polyfit(ln_x[-3:], ln_t[-3:], 1)[0])  # the last decades' slope
    if law == "log":
        start = np.array([0.0, (times[-1] - times[0]) / (ln_x[-1] - ln_x[0])])
    else:
        b = max(slope, 1e-3)
        scale = times[-1] / (x[-1] ** b * (ln_x[-1] if law == "power_log" else 1.0))
        start = np.array([0.0, scale, b])
    from scipy.optimize import least_squares  # here: SciPy's optimize and stats take 1.6 s
    # to import, which every command line would pay (the analysis command imports this)

    fit = least_squares(lambda p: (_law(law, x, p) - times) / times, start,
                        x_scale="jac", max_nfev=2000)
    dof = max(len(x) - len(start), 1)
    rms = float(np.sqrt(np.mean(fit.fun ** 2)))
    try:
        covariance = np.linalg.inv(fit.jac.T @ fit.jac) * (2 * fit.cost / dof)
    except np.linalg.LinAlgError:
        covariance = np.full((len(start), len(start)), math.inf)
    return fit.x, covariance, rms


def fit_law(values, times) -> ScalingFit:
    """The law of ``times`` in ``values`` (see the module's docstring).

    Examples
    --------
    >>> x = np.logspace(2, 8, 13)
    >>> fit = fit_law(x, 3.0 + 0.5 * x ** 0.75)
    >>> fit.law, round(fit.exponent, 9)
    ('power', 0.75)
    >>> fit_law(x, 1.0 + 0.25 * np.log(x)).law
    'log'
    """
    x, times = np.asarray(values, dtype=float), np.asarray(times, dtype=float)
    if len(x) < 5 or not np.all(np.isfinite(times)) or np.any(times <= 0):
        raise ParameterError(f"times={times.tolist()!r}: a law needs at least 5 finite "
                             f"positive phase times")
    fits = {law: _fitted(law, x, times) for law in LAWS}
    law = next((name for name in LAWS if fits[name][2] <= FIT_RTOL),
               min(LAWS, key=lambda name: fits[name][2]))
    constants, covariance, rms = fits[law]
    exponent, spread = (0.0, 0.0) if law == "log" else (
        float(constants[2]), float(np.sqrt(covariance[2, 2])))
    from scipy.stats import t as student_t

    half = float(student_t.ppf(0.975, max(len(x) - len(constants), 1))) * spread
    slopes = np.diff(np.log(times)) / np.diff(np.log(x))
    names = ("C", "A", "b")[:len(constants)]
    return ScalingFit(
        law=law, exponent=exponent, interval=(exponent - half, exponent + half),
        coefficients=dict(zip(names, map(float, constants), strict=True)),
        residual=rms, fit_ok=rms <= FIT_RTOL,
        reason="" if rms <= FIT_RTOL else (f"no law fits: the best ({law}) leaves an RMS "
                                           f"relative residual {rms:.3g} > {FIT_RTOL:g}"),
        values=x.tolist(), times=times.tolist(), local_slopes=slopes.tolist(),
        others={name: fits[name][2] for name in LAWS})


def measure_scaling(model, params, param: str, lo: float, hi: float, phase: str, *,
                    variant: str | None = None, per_decade: int = 2,
                    solver: SolverConfig | None = None) -> ScalingFit:
    """``phase``'s time at values of ``param`` log-spaced from ``lo`` to ``hi``, and its law.

    Examples
    --------
    >>> fit = measure_scaling("deep_linear", {"s": 1.0}, "sigma", 1e-12, 1e-4, "T_half")
    >>> fit.law  # T = ln(s/sigma^2 - 1)/(2s): a logarithm of sigma
    'log'
    """
    model = get_model(model)
    base = params if isinstance(params, model.Params) else model.make_params(params)
    if param not in {f.name for f in model.Params.declared()}:
        raise ParameterError(f"param={param!r}; allowed: "
                             f"{', '.join(f.name for f in model.Params.declared())}")
    if not (0 < lo < hi and math.isfinite(hi)):
        raise ParameterError(f"from={lo!r}, to={hi!r}; allowed: 0 < from < to < inf")
    if phase not in model.phase_order:
        raise ParameterError(f"phase={phase!r}; allowed: {', '.join(model.phase_order)}")
    count = max(5, round(per_decade * math.log10(hi / lo)) + 1)
    values = np.logspace(math.log10(lo), math.log10(hi), count)
    settings = [dataclasses.replace(base, **{param: float(v)}) for v in values]
    times = [solve(s, variant, solver, model=model).phases[phase] for s in settings]
    return fit_law(values, times)
