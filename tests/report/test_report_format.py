"""Issue 25's report defects: units of time, stable colours, tick labels, 'tail' defined,
which workload breakdown.png shows."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from nmp.report.files import TERMS  # noqa: E402
from nmp.report.format import fmt_time_ns  # noqa: E402
from nmp.report.plots import PLOTS, log_axis, stable_colors  # noqa: E402
from tests.shipped import assert_shipped_in_order


@pytest.mark.parametrize(
    ("ns", "text"),
    [(1_078_000.0, "1.078 ms"), (117_517.1, "117.5 µs"), (59.9, "59.9 ns"), (2.5e9, "2.5 s")],
)
def test_time_in_its_unit(ns: float, text: str) -> None:
    assert fmt_time_ns(ns) == text  # never "1.078 k us"


def test_a_designs_colour_does_not_depend_on_the_other_designs() -> None:
    few = stable_colors(["recross", "host-cpu"])
    many = stable_colors(["tensordimm", "recnmp", "trim-g", "trim-b", "recross", "host-cpu"])
    assert few["recross"] == many["recross"]
    assert len(set(many.values())) == len(many)  # distinct within one plot


@pytest.mark.parametrize(("lo", "hi"), [(3.1e8, 4.4e8), (6e7, 7e8), (1.0e4, 1.5e4)])
def test_log_axes_label_several_ticks(lo: float, hi: float) -> None:
    fig, ax = plt.subplots()
    ax.set_xscale("log")
    ax.scatter([lo, hi], [1, 2])
    log_axis(ax.xaxis, [lo, hi])
    fig.canvas.draw()
    labels = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    visible = [t for t in ax.xaxis.get_major_ticks() if lo * 0.9 <= t.get_loc() <= hi * 1.1]
    plt.close(fig)
    assert len(visible) >= 2, labels
    assert all(labels), labels


def test_tail_is_defined_and_plots_are_registered() -> None:
    assert "*tail*" in TERMS and "reduction tree" in TERMS and "last wave" in TERMS
    assert_shipped_in_order(PLOTS, ["speedup.png", "pareto.png", "breakdown.png"])


def test_markers_are_distinct_within_a_plot_and_stable() -> None:
    from nmp.report.plots import stable_markers

    names = ["a100-80gb", "host-cpu", "tensordimm", "recnmp", "trim-g", "trim-b", "recross"]
    many = stable_markers(names)
    assert len(set(many.values())) == len(names)
    assert stable_markers(list(reversed(names))) == many  # not the order a sweep lists them
