"""Tornado plot of a sensitivity study: which assumptions move a ratio, and how far.

Each assumption is one horizontal bar spanning the ratio at its low and at its high value
(ReCross / TRiM-G throughput in ``papers/sensitivity-recross-trim``), drawn from the nominal
ratio; bars are sorted by their span, widest on top, so the assumptions that decide the result
read first. A vertical line at 1.0 marks where the ordering of the two designs flips: a bar that
crosses it is an assumption the ordering depends on.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)

from nmp.report.plots import save_png  # noqa: E402  (PNG through a temporary name and a rename)

LOW_COLOR = "#4c72b0"  # the assumption at its low value
HIGH_COLOR = "#dd8452"  # ... at its high value


def tornado_order(bars: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Bars sorted by span |high - low|, widest first (the top of the plot)."""
    return sorted(bars, key=lambda b: -abs(b["ratio_high"] - b["ratio_low"]))


def plot_tornado(
    bars: list[dict[str, Any]],
    nominal: float,
    path: str | Path,
    *,
    title: str,
    xlabel: str,
) -> None:
    """Write the tornado of ``bars`` (dicts with ``label``, ``low_label``, ``high_label``,
    ``ratio_low``, ``ratio_high``) around ``nominal`` to ``path`` (PNG, written atomically)."""
    ordered = tornado_order(bars)
    fig, ax = plt.subplots(figsize=(9.0, 0.55 * max(len(ordered), 2) + 1.6))
    try:
        for y, bar in enumerate(reversed(ordered)):
            ends = [
                (bar["ratio_low"], LOW_COLOR, f"{bar['low_label']}: {bar['ratio_low']:.2f}"),
                (bar["ratio_high"], HIGH_COLOR, f"{bar['high_label']}: {bar['ratio_high']:.2f}"),
            ]
            # The longer bar first, so that the shorter one stays visible on top of it.
            for value, color, _ in sorted(ends, key=lambda e: -abs(e[0] - nominal)):
                ax.barh(y, value - nominal, left=nominal, color=color, height=0.6)
            # One label per side, at that side's far end (two ends on one side share it).
            for side, pick in (("left", min), ("right", max)):
                mine = [e for e in ends if (e[0] < nominal) == (side == "left")]
                if mine:
                    ax.annotate(
                        " " + " | ".join(e[2] for e in mine) + " ",
                        (pick(e[0] for e in mine), y),
                        ha="right" if side == "left" else "left",
                        va="center",
                        fontsize=7,
                        annotation_clip=False,
                    )
        ax.set_yticks(range(len(ordered)), [b["label"] for b in reversed(ordered)], fontsize=8)
        ax.axvline(nominal, color="black", linewidth=1.0)
        ax.axvline(1.0, color="red", linestyle="--", linewidth=1.0)
        values = [nominal, 1.0] + [b[k] for b in ordered for k in ("ratio_low", "ratio_high")]
        lo, hi = min(values), max(values)
        pad = 0.25 * (hi - lo or 1.0)
        ax.set_xlim(lo - pad, hi + pad)
        ax.set_xlabel(xlabel)
        ax.set_title(title, fontsize=10)
        handles = [
            plt.Rectangle((0, 0), 1, 1, color=LOW_COLOR),
            plt.Rectangle((0, 0), 1, 1, color=HIGH_COLOR),
            plt.Line2D([], [], color="black"),
            plt.Line2D([], [], color="red", linestyle="--"),
        ]
        ax.legend(
            handles,
            ["low value", "high value", f"nominal {nominal:.2f}", "1.0: the ordering flips"],
            fontsize=7,
            loc="lower right",
        )
        save_png(fig, Path(path))
    finally:
        plt.close(fig)
