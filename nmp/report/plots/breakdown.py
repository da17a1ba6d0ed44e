"""``breakdown.png``: how each design's time and energy split by component."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from nmp.report.plots import register_plot
from nmp.report.plots.common import (
    Figure,
    bar_entries,
    colors_for,
    pick_row,
    plt,
    save_png,
    short_number,
)


def _split_panel(
    ax: Any, entries: list[tuple[str, dict[str, float], float]], title: str, unit: str
) -> None:
    comps = list(dict.fromkeys(c for _, split, _ in entries for c in split))
    colors = dict(zip(comps, colors_for(len(comps)), strict=True))
    for yi, (_, split, total) in enumerate(entries):
        s = sum(v for v in split.values() if v > 0)
        left = 0.0
        for c in comps:
            share = max(split.get(c, 0.0), 0.0) / s * 100 if s > 0 else 0.0
            ax.barh(yi, share, left=left, color=colors[c], label=c if yi == 0 else None)
            left += share
        if s <= 0:
            ax.text(2, yi, "no breakdown", va="center", fontsize=7, color="gray")
        ax.text(101, yi, f"{short_number(total)} {unit}", va="center", fontsize=7)
    ax.set_yticks(range(len(entries)), [lab for lab, _, _ in entries])
    ax.invert_yaxis()
    ax.set_xlim(0, 118)
    ax.set_xticks([0, 25, 50, 75, 100])
    ax.set_xlabel("share of the total (%)")
    ax.set_title(title, fontsize=10)
    handles = [plt.Rectangle((0, 0), 1, 1, color=colors[c]) for c in comps]
    ax.legend(
        handles, comps, title="component", loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8
    )


def _time_panel(fig: Figure, ax: Any, picked: list[dict[str, Any]]) -> None:
    """Heatmap: each resource's time as a share of the point's latency. Resources of an NMP
    design overlap (each is a bound; the largest is the bottleneck), a GPU's stalls add up."""
    comps = list(dict.fromkeys(c for r in picked for c in r["time_split_ns"]))
    data = np.array(
        [
            [
                r["time_split_ns"].get(c, 0.0) / r["latency_ns"] * 100 if r["latency_ns"] else 0.0
                for c in comps
            ]
            for r in picked
        ]
    ).reshape(len(picked), len(comps))
    keep = [j for j in range(len(comps)) if np.any(data[:, j] >= 0.5)]  # drop ~0 columns
    comps, data = [comps[j] for j in keep], data[:, keep]
    if not comps:
        ax.text(0.5, 0.5, "no time breakdown in these results", ha="center", va="center")
        ax.set_axis_off()
        return
    image = ax.imshow(data, cmap="Blues", vmin=0, vmax=max(100.0, float(data.max())), aspect="auto")
    for (i, j), value in np.ndenumerate(data):
        color = "white" if value > 60 else "black"
        ax.text(j, i, f"{value:.0f}", ha="center", va="center", fontsize=7, color=color)
    ax.set_xticks(range(len(comps)), comps, rotation=35, ha="right", fontsize=8)
    ax.set_yticks(
        range(len(picked)),
        [f"{r['label']} ({short_number(r['latency_ns'] / 1e3)} µs)" for r in picked],
    )
    ax.set_title(
        "time per resource, % of the point's latency per batch (µs in brackets)\n"
        "NMP: overlapping bounds, the largest is the bottleneck; GPU: stalls that add up",
        fontsize=9,
    )
    fig.colorbar(image, ax=ax, label="% of latency", fraction=0.04, pad=0.02)


@register_plot("breakdown.png", rank=2)
def plot_breakdown(summary: dict[str, Any], path: Path) -> None:
    """Where each design's batch time and energy go (the first workload group)."""
    rows = summary["rows"]
    group = summary["groups"][0]["group"]
    others = len(summary["groups"]) - 1
    labels, per_design = bar_entries(rows, [group])
    picked = [r for r in (pick_row(rows, group, lab, per_design) for lab in labels) if r]
    energy_entries = [(r["label"], r["energy_split_pj"], r["energy_pj_per_lookup"]) for r in picked]
    n_comp = len({c for r in picked for c in r["time_split_ns"]})
    height = 0.42 * len(picked) + 1.6
    fig, (ax_t, ax_e) = plt.subplots(
        2,
        1,
        figsize=(max(10, 4 + 0.55 * n_comp), 2 * height + 1.2),
        gridspec_kw={"height_ratios": [height + 0.8, height]},
    )
    _time_panel(fig, ax_t, picked)
    _split_panel(ax_e, energy_entries, "energy by component, % of the total (pJ per lookup)", "pJ")
    scope = (
        f"workload {group} only (the first of {others + 1}; every workload's split is in "
        "results.csv)"
        if others
        else f"workload {group}"
    )
    fig.suptitle(
        f"Where time and energy go: {scope}\n"
        "tail: NMP = the reduction tree's last partial sums after the bottleneck's bound; "
        "GPU = the last wave of thread blocks beyond perfect packing (see report.md)",
        fontsize=10,
    )
    fig.tight_layout()
    save_png(fig, path)
