"""``nmp validate``'s table on the console and its report file."""

from __future__ import annotations

import datetime as dt
import json
import os
from collections import Counter
from pathlib import Path
from typing import Any, Literal

from nmp.fileio import atomic_write_text
from nmp.validate.runner import CheckResult

STYLE = {"agrees": "green", "within band": "yellow", "disagrees": "red", "error": "bold red"}


def fmt_value(value: Any, unit: str = "") -> str:
    """A published or model value as text: numbers to 4 significant digits with their unit,
    orderings as holds / does not hold, ranges as lo-hi."""
    if isinstance(value, bool):
        return "holds" if value else "does not hold"
    if isinstance(value, int | float):
        return f"{value:.4g}{(' ' + unit) if unit and unit != 'x' else unit}"
    if isinstance(value, list | tuple) and len(value) == 2:
        return f"{fmt_value(value[0])}-{fmt_value(value[1], unit)}"
    return "" if value is None else str(value)


def counts(results: list[CheckResult]) -> dict[str, int]:
    c = Counter(r.verdict for r in results)
    return {v: c[v] for v in STYLE if c[v]}


def print_table(results: list[CheckResult], console: Any) -> None:
    # rich: loaded on use (start-up time)
    from rich.table import Table

    table = Table(title="nmp validate", show_lines=False)
    columns: tuple[tuple[str, Literal["left", "right"]], ...] = (
        ("check", "left"),
        ("source", "left"),
        ("published", "right"),
        ("model", "right"),
        ("verdict", "left"),
    )
    for name, just in columns:
        table.add_column(name, justify=just, overflow="fold")
    for r in results:
        source = f"{r.paper} {r.figure}".strip() if r.group == "claim" else r.source
        table.add_row(
            r.id,
            source,
            fmt_value(r.published, r.unit),
            fmt_value(r.model, r.unit),
            f"[{STYLE.get(r.verdict, '')}]{r.verdict}[/]",
        )
    console.print(table)
    explained = [r for r in results if r.verdict != "agrees" and (r.explanation or r.detail)]
    for r in explained:
        why = r.explanation or r.detail.splitlines()[0]
        console.print(f"[bold]{r.id}[/bold] ({r.verdict}): {why}", highlight=False)
    summary = ", ".join(f"{n} {v}" for v, n in counts(results).items())
    console.print(f"{len(results)} checks: {summary}")


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def report_markdown(results: list[CheckResult], *, quick: bool) -> str:
    now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    lines = [
        "# nmp validate",
        "",
        f"{now}; {'quick set (claims marked quick)' if quick else 'every check and claim'}. "
        + ", ".join(f"{n} {v}" for v, n in counts(results).items())
        + ".",
        "",
        "Verdicts: *agrees* (an ordering holds, or a value within the claim's tolerance or "
        "published range), *within band* (inside the claim's stated band), *disagrees*, "
        "*error* (the check could not run). A disagreement is explained by the assumption it "
        "comes from; no model constant is fitted to a published figure.",
        "",
    ]
    for group, title in (
        ("simulator", "Simulators"),
        ("functional", "Functional results"),
        ("claim", "Published claims"),
    ):
        rows = [r for r in results if r.group == group]
        if not rows:
            continue
        lines += [f"## {title}", ""]
        if group == "claim":
            lines += [
                "| check | paper | figure | claim | published | model | verdict |",
                "|---|---|---|---|---|---|---|",
            ]
            for r in rows:
                lines.append(
                    f"| {_cell(r.id)} | {_cell(r.paper)} | {_cell(r.figure)} | {_cell(r.claim)} "
                    f"| {_cell(fmt_value(r.published, r.unit))} | "
                    f"{_cell(fmt_value(r.model, r.unit))} | {r.verdict} |"
                )
        else:
            lines += ["| check | source | reference | model | verdict |", "|---|---|---|---|---|"]
            for r in rows:
                lines.append(
                    f"| {_cell(r.id)} | {_cell(r.source)} | {_cell(r.published)} | "
                    f"{_cell(r.model)} | {r.verdict} |"
                )
        lines.append("")
    notes = [r for r in results if r.explanation or r.detail or r.source]
    if notes:
        lines += ["## Sources, setups and explanations", ""]
        for r in notes:
            parts = [f"- **{r.id}**"]
            if r.group == "claim":
                parts.append(f"source: {r.source}.")
            if r.detail:
                parts.append(f"setup: {r.detail.strip()}.")
            if r.explanation:
                parts.append(f"why the model differs: {r.explanation}")
            lines.append(" ".join(parts))
        lines.append("")
    return "\n".join(lines)


def write_report(results: list[CheckResult], out: Path, *, quick: bool) -> Path:
    """``<out>/validate-<UTC time>/report.md`` and ``checks.json``; the folder is new."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    run_dir = Path(out) / f"validate-{stamp}"
    if run_dir.exists():
        run_dir = Path(out) / f"validate-{stamp}-{os.getpid()}"
    run_dir.mkdir(parents=True, exist_ok=False)
    atomic_write_text(run_dir / "report.md", report_markdown(results, quick=quick))
    doc = {"quick": quick, "checks": [r.to_json() for r in results]}
    atomic_write_text(run_dir / "checks.json", json.dumps(doc, indent=2) + "\n")
    return run_dir
