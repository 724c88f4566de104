"""Every figure of ``qderive figure`` to a paper's standard, checked on the matplotlib objects themselves.

Each figure is drawn from cheap data (a few loads, short simulations: the same functions as the
full figure, smaller grids) by its module's ``plot_*`` function, then read back:

* one style: every visible text (ticks, legends, labels, titles) is at least
  :data:`~qderive.derivations.figures.style.MIN_TEXT_POINTS` points at the size it is drawn;
* legends off the data: no plotted point lies inside a legend's box (display coordinates);
* axes that show the data's range: a logarithmic axis ends within one decade beyond the data's
  extremes, a linear one spans at most a little more than the data (matplotlib's margins);
* math as mathtext: no ``^`` or ``_`` outside ``$...$`` (ASCII math such as ``2^k``);
* no label twice in one legend.

And the command line: ``--help`` names PNG, PDF and SVG, each format is written, and without
matplotlib ``qderive figure --out`` is one line naming the extra, exit status 2, before any work.
"""

from __future__ import annotations

import math
import re
import sys
from fractions import Fraction

import pytest
from matplotlib.text import Text

from conftest import cli
from qderive.derivations.figures import (cluster, hysteretic, scp, sip_retransmission, sip_timers, style, two_flow,
                                         vacation)


def _fig1():
    return vacation.plot_figure1(vacation.figure1_data(points=3))


def _sip_timers(monkeypatch):
    monkeypatch.setattr(sip_timers, "LOADS", (Fraction(3, 10), Fraction(4, 5)))
    return sip_timers.plot_sip_timers(sip_timers.rows())


def _fig3():
    return hysteretic.plot_figure3(hysteretic.figure3_data(loads_thesis=(Fraction(1), Fraction(2)),
                                                           loads_below=(Fraction(6, 10),), digits_below=20))


def _policies():
    rows = hysteretic.policies_data(loads=(Fraction(6, 5), Fraction(9, 5)), sim_loads=(Fraction(3, 2),),
                                    customers=3000, replications=2)
    return hysteretic.plot_policies(rows)


_SHORT_SCP = scp.S.SCPConfig(horizon=12, warmup=2)


def _scp_overload():
    costs = (Fraction(0), Fraction(1, 10))
    rows = scp.figure_scp(None, None, load_factors=(Fraction(1, 2), Fraction(2)), replications=2, config=_SHORT_SCP,
                          rejection_costs=costs)
    return scp.plot_scp(rows, costs, _SHORT_SCP)


def _scp_services():
    rows = scp.figure_scp_services(None, None, load_factors=(Fraction(1), Fraction(2)), replications=2,
                                   config=_SHORT_SCP)
    return scp.plot_scp_services(rows, _SHORT_SCP)


def _goodput(monkeypatch):
    monkeypatch.setattr(sip_retransmission, "CONTROLS", {k: sip_retransmission.CONTROLS[k] for k in ("none", "503")})
    monkeypatch.setattr(sip_retransmission, "LOADS", (Fraction(1, 2), Fraction(3, 2)))
    monkeypatch.setattr(sip_retransmission, "SIM_LOADS", (Fraction(3, 2),))
    monkeypatch.setattr(sip_retransmission, "SIM_RUN", (30.0, 5.0, 2))
    return sip_retransmission.plot_goodput_collapse(sip_retransmission.analytic_rows(),
                                                    sip_retransmission.simulated_rows())


def _two_flow():
    study = {**two_flow.STUDY, "shares": (Fraction(1, 5), Fraction(4, 5)), "ratios": (4, 8)}
    return two_flow.plot_comparison(two_flow.comparison_rows(study), study)


def _cluster1():
    rates = tuple(Fraction(j) for j in range(1, 9))
    return cluster.plot_cluster1(cluster.cluster1_rows(rates), cluster.CURVES1)


def _cluster2():
    panels = {"a": [(3, Fraction(3))], "b": [(2, Fraction(7, 2))]}
    return cluster.plot_cluster2(cluster.cluster2_rows(panels, max_copies=4))


FIGURES = {"fig1": _fig1, "sip-timers": _sip_timers, "fig3": _fig3, "policies": _policies,
           "scp-overload": _scp_overload, "scp-services": _scp_services, "goodput-collapse": _goodput,
           "two-flow-comparison": _two_flow, "cluster-fig1": _cluster1, "cluster-fig2": _cluster2}


def test_every_registered_figure_is_checked_here():
    from qderive.derivations.cli import _figures

    assert sorted(_figures()) == sorted(FIGURES)


def _visible_texts(fig):
    return [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip() and t.figure is fig]


def _data_points(ax):
    """The display coordinates of every plotted data point (lines with markers or vertices) of ``ax``."""
    pts = []
    for line in ax.get_lines():
        if not line.get_visible() or line.get_label() == "_nolegend_" and not len(line.get_xdata()):
            continue
        xy = line.get_xydata()
        xy = xy[[all(map(math.isfinite, p)) for p in xy]] if len(xy) else xy
        if len(xy) and (ax.get_xscale() != "log" or (xy[:, 0] > 0).all()) and (
                ax.get_yscale() != "log" or (xy[:, 1] > 0).all()):
            pts += [tuple(p) for p in ax.transData.transform(xy)]
    return pts


def _axis_data(ax, axis):
    values = []
    for line in ax.get_lines():
        if line.get_visible():
            data = line.get_ydata() if axis == "y" else line.get_xdata()
            values += [float(v) for v in data if math.isfinite(float(v))]
    return values


MATH = re.compile(r"\$[^$]*\$")


