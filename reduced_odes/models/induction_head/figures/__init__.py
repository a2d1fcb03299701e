"""Publication figures, drawn only from result files (JSON / JSON Lines).

``reduced-odes figures`` writes each figure as PNG and PDF.  Every figure is
drawn from data files in ``figures/data/`` (committed beside the figures), so a
figure can be regenerated without re-integrating anything; a data file that is
missing is first created by calling the package, then the figure is drawn.

Data files (``<data>`` = ``figures/data`` by default)
-----------------------------------------------------
``trajectory-<closure>-L<L>-alpha<a>-wstar<w>-sigma<s>.json``
    :func:`reduced_odes._results.trajectory_record` of one run (log-spaced
    ``series`` from t = 0, phases, solver, versions) plus ``phase_IV``, the
    dense output sampled on a *linear* time grid from ``T_III`` to the end of
    the run (for the exponential decay of ``L_IH``), and ``predictions``, the
    derived predictions of :mod:`reduced_odes.models.induction_head.numerics` at that setting.
``verify-<grid>.jsonl``
    The raw per-setting results of ``reduced-odes verify --grid <grid>``.  If
    the settings a figure needs are missing, only those are run (through the
    same resumable sweep engine, so a later ``verify`` reuses them).
``predictions-<closure>-alpha<a>-wstar<w>.json``
    ``lambda``, ``T_em_slope = 2/lambda`` and ``T_em_leading`` on a fine grid of
    ``L`` and ``sigma`` (the lines of the scaling figure).
``compare-overlay.json`` (optional, never created here)
    Exact-softmax SGD curves for the closures figure, as written by ``reduced-odes
    compare`` (:func:`reduced_odes.models.induction_head.sgd_compare.sgd_overlay`).
    Schema, a single curve object or ``{"setting": {...}, "curves": [curve, ...]}``::

        {"t": [...], "w_kq": [...], "L_IH": [...],      # w_kq or L_IH may be absent
         "label": "exact softmax SGD (4 seeds)",        # optional
         "interval": {"w_kq": {"lo": [...], "hi": [...]},  # optional band
                      "L_IH": {"lo": [...], "hi": [...]}},
         "setting": {"L": 50, "alpha": 0.5, "wstar": 0.3, "sigma": 0.01}}  # optional

    ``params`` is accepted for ``setting``, and a flat ``interval``
    ``{"w_kq_lo": [...], "w_kq_hi": [...]}`` for the nested one.  When a setting is
    given, the closures figure is drawn at that setting (the ODE trajectories are
    computed there); otherwise at the default setting.
``compare-grid.json`` (optional, never created here)
    The closure-error table of ``reduced-odes compare --grid FILE``
    (:func:`reduced_odes.models.induction_head.ground_truth.run_compare`): ``{"rows": [...],
    "metadata": {...}}``, a row per (L, sigma, w*, alpha) with the exact-softmax phase
    times (``exact``) and each closure's with ``ratio_to_exact`` (``value``, ``lo``,
    ``hi`` of ``T_em``, ``window``, ``T_III``; no ``window`` where
    ``exact.window_is_T_III``, i.e. T_II = 0).  The ``closure_errors`` figure is
    drawn only when this file exists.

Figures (``<out>`` = ``figures``; the ``linear`` closure, the paper's, gets the plain
name, the other closure a ``-meanfield`` suffix)
----------------------------------------------------------------------------------
``phases``            the four phases: L_G4, L_IH and the parameters against t.
``plateau_scaling``   T_em against ln(1/sigma) for several L (markers: verify records;
                      lines: the leading-order prediction, slope 2/lambda, no fit), T_em/L
                      against L, and the excess (T_em - T_em_leading)/L (the O(L) term).
``convergence``       t L_G4 -> 1/4 and ln L_IH in phase IV against the predicted slope
                      -2 mu (anchored where L_IH = 1e-8 x its plateau level).
``closures``          linear vs meanfield (and exact-softmax SGD when its data exist).
``closure_errors``    closure/exact T_em and emergence window against L (colour: w*;
                      line: closure; marker: sigma), from ``compare-grid.json``, only
                      when that file exists; the window panel leaves out T_II = 0.

Phase boundaries (shaded in ``phases``) are the measured phase times of
:class:`reduced_odes.PhaseThresholds`: I = [0, T_I] (L_G4 down to 1% of L_G4(0)),
II = [T_I, T_II] (until w_kq = 0.1 w*), III = [T_II, T_III] (w_kq from 0.1 w* to
0.9 w*, with T_em at 0.5 w* marked), IV = [T_III, end of run].  If the measured
times are out of order (the induction head emerging before the 4-gram is learned,
as at alpha = 0.2, w* = 0.45, L = 50), each boundary is clipped to the one before
it and the figure says so.

Colours are Okabe-Ito: the 4-gram mechanism (L_G4, w_v1, p) is always blue, the
induction head (L_IH, w_v2, w_kq) always vermillion.  Output files carry no
timestamps, so regenerating them from the same data gives identical bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from reduced_odes.author import (
    COLUMN_WIDTH,
    FORMATS,
    OKABE_ITO,
    ParameterError,
    parse_formats,
    render,
)

from ..params import ModelParams
from ._data import (
    CLOSURES,
    DEFAULT_PARAMS,
    FIGURES,
    OVERLAY_FILE,
    load_overlay,
    predictions_data,
    predictions_path,
    scaling_records,
    trajectory_data,
    trajectory_path,
)
from ._style import MECHANISM_COLOURS, PHASE_NAMES, figure_path, save_each
from .closure_errors import COMPARE_GRID_FILE, plot_closure_errors
from .closures import plot_closures
from .convergence import plot_convergence
from .phases import plot_phases
from .plateau_scaling import plot_plateau_scaling

__all__ = [
    "CLOSURES",
    "COLUMN_WIDTH",
    "DEFAULT_PARAMS",
    "FIGURES",
    "FORMATS",
    "MECHANISM_COLOURS",
    "OKABE_ITO",
    "OVERLAY_FILE",
    "PHASE_NAMES",
    "figure_path",
    "load_overlay",
    "draw_figures",
    "make_figures",
    "plot_closure_errors",
    "plot_closures",
    "plot_convergence",
    "plot_phases",
    "plot_plateau_scaling",
    "predictions_data",
    "predictions_path",
    "render",
    "scaling_records",
    "trajectory_data",
    "trajectory_path",
]


def make_figures(out: str | Path = "figures", data: str | Path | None = None,
                 formats: str | Sequence[str] = FORMATS, closure: str = "all",
                 grid: str = "default", *, params: ModelParams | None = None,
                 scaling_L: Sequence[int] | None = None,
                 scaling_sigma: Sequence[float] | None = None, executor=None,
                 log=None) -> list[Path]:
    """Draw every figure from the data files, creating missing data first.

    Parameters
    ----------
    out : path
        Directory of the figures.
    data : path, optional
        Directory of the data files (default ``<out>/data``).
    formats : str or sequence
        ``"png,pdf"`` or a subset.
    closure : {"linear", "meanfield", "all"}
        Closures of the per-closure figures; ``closures`` (and ``closure_errors``, when
        ``<data>/compare-grid.json`` exists) is drawn only for ``all``.
    grid : str
        Verify grid whose results feed ``plateau_scaling`` (``verify-<grid>.jsonl``).
    params : ModelParams, optional
        Setting of ``phases``, ``convergence`` and ``closures`` (default
        :data:`DEFAULT_PARAMS`).
    scaling_L, scaling_sigma : sequence, optional
        Override the grid's L and sigma values in ``plateau_scaling``.
    executor : concurrent.futures.Executor, optional
        Where missing verify settings run (default: a process pool).
    log : callable, optional
        Called with one line per file written.

    Returns
    -------
    list of Path
        The figure files.
    """
    from reduced_odes.author import read_json

    log = log or (lambda line: None)
    params = DEFAULT_PARAMS if params is None else params
    formats = parse_formats(formats)
    if closure not in (*CLOSURES, "all"):
        raise ParameterError(f"closure={closure!r}; allowed: linear, meanfield, all")
    closures = list(CLOSURES) if closure == "all" else [closure]
    out = Path(out)
    data = Path(data) if data is not None else out / "data"
    written: list[Path] = []

    for cl in closures:
        path = trajectory_data(cl, params, data)
        record = read_json(path)
        for name, plot in (("phases", plot_phases), ("convergence", plot_convergence)):
            written += save_each(lambda plot=plot, record=record: plot(record),
                                 [f"data={path.name}"], out, name, cl, formats)
        records = scaling_records(cl, data, grid, alpha=params.alpha, wstar=params.wstar,
                                  L=scaling_L, sigma=scaling_sigma, executor=executor)
        if records:
            pred_path = predictions_data(cl, data, alpha=params.alpha, wstar=params.wstar,
                                         L=[r["setting"]["L"] for r in records],
                                         sigma=[r["setting"]["sigma"] for r in records])
            predictions = read_json(pred_path)
            written += save_each(lambda records=records, predictions=predictions:
                                 plot_plateau_scaling(records, predictions),
                                 [f"data=verify-{grid}.jsonl", f"data={pred_path.name}"],
                                 out, "plateau_scaling", cl, formats)
    if closure == "all":
        overlay = load_overlay(data / OVERLAY_FILE)
        where = params
        if overlay and overlay["setting"]:
            where = ModelParams(**overlay["setting"])
        paths = {cl: trajectory_data(cl, where, data, with_predictions=False)
                 for cl in CLOSURES}
        documents = {cl: read_json(p) for cl, p in paths.items()}
        written += save_each(lambda: plot_closures(documents, overlay),
                             [f"data={p.name}" for p in paths.values()]
                             + ([f"data={OVERLAY_FILE}"] if overlay else []),
                             out, "closures", None, formats)
        grid_path = data / COMPARE_GRID_FILE
        if grid_path.exists():  # committed separately; until then the figure is skipped
            errors = read_json(grid_path)
            written += save_each(lambda: plot_closure_errors(errors),
                                 [f"data={grid_path.name}"], out, "closure_errors", None,
                                 formats)
    for path in written:
        log(f"wrote {path}")
    return written


def draw_figures(out: str | Path, data: str | Path,
                 formats: str | Sequence[str] = FORMATS) -> list[Path]:
    """The ``figures`` command: every figure of both closures, ``plateau_scaling`` from the
    ``default`` verify grid (see :func:`make_figures`).

    Examples
    --------
    >>> draw_figures("figures/induction_head", "figures/data/induction_head")  # doctest: +SKIP
    """
    return make_figures(out, data, formats, "all", "default")
