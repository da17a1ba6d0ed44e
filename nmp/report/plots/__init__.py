"""PNG plots of a sweep (matplotlib, Agg backend: no display needed), one module each:
:mod:`.speedup` (``speedup.png``), :mod:`.pareto` (``pareto.png``), :mod:`.breakdown`
(``breakdown.png``); what they share is in :mod:`.common`.

Adding a plot: a module in this package with a function ``(summary, path) -> None`` decorated
with ``@register_plot("x.png")`` (found by that line); every sweep report then draws it and
report.md shows it, in the order of ``rank`` (then file name).

Labels are horizontal bar labels or legends, never text placed among data points, so they do
not overlap however many designs a sweep has.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from nmp.registry import Registry
from nmp.report.plots.common import log_axis, plt, save_png, stable_colors, stable_markers

PlotFn = Callable[[dict[str, Any], Path], None]
# name of the PNG -> function(summary, path), in the order the report shows them
PLOTS: Registry[PlotFn] = Registry(
    "plot",
    package="nmp.report.plots",
    marker=r"^@register_plot\(",
    order=lambda fn: (getattr(fn, "report_rank", 100), fn.__module__),
)


def register_plot(filename: str, *, rank: int = 100) -> Callable[[PlotFn], PlotFn]:
    """Decorator: draw this plot into every sweep report as ``filename``; ``rank`` orders the
    report's plots (lower first)."""

    def add(fn: PlotFn) -> PlotFn:
        fn.report_rank = rank  # type: ignore[attr-defined]  # read by PLOTS' order
        return PLOTS.register(fn, name=filename)

    return add


def write_plots(run_dir: Path, summary: dict[str, Any]) -> list[str]:
    """Draw every registered plot (:data:`PLOTS`) into ``run_dir``; returns the file names."""
    if not summary["rows"]:
        return []
    out = []
    for name, fn in PLOTS.items():
        fn(summary, Path(run_dir) / name)
        out.append(name)
    return out


__all__ = [
    "PLOTS",
    "log_axis",
    "plt",
    "register_plot",
    "save_png",
    "stable_colors",
    "stable_markers",
    "write_plots",
]
