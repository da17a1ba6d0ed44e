"""``pareto.png``: lookups/s against energy per lookup per workload, the Pareto set highlighted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from matplotlib.lines import Line2D

from nmp.report.plots import register_plot
from nmp.report.plots.common import (
    OBJECTIVE_NAMES,
    log_axis,
    plotted_groups,
    plt,
    save_png,
    stable_colors,
    stable_markers,
)


@register_plot("pareto.png", rank=1)
def plot_pareto(summary: dict[str, Any], path: Path) -> None:
    """Throughput against energy per lookup, the Pareto set marked."""
    rows, groups = summary["rows"], plotted_groups(summary)
    designs = list(dict.fromkeys(r["design"] for r in rows))
    color = stable_colors(designs)
    marker = stable_markers(designs)
    ncols = min(len(groups), 3)
    nrows = (len(groups) + ncols - 1) // ncols
    fig, axes = plt.subplots(nrows, ncols, figsize=(5.2 * ncols, 4.2 * nrows), squeeze=False)
    for ax, group in zip(axes.flat, groups, strict=False):
        grows = [r for r in rows if r["group"] == group]
        for d in designs:
            pts = [r for r in grows if r["design"] == d]
            if not pts:
                continue
            # Two layers: points off the Pareto set small and pale, on it large and outlined.
            for on_front in (False, True):
                sel = [r for r in pts if r["pareto"] == on_front]
                if not sel:
                    continue
                ax.scatter(
                    [r["lookups_per_s"] for r in sel],
                    [r["energy_pj_per_lookup"] for r in sel],
                    s=80 if on_front else 40,
                    color=color[d],
                    marker=marker[d],
                    edgecolors="black" if on_front else color[d],
                    linewidths=1.4 if on_front else 0.0,
                    alpha=0.95 if on_front else 0.6,
                    label=d,
                    zorder=4 if on_front else 3,
                )
        ax.set_xscale("log")
        ax.set_yscale("log")
        log_axis(ax.xaxis, [r["lookups_per_s"] for r in grows])
        log_axis(ax.yaxis, [r["energy_pj_per_lookup"] for r in grows])
        ax.tick_params(axis="x", labelrotation=30)
        ax.set_xlabel("throughput (lookups/s)")
        ax.set_ylabel("energy per lookup (pJ)")
        ax.set_title(group, fontsize=10)
        ax.margins(0.08)
        ax.grid(alpha=0.3, which="both")
    for ax in list(axes.flat)[len(groups) :]:
        ax.set_visible(False)
    used = list(dict.fromkeys(r["design"] for r in rows if r["group"] in groups))
    handles = [Line2D([], [], ls="", marker=marker[d], color=color[d], markersize=8) for d in used]
    labels = list(used)
    handles.append(
        Line2D(
            [],
            [],
            ls="",
            marker="o",
            color="lightgray",
            markeredgecolor="black",
            markeredgewidth=1.4,
            markersize=9,
        )
    )
    labels.append("on the Pareto set")
    fig.legend(handles, labels, title="design", loc="center left", bbox_to_anchor=(1.0, 0.5))
    objectives = ", ".join(
        f"{OBJECTIVE_NAMES.get(k, k)} {'up' if v == 'max' else 'down'}"
        for k, v in summary["objectives"].items()
    )
    fig.suptitle(
        f"Throughput vs energy per workload: black-edged = Pareto set ({objectives}), "
        "pale = dominated",
        fontsize=11,
    )
    fig.tight_layout()
    save_png(fig, path)
