"""``speedup.png``: speedup over the baseline per design, one bar per workload."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from nmp.report.plots import register_plot
from nmp.report.plots.common import (
    bar_entries,
    pick_row,
    plotted_groups,
    plt,
    save_png,
    stable_colors,
)


@register_plot("speedup.png", rank=0)
def plot_speedup(summary: dict[str, Any], path: Path) -> None:
    """Each design's speedup over the sweep's baseline, per workload group."""
    rows, groups = summary["rows"], plotted_groups(summary)
    labels, per_design = bar_entries(rows, groups)
    n_lab, n_grp = len(labels), len(groups)
    height = 0.8 / n_grp
    fig, ax = plt.subplots(figsize=(9, 1.2 + max(2.5, n_lab * (0.22 * n_grp + 0.18))))
    values = []
    group_color = stable_colors(groups)
    for gi, group in enumerate(groups):
        color = group_color[group]
        ys, xs = [], []
        for li, label in enumerate(labels):
            r = pick_row(rows, group, label, per_design)
            if r is None or r["speedup"] is None:
                continue
            ys.append(li + (gi - (n_grp - 1) / 2) * height)
            xs.append(r["speedup"])
        if not xs:  # no baseline point in this group: nothing to compare
            continue
        values += xs
        bars = ax.barh(ys, xs, height=height * 0.95, color=color, label=group)
        if n_lab * n_grp <= 40:
            ax.bar_label(bars, labels=[f"{x:.3g}x" for x in xs], padding=2, fontsize=7)
    ax.axvline(1.0, color="black", lw=0.8, ls="--")
    ax.set_yticks(range(n_lab), labels)
    ax.invert_yaxis()
    if values and max(values) / max(min(values), 1e-12) > 30:
        ax.set_xscale("log")
        ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_minor_formatter(NullFormatter())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))
    ax.set_xlabel(f"speedup over {summary['baseline']} (lookups/s ratio, x)")
    what = "fastest point of each design" if per_design else "each design"
    ax.set_title(f"Speedup of {what} over {summary['baseline']} (dashed line = 1x)")
    ax.legend(
        title="workload", loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, title_fontsize=8
    )
    ax.margins(x=0.12)
    ax.grid(axis="x", alpha=0.3)
    save_png(fig, path)
