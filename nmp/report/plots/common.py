"""What the sweep report's plots share: the PNG writer, colours and markers that stay the same
for a design across reports, the groups and bars a plot draws, and log axes with readable ticks.
Each plot is a module of its own beside this one (:mod:`nmp.report.plots`)."""

from __future__ import annotations

import io
import zlib
from pathlib import Path
from typing import Any

import matplotlib

from nmp.fileio import atomic_write_bytes

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import EngFormatter, LogLocator, MaxNLocator, NullFormatter  # noqa: E402

OBJECTIVE_NAMES = {
    "lookups_per_s": "throughput",
    "energy_pj_per_lookup": "energy/lookup",
    "area_mm2": "area",
    "latency_ns": "latency",
}
MAX_BARS = 30  # labels per axis before the plot keeps only the best point of each design
MAX_GROUPS = 6  # workload groups per figure
DPI = 120


def short_number(x: float) -> str:
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


def plotted_groups(summary: dict[str, Any]) -> list[str]:
    return [g["group"] for g in summary["groups"]][:MAX_GROUPS]


def bar_entries(rows: list[dict[str, Any]], groups: list[str]) -> tuple[list[str], bool]:
    """Labels to draw: every point label, or one per design (its fastest point) when there
    are too many."""
    labels = list(dict.fromkeys(r["label"] for r in rows if r["group"] in groups))
    if len(labels) <= MAX_BARS:
        return labels, False
    return list(dict.fromkeys(r["design"] for r in rows if r["group"] in groups)), True


def pick_row(rows: list[dict[str, Any]], group: str, label: str, per_design: bool) -> Any:
    cands = [
        r
        for r in rows
        if r["group"] == group and (r["design"] if per_design else r["label"]) == label
    ]
    return max(cands, key=lambda r: r["lookups_per_s"]) if cands else None


def colors_for(n: int) -> list[Any]:
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


def log_axis(axis: Any, values: list[float]) -> None:
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


__all__ = [
    "DPI",
    "MAX_BARS",
    "MAX_GROUPS",
    "OBJECTIVE_NAMES",
    "Figure",
    "bar_entries",
    "colors_for",
    "log_axis",
    "pick_row",
    "plotted_groups",
    "plt",
    "save_png",
    "short_number",
    "stable_colors",
    "stable_markers",
]
