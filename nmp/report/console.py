"""Rich console output shared by the commands."""

from __future__ import annotations

import os
import sys
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import Progress, TextColumn
from rich.table import Table

from nmp.report.format import fmt_num, fmt_ratio, fmt_time_ns
from nmp.report.progress import bar_columns, heartbeat


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.4g}" if abs(value) < 1e6 else f"{value:,.0f}"
    return str(value)


def _flatten(prefix: str, value: Any) -> list[tuple[str, Any]]:
    """Nested breakdown dicts as dotted rows (``levels.rank.dram_ns``); short lists inline."""
    if isinstance(value, dict):
        rows: list[tuple[str, Any]] = []
        for key, sub in value.items():
            rows.extend(_flatten(f"{prefix}.{key}" if prefix else str(key), sub))
        return rows
    return [(prefix, value)]


HEADLINE = (
    ("latency_ns", "latency per batch", "time"),
    ("lookups_per_s", "lookups/s", "num"),
    ("energy_pj_per_lookup", "energy (pJ/lookup)", "num"),
    ("area_mm2", "area (mm²)", "num"),
)


def print_point(
    data: dict[str, Any],
    console: Console | None = None,
    *,
    bottleneck: str = "",
    time_split_ns: dict[str, float] | None = None,
    breakdown: bool = False,
) -> None:
    """A design point: its headline metrics, what bounds it (``bottleneck`` and the three
    largest parts of ``time_split_ns``, as the sweep report has them:
    :func:`nmp.evaluate.analysis.dominant_bottleneck` and ``time_components``), and with
    ``breakdown`` every breakdown entry (flattened to dotted keys; ``--json`` has them all
    too)."""
    console = console or make_console()
    console.print(escape(f"{data.get('arch')} on {data.get('workload')} ({data.get('memory')})"))
    table = Table()
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, name, kind in HEADLINE:
        if key in data:
            value = data[key]
            table.add_row(name, fmt_time_ns(value) if kind == "time" else fmt_num(value))
    bd = data.get("breakdown") or {}
    if bottleneck:
        table.add_row("bottleneck", escape(bottleneck))
    # a GPU's parts are stalls that add up to its latency; an NMP design's, overlapping bounds
    part = "stall" if "stall_ns" in bd else "bound"
    for k, v in sorted((time_split_ns or {}).items(), key=lambda kv: -kv[1])[:3]:
        table.add_row(f"  {part}: {escape(k)}", fmt_time_ns(v))
    if isinstance(bd.get("tail_ns"), int | float):
        table.add_row("  tail (reduction tree after the bound)", fmt_time_ns(bd["tail_ns"]))
    console.print(table)
    if not breakdown:
        n = len(_flatten("", bd))
        if n:
            console.print(f"({n} breakdown entries: --breakdown prints them, --json has them)")
        return
    if bd:
        bt = Table(title="breakdown", title_justify="left")
        bt.add_column("item")
        bt.add_column("value", justify="right", overflow="fold")
        for key, value in _flatten("", bd):
            bt.add_row(escape(key), escape(_fmt(value)))
        console.print(bt)


class _Console(Console):
    def on_broken_pipe(self) -> None:
        """A reader that left (``nmp models | head -2``): what ``nmp``'s other output does,
        the end of the command with status 0 (rich's own exits with 1)."""
        self.quiet = True
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        raise BrokenPipeError


def make_console(*, stderr: bool = False) -> Console:
    """A console for command output: on a terminal its width; piped or redirected, wide
    enough (200 columns) that tables are not wrapped at 80 nor names split mid-word."""
    console = _Console(stderr=stderr)
    if not console.is_terminal:
        console = _Console(stderr=stderr, width=200)
    return console


# ---------------------------------------------------------------------------------------------
# sweeps