#: in the full suite only (1.1 s each): fig1, loop sibling test_figure1.py::test_cli_figure_writes_png_and_csv (the same
#: plotting code, to a PNG); fig3, loop sibling test_hysteretic.py::test_figure_is_registered_and_draws (the same
#: figure3_data and plot_figure3). The style rules themselves are checked on the other figures in the loop
_FULL_SUITE_ONLY = {"fig1", "fig3"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in _FULL_SUITE_ONLY else n
                                  for n in sorted(FIGURES)])
def test_figure_meets_the_style(name, monkeypatch, tmp_path):
    make = FIGURES[name]
    fig = make(monkeypatch) if make.__code__.co_argcount else make()
    fig.canvas.draw()  # lays out the figure (constrained layout, tick labels)
    renderer = fig.canvas.get_renderer()

    # one style: every text at least MIN_TEXT_POINTS points (ticks and legends included)
    small = [(t.get_text(), t.get_fontsize()) for t in _visible_texts(fig) if t.get_fontsize() < style.MIN_TEXT_POINTS]
    assert not small, f"{name}: text below {style.MIN_TEXT_POINTS} pt: {small[:5]}"
    for ax in fig.axes:
        for tick in ax.get_xticklabels() + ax.get_yticklabels():
            assert tick.get_fontsize() >= style.MIN_TEXT_POINTS

    # math as mathtext: no ^ or _ outside $...$
    ascii_math = [t.get_text() for t in _visible_texts(fig) if re.search(r"[\^_]", MATH.sub("", t.get_text()))]
    assert not ascii_math, f"{name}: ASCII math in {ascii_math}"

    # legends: no duplicate entries, and no data point inside a legend's box
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend()] + list(fig.legends)
    assert legends, f"{name}: no legend"
    for legend in legends:
        labels = [t.get_text() for t in legend.get_texts()]
        assert len(labels) == len(set(labels)), f"{name}: duplicate legend entries {labels}"
        box = legend.get_window_extent(renderer)
        for ax in fig.axes:
            inside = [p for p in _data_points(ax) if box.x0 < p[0] < box.x1 and box.y0 < p[1] < box.y1]
            assert not inside, f"{name}: {len(inside)} data points under the legend {labels[:3]}"

    # axes that show the data's range
    for ax in fig.axes:
        for axis in ("x", "y"):
            values = _axis_data(ax, axis)
            lo, hi = ax.get_ylim() if axis == "y" else ax.get_xlim()
            lo, hi = min(lo, hi), max(lo, hi)
            if (ax.get_yscale() if axis == "y" else ax.get_xscale()) == "log":
                values = [v for v in values if v > 0]
                if not values:
                    continue
                # a log axis ends at most one decade (a factor 10, and rounding) beyond the data
                assert lo >= min(values) / 10.5 and hi <= max(values) * 10.5, (name, axis, lo, hi,
                                                                                min(values), max(values))
            elif len(values) > 1 and max(values) > min(values):
                # a linear axis: matplotlib's 5 % margins, an axhline at a reference value, or an explicit limit
                # that shows the whole data; never more than twice the data's span
                span = max(values) - min(values)
                assert hi - lo <= 2 * span + 1e-12, (name, axis, lo, hi, min(values), max(values))

    # every format of --out: PNG, PDF, SVG (one cheap figure suffices for the writer)
    if name == "fig1":
        magic = {".png": b"\x89PNG", ".pdf": b"%PDF", ".svg": b"<?xml"}
        for suffix, head in magic.items():
            out = tmp_path / f"fig{suffix}"
            style.save(fig, out)
            assert out.read_bytes().startswith(head), suffix


def test_fit_log_axis_ends_at_the_decades_around_the_data():
    from matplotlib.figure import Figure

    ax = Figure().subplots()
    ax.set_yscale("log")
    style.fit_log_axis(ax, [3e-7, 0.2, float("nan"), 0.0, None])
    assert ax.get_ylim() == (1e-7, 1.0)


def test_legend_outside_merges_duplicate_labels():
    from matplotlib.figure import Figure

    ax = Figure().subplots()
    ax.plot([0, 1], [0, 1], label="a")
    ax.plot([0, 1], [1, 0], label="a")
    ax.plot([0, 1], [1, 1], label="b")
    legend = style.legend_outside(ax)
    assert [t.get_text() for t in legend.get_texts()] == ["a", "b"]
    assert legend.get_bbox_to_anchor().transformed(ax.transAxes.inverted()).x0 > 1


def test_help_names_the_formats_and_the_extra():
    code, out, err = cli(["figure", "--help"])
    assert code == 0
    text = " ".join(out.split())
    for word in ("PNG", "PDF", "SVG", "qderive[plot]"):
        assert word in text, word


def test_without_matplotlib_one_line_names_the_extra(monkeypatch, tmp_path):
    # the figure data would take seconds: the error must come before it
    def no_work(*args, **kwargs):
        raise AssertionError("figure data computed before the matplotlib check")

    monkeypatch.setattr(vacation, "figure1_data", no_work)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    code, out, err = cli(["figure", "fig1", "--out", str(tmp_path / "f.pdf")])
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and 'pip install "qderive[plot]"' in err and "Traceback" not in err, err
    assert not (tmp_path / "f.pdf").exists()


def test_an_unknown_format_is_refused_before_any_work(monkeypatch, tmp_path):
    monkeypatch.setattr(vacation, "figure1_data", lambda *a, **k: pytest.fail("work done before the check"))
    code, _, err = cli(["figure", "fig1", "--out", str(tmp_path / "f.jpeg")])
    assert code == 2 and "--out" in err and ".png, .pdf, .svg" in err and err.count("\n") == 1, err
