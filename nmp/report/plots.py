"""PNG plots of a sweep (matplotlib, Agg backend: no display needed).

- ``speedup.png``: speedup over the baseline per design, one bar per workload.
- ``pareto.png``: lookups/s against energy per lookup per workload, Pareto set highlighted.
- ``breakdown.png``: how each design's time and energy split by component.

Adding a plot: a function ``(summary, path) -> None`` decorated with ``@register_plot("x.png")``
(here, or in a module imported by :mod:`nmp.report.files`); every sweep report then draws it
and report.md shows it.

Labels are horizontal bar labels or legends, never text placed among data points, so they do
not overlap however many designs a sweep has.
"""

from __future__ import annotations

import io
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np

from nmp.fileio import atomic_write_bytes
from nmp.registry import Registry

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import (  # noqa: E402
    EngFormatter,
    FuncFormatter,
    LogLocator,
    MaxNLocator,
    NullFormatter,
)

OBJECTIVE_NAMES = {
    "lookups_per_s": "throughput",
    "energy_pj_per_lookup": "energy/lookup",
    "area_mm2": "area",
    "latency_ns": "latency",
}
# name of the PNG -> function(summary, path); a plot registers itself with @register_plot, and
# write_plots draws every registered plot in registration order (the report lists them so).
PLOTS: Registry[Callable[[dict[str, Any], Path], None]] = Registry("plot")


def register_plot(filename: str):
    """Decorator: draw this plot into every sweep report as ``filename``."""
    return PLOTS.register(name=filename)


MAX_BARS = 30  # labels per axis before the plot keeps only the best point of each design
MAX_GROUPS = 6  # workload groups per figure
DPI = 120


def _short(x: float) -> str:
    """1,079 / 466 / 12.3 / 0.0123: readable totals without exponents."""
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def save_png(fig: Figure, path: Path) -> None:
    """Write ``fig`` as a PNG atomically (:func:`nmp.fileio.atomic_write_bytes`)."""
    buf = io.BytesIO()
    try:
        fig.savefig(buf, format="png", dpi=DPI, bbox_inches="tight")
    finally:
        plt.close(fig)
    atomic_write_bytes(path, buf.getvalue())


def _groups(summary: dict[str, Any]) -> list[str]:
    return [g["group"] for g in summary["groups"]][:MAX_GROUPS]


def _bar_entries(rows: list[dict[str, Any]], groups: list[str]) -> tuple[list[str], bool]:
    """Labels to draw: every point label, or one per design (its fastest point) when there
    are too many."""
    labels = list(dict.fromkeys(r["label"] for r in rows if r["group"] in groups))
    if len(labels) <= MAX_BARS:
        return labels, False
    return list(dict.fromkeys(r["design"] for r in rows if r["group"] in groups)), True


def _pick(rows: list[dict[str, Any]], group: str, label: str, per_design: bool) -> Any:
    cands = [
        r
        for r in rows
        if r["group"] == group and (r["design"] if per_design else r["label"]) == label
    ]
    return max(cands, key=lambda r: r["lookups_per_s"]) if cands else None


def _colors(n: int) -> list[Any]:
    cmap = plt.get_cmap("tab10" if n <= 10 else "tab20")
    return [cmap(i % cmap.N) for i in range(n)]


def _stable_pick(names: list[str], n: int) -> dict[str, int]:
    """An index in ``range(n)`` per name, the same in every report: the name's CRC-32 modulo
    ``n`` (it does not depend on which other names a plot has); where two names of one plot
    land on one index, the later (by name) takes the next free one."""
    taken: set[int] = set()
    out = {}
    for name in sorted(names):
        i = zlib.crc32(name.encode()) % n
        while i in taken and len(taken) < n:
            i = (i + 1) % n
        taken.add(i)
        out[name] = i
    return out


def stable_colors(names: list[str]) -> dict[str, Any]:
    """A tab20 colour per name, the same in every report (:func:`_stable_pick`)."""
    cmap = plt.get_cmap("tab20")
    return {name: cmap(i) for name, i in _stable_pick(names, cmap.N).items()}