class ConsoleProgress:
    """Progress of a sweep: a rich bar on a terminal, plain lines otherwise (logs, CI, pipes).

    Plain mode prints every point of a small sweep and about 50 lines for a large one, plus
    every failure.
    """

    def __init__(self, console: Console | None = None, *, quiet: bool = False) -> None:
        self.console = console or Console()
        self.live = self.console.is_terminal and not quiet
        self.quiet = quiet  # --json: no bar, no per-point lines; failures still printed
        self._bar: Any = None
        self._task: Any = None
        self._beat: Any = None
        self.total = 0
        self.count = 0
        self.failed = 0
        self.name = "sweep"

    def stage(self, name: str, message: str) -> None:
        """A new stage of counted points (the report's what-if runs after the sweep's)."""
        self.name = name
        if not self.quiet:
            self.console.print(message, markup=False, highlight=False)

    def start(self, total: int, done: int) -> None:
        self.total, self.count = total, done
        if not self.live and not self.quiet:
            # a point can run for minutes: say so every few seconds between the point lines
            self._beat = heartbeat(self.name, self._status)
            self._beat.__enter__()
        if done and not self.quiet:
            what = "points" if self.name == "sweep" else f"{self.name} points"
            self.console.print(
                f"resuming: {done} of {total} {what} already done", markup=False, highlight=False
            )
        if self.live:
            self._bar = Progress(
                TextColumn(f"[bold]{escape(self.name)}"),
                *bar_columns(),
                TextColumn("{task.description}"),
                console=self.console,
                transient=False,
            )
            self._bar.start()
            self._task = self._bar.add_task("", total=total, completed=done)

    def point(self, label: str, ok: bool, detail: str) -> None:
        self.count += 1
        self.failed += not ok
        if self._bar is not None:
            self._bar.update(self._task, advance=1, description=escape(label[:50]))
            if not ok:
                self._bar.console.print(f"[red]failed[/red] {escape(label)}: {escape(detail)}")
            return
        if self.quiet and ok:
            return
        every = 1 if self.total <= 100 else max(1, self.total // 50)
        if not ok or self.count % every == 0 or self.count == self.total:
            status = "ok" if ok else "FAILED"
            width = len(str(self.total))
            self.console.print(
                f"[{self.count:>{width}}/{self.total}] {status} {label}: {detail}",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )

    def _status(self) -> str:
        return f"{self.count} of {self.total} points done"

    def finish(self) -> None:
        if self._beat is not None:
            self._beat.__exit__(None, None, None)
            self._beat = None
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


def _ratio(value: float | None) -> str:
    return fmt_ratio(value)


def print_sweep_summary(
    summary: dict[str, Any], console: Console | None = None, *, max_rows: int = 12
) -> None:
    """The best points of each workload, then its Pareto set (capped at ``max_rows``)."""
    console = console or Console()
    rows = summary["rows"]
    by_key = {r["key"]: r for r in rows}
    console.print(
        f"[bold]{escape(summary['sweep'])}[/bold]: "
        f"{summary['completed']}/{summary['points']} points "
        f"({summary['ran']} run, {summary['reused']} reused, {len(summary['failed'])} failed) "
        f"in {summary['wall_s']:.1f} s; baseline [bold]{escape(str(summary['baseline']))}[/bold]"
    )
    for warning in summary.get("warnings", []):  # nmp.evaluate.analysis.memory_warnings
        console.print(f"[yellow]warning:[/yellow] {escape(warning)}")
    if summary["groups"]:
        best = Table(title="Best points", title_justify="left")
        best.add_column("workload")
        for metric in summary["objectives"]:
            best.add_column(f"best {metric}")
        for g in summary["groups"]:
            cells = []
            for metric, key in g["best"].items():
                r = by_key[key]
                extra = ""
                if metric == "lookups_per_s":
                    extra = f" ({_ratio(r['speedup'])})"
                elif metric == "energy_pj_per_lookup":
                    extra = f" ({_ratio(r['energy_saving'])} saving)"
                cells.append(escape(f"{r['label']}: {fmt_num(r[metric])}{extra}"))
            best.add_row(escape(g["group"]), *cells)
        console.print(best)
    for g in summary["groups"]:
        front = sorted((by_key[k] for k in g["pareto"]), key=lambda r: -r["lookups_per_s"])
        table = Table(
            title=escape(f"Pareto set: {g['group']} ({len(front)} of {g['points']} points)"),
            title_justify="left",
        )
        for col, justify in (
            ("design", "left"),
            ("lookups/s", "right"),
            ("speedup", "right"),
            ("pJ/lookup", "right"),
            ("energy saving", "right"),
            ("area mm²", "right"),
            ("bottleneck", "left"),
        ):
            table.add_column(col, justify=justify)  # type: ignore[arg-type]
        for r in front[:max_rows]:
            table.add_row(
                escape(r["label"]),
                fmt_num(r["lookups_per_s"]),
                _ratio(r["speedup"]),
                fmt_num(r["energy_pj_per_lookup"]),
                _ratio(r["energy_saving"]),
                fmt_num(r["area_mm2"]),
                escape(r["bottleneck"]),
            )
        if len(front) > max_rows:
            table.caption = f"... {len(front) - max_rows} more in report.md / results.csv"
        console.print(table)
    for g in summary["groups"]:
        if g.get("why"):  # nmp.evaluate.explain
            console.print(f"[bold]Why, on {escape(g['group'])}:[/bold]")
            for line in g["why"]:
                console.print(f"  - {line.replace('**', '').replace('`', '')}", markup=False)
    for f in summary["failed"]:
        console.print(
            f"[red]failed[/red] {escape(f['point'])} ({escape(str(f['key']))}): "
            f"{escape(f['error'])}"
        )
    files = summary.get("files") or []
    if files:
        console.print(f"report: {os.path.dirname(files[0])}/report.md", markup=False)
