"""One matplotlib style for every figure of ``qderive figure``: type, legends, axis ranges, output formats.

Every figure module draws through :func:`new_figure` and writes through :func:`save`, so the
figures share one look, sized for a paper at the size they are drawn (no scaling in LaTeX):

* text: axis labels 9 pt, tick labels and legends 8 pt (:data:`MIN_TEXT_POINTS`), titles 9.5 pt;
  mathtext for every symbol (``$\\bar\\rho$``, ``$2^k$``), never ASCII math;
* legends off the data: :func:`legend_outside` puts a legend to the right of its axes (or below
  a row of panels), outside every data point;
* axes that show the data's range: :func:`fit_log_axis` ends a logarithmic axis at the decades
  around the data (not at an outlier's 1e32);
* constrained layout (no overlap of labels, titles and legends), a white background, 200 dpi PNG;
  PDF and SVG are vector output (the suffix of ``--out`` chooses: ``.png``, ``.pdf``, ``.svg``).

The figures are made with :class:`matplotlib.figure.Figure` (no pyplot): drawing a figure never
changes the process's matplotlib backend, so a Jupyter kernel keeps its inline figures.
matplotlib is the optional extra ``pip install "qderive[plot]"``; :func:`require_matplotlib`
says so in one line (``qderive figure`` exits with status 2) before any figure data is computed.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from pathlib import Path

from ...symbolic.errors import ParameterError

__all__ = ["RC", "MIN_TEXT_POINTS", "FORMATS", "require_matplotlib", "check_output", "new_figure", "legend_outside",
           "fit_log_axis", "save"]

#: the smallest font size (points) of any text of a figure: ticks, legends, annotations
MIN_TEXT_POINTS = 8
#: output suffix -> what it is (``qderive figure --out``)
FORMATS = {".png": "PNG, 200 dpi", ".pdf": "PDF (vector)", ".svg": "SVG (vector)"}

#: the rc parameters of every figure (``matplotlib.rc_context(RC)`` while a figure is drawn and saved)
RC = {
    "font.size": 9,
    "axes.titlesize": 9.5,
    "axes.labelsize": 9,
    "xtick.labelsize": MIN_TEXT_POINTS,
    "ytick.labelsize": MIN_TEXT_POINTS,
    "legend.fontsize": MIN_TEXT_POINTS,
    "legend.title_fontsize": MIN_TEXT_POINTS,
    "figure.titlesize": 10,
    "legend.frameon": False,
    "legend.handlelength": 2.2,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "grid.linewidth": 0.6,
    "lines.linewidth": 1.4,
    "lines.markersize": 4,
    "errorbar.capsize": 2,
    "mathtext.fontset": "dejavusans",
    "figure.facecolor": "white",
    "savefig.facecolor": "white",
    "savefig.dpi": 200,
    "pdf.fonttype": 42,  # TrueType in PDF: text stays text (searchable, editable)
    "svg.fonttype": "none",
}


def require_matplotlib():
    """The ``matplotlib`` module, or a one-line :class:`ParameterError` naming the extra to install."""
    try:
        import matplotlib
    except ImportError:
        raise ParameterError('drawing a figure (--out) needs matplotlib: pip install "qderive[plot]"') from None
    return matplotlib


def check_output(path) -> str:
    """``path`` if its suffix is one of :data:`FORMATS`; else a one-line error naming ``--out`` (before any work)."""
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise ParameterError("--out", f"must end in {', '.join(FORMATS)} ({'; '.join(FORMATS.values())})", str(path))
    return str(path)


@contextmanager
def new_figure(width: float = 6.4, height: float = 4.0, nrows: int = 1, ncols: int = 1, **subplots):
    """``with new_figure(w, h, nrows, ncols) as (fig, axes):`` a figure in the house style (:data:`RC`).

    The style is active for the whole block (matplotlib reads it when an artist is made); the figure
    has an Agg canvas of its own (no pyplot, no backend switch) and constrained layout. ``axes`` is
    one Axes for 1 x 1, else the array of ``Figure.subplots(nrows, ncols, **subplots)``.
    """
    matplotlib = require_matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    with matplotlib.rc_context(RC):
        fig = Figure(figsize=(width, height), layout="constrained")
        FigureCanvasAgg(fig)
        axes = fig.subplots(nrows, ncols, **subplots)
        yield fig, axes


def legend_outside(ax, where: str = "right", **kwargs):
    """The legend of ``ax`` outside its data area: to the ``right`` of the axes, or ``below`` them.

    Returns the Legend (None when ``ax`` has no labelled artist). Duplicate labels are shown once.
    """
    handles, labels = ax.get_legend_handles_labels()
    unique = {}
    for handle, label in zip(handles, labels):
        unique.setdefault(label, handle)
    if not unique:
        return None
    if where == "right":
        place = {"loc": "upper left", "bbox_to_anchor": (1.01, 1.0)}
    elif where == "below":
        place = {"loc": "upper center", "bbox_to_anchor": (0.5, -0.18), "ncol": min(3, len(unique))}
    else:
        raise ValueError(f"where must be 'right' or 'below', got {where!r}")
    return ax.legend(list(unique.values()), list(unique), **{**place, **kwargs})


def fit_log_axis(ax, values, axis: str = "y") -> None:
    """End a logarithmic ``axis`` of ``ax`` at the decades around the positive finite ``values``.

    ``[10^floor(log10 min), 10^ceil(log10 max)]``: the axis shows the data's range and no more
    (matplotlib's automatic limits follow every artist, e.g. a text placed far out).
    """
    finite = [float(v) for v in values if v is not None and math.isfinite(float(v)) and float(v) > 0]
    if not finite:
        return
    lo, hi = math.floor(math.log10(min(finite))), math.ceil(math.log10(max(finite)))
    if hi == lo:
        hi += 1
    (ax.set_ylim if axis == "y" else ax.set_xlim)(10.0**lo, 10.0**hi)


def save(fig, path) -> None:
    """Write ``fig`` to ``path`` (PNG, PDF or SVG by the suffix, :data:`FORMATS`) in the house style."""
    matplotlib = require_matplotlib()
    with matplotlib.rc_context(RC):
        fig.savefig(check_output(path))