MARKERS = "os^Dv<>pPX*h"


def stable_markers(names: list[str]) -> dict[str, str]:
    """A marker per name, the same in every report and distinct within a plot (up to 12)."""
    return {name: MARKERS[i] for name, i in _stable_pick(names, len(MARKERS)).items()}


def _log_axis(axis: Any, values: list[float]) -> None:
    """Log-scale ticks that are labelled and do not overlap: 1-2-5 steps over wide ranges,
    about five plain steps over a range under a decade (where 1-2-5 gives one label or
    none)."""
    positive = [v for v in values if v > 0]
    lo, hi = (min(positive), max(positive)) if positive else (1.0, 10.0)
    if hi / lo < 10:
        axis.set_major_locator(MaxNLocator(nbins=5))
    else:
        axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0), numticks=12))
    axis.set_major_formatter(EngFormatter(sep="", places=None))
    axis.set_minor_formatter(NullFormatter())


@register_plot("speedup.png")
def plot_speedup(summary: dict[str, Any], path: Path) -> None:
    rows, groups = summary["rows"], _groups(summary)
    labels, per_design = _bar_entries(rows, groups)
    n_lab, n_grp = len(labels), len(groups)
    height = 0.8 / n_grp
    fig, ax = plt.subplots(figsize=(9, 1.2 + max(2.5, n_lab * (0.22 * n_grp + 0.18))))
    values = []
    group_color = stable_colors(groups)
    for gi, group in enumerate(groups):
        color = group_color[group]
        ys, xs = [], []
        for li, label in enumerate(labels):
            r = _pick(rows, group, label, per_design)
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


@register_plot("pareto.png")
def plot_pareto(summary: dict[str, Any], path: Path) -> None:
    rows, groups = summary["rows"], _groups(summary)
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
        _log_axis(ax.xaxis, [r["lookups_per_s"] for r in grows])
        _log_axis(ax.yaxis, [r["energy_pj_per_lookup"] for r in grows])
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


def _split_panel(
    ax: Any, entries: list[tuple[str, dict[str, float], float]], title: str, unit: str
) -> None:
    comps = list(dict.fromkeys(c for _, split, _ in entries for c in split))
    colors = dict(zip(comps, _colors(len(comps)), strict=True))
    for yi, (_, split, total) in enumerate(entries):
        s = sum(v for v in split.values() if v > 0)
        left = 0.0
        for c in comps:
            share = max(split.get(c, 0.0), 0.0) / s * 100 if s > 0 else 0.0
            ax.barh(yi, share, left=left, color=colors[c], label=c if yi == 0 else None)
            left += share
        if s <= 0:
            ax.text(2, yi, "no breakdown", va="center", fontsize=7, color="gray")
        ax.text(101, yi, f"{_short(total)} {unit}", va="center", fontsize=7)
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
        range(len(picked)), [f"{r['label']} ({_short(r['latency_ns'] / 1e3)} µs)" for r in picked]
    )
    ax.set_title(
        "time per resource, % of the point's latency per batch (µs in brackets)\n"
        "NMP: overlapping bounds, the largest is the bottleneck; GPU: stalls that add up",
        fontsize=9,
    )
    fig.colorbar(image, ax=ax, label="% of latency", fraction=0.04, pad=0.02)


@register_plot("breakdown.png")
def plot_breakdown(summary: dict[str, Any], path: Path) -> None:
    rows = summary["rows"]
    group = summary["groups"][0]["group"]
    others = len(summary["groups"]) - 1
    labels, per_design = _bar_entries(rows, [group])
    picked = [r for r in (_pick(rows, group, lab, per_design) for lab in labels) if r]
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


def write_plots(run_dir: Path, summary: dict[str, Any]) -> list[str]:
    """Draw every registered plot (:data:`PLOTS`) into ``run_dir``; returns the file names."""
    if not summary["rows"]:
        return []
    out = []
    for name, fn in PLOTS.items():
        fn(summary, Path(run_dir) / name)
        out.append(name)
    return out
