"""``nmp validate``'s table on the console and its report file."""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from pathlib import Path
from typing import Any, Literal

from nmp.fileio import atomic_write_text, claim_new_folder
from nmp.validate.claims import load_claims
from nmp.validate.result import CheckResult

STYLE = {
    "agrees": "green",
    "within band": "yellow",
    "disagrees": "red",
    "exceeds bound": "magenta",
    "input": "cyan",
    "error": "bold red",
    "reported": "blue",  # a control shown beside what it controls, not judged (nmp.gpu.compare)
    "not run": "dim",  # a check with nothing to check yet (nmp.validate.real_gpu)
}


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


def counts(results: list[CheckResult], column: str = "verdict") -> dict[str, int]:
    """How many rows have each verdict (``column``: ``verdict_kit_defaults`` for the other)."""
    c = Counter(getattr(r, column) or r.verdict for r in results)
    return {v: c[v] for v in STYLE if c[v]}


def _summary(results: list[CheckResult], column: str = "verdict") -> str:
    return ", ".join(f"{n} {v}" for v, n in counts(results, column).items())


BUILTIN_GROUP = "built-in"


def paper_of(r: CheckResult) -> str:
    """The paper a row belongs to (its id's first part), or the built-in checks."""
    return r.id.split(".")[0] if r.group == "claim" else BUILTIN_GROUP


def counts_per_paper(results: list[CheckResult]) -> dict[str, dict[str, dict[str, int]]]:
    """paper -> {"paper_setup": verdict counts, "kit_defaults": verdict counts}: the whole
    table's counts, every row of every paper (no chosen subset)."""
    by: dict[str, list[CheckResult]] = {}
    for r in results:
        by.setdefault(paper_of(r), []).append(r)
    return {
        p: {"paper_setup": counts(rows), "kit_defaults": counts(rows, "verdict_kit_defaults")}
        for p, rows in by.items()
    }


def print_summary(results: list[CheckResult], console: Any, report: Path, wall_s: float) -> None:
    """One screen: the verdict counts of every paper under both columns, the checks whose
    published figure is above its first-principles bound, the ones that could not run, and
    where the full table is."""
    # rich: loaded on use (start-up time)
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=f"nmp validate: {len(results)} checks in {wall_s:.0f} s")
    for name in ("paper", "checks", "under the paper's setup", "under the kit's defaults"):
        table.add_column(name, justify="right" if name == "checks" else "left")

    def text(c: dict[str, int]) -> str:
        return ", ".join(f"[{STYLE[v]}]{n} {v}[/]" for v, n in c.items())

    for paper, c in counts_per_paper(results).items():
        n = sum(c["paper_setup"].values())
        table.add_row(escape(paper), str(n), text(c["paper_setup"]), text(c["kit_defaults"]))
    table.add_row("all", str(len(results)), text(counts(results)),
                  text(counts(results, "verdict_kit_defaults")))  # fmt: skip
    console.print(table)
    over = [r.id for r in results if r.exceeds_bound and r.verdict_paper_setup != "error"]
    if over:
        console.print(
            f"published above its first-principles bound (paper setup): {escape(', '.join(over))}",
            highlight=False,
        )
    errors = [r.id for r in results if "error" in (r.verdict, r.verdict_kit_defaults)]
    if errors:
        console.print(f"[bold red]could not run[/]: {escape(', '.join(errors))}", highlight=False)
    console.print(
        f"full table, bounds, setups and explanations: {escape(str(report))} (and checks.json "
        "beside it; "
        "--table prints it here)",
        highlight=False,
    )


def _plain(value: Any) -> str:
    return fmt_value(value) if isinstance(value, float) else str(value)


def moved_text(r: CheckResult) -> str:
    """The setup value that moves the paper-setup figure most (else the study sweeping the
    chosen values it rests on), as text."""
    m = r.moved_most_by
    if not m:
        if r.setup_stated and r.sensitivity:
            return f"no setup value; chosen ones swept in {r.sensitivity}"
        return ""
    return f"{m['key']} = {_plain(m['paper_value'])} ({_move_text(m, r.unit)})"


def _move_text(m: dict[str, Any], unit: str) -> str:
    """One attribution move: the value put in and the figure it gives."""
    to = f"at {_plain(m['alternative'])}" if "alternative" in m else "at the kit's default"
    return f"{to}: {fmt_value(m['model_without'], unit)}"


def print_table(results: list[CheckResult], console: Any) -> None:
    # rich: loaded on use (start-up time)
    from rich.markup import escape
    from rich.table import Table

    table = Table(title="nmp validate", show_lines=False)
    columns: tuple[tuple[str, Literal["left", "right"]], ...] = (
        ("check", "left"),
        ("source", "left"),
        ("published", "right"),
        ("paper setup", "right"),
        ("verdict", "left"),
        ("kit defaults", "right"),
        ("verdict", "left"),
        ("bound", "right"),
    )
    for name, just in columns:
        table.add_column(name, justify=just, overflow="fold")
    for r in results:
        source = f"{r.paper} {r.figure}".strip() if r.group == "claim" else r.source
        paper_v = r.verdict_paper_setup or r.verdict
        kit_v = r.verdict_kit_defaults or r.verdict
        table.add_row(
            escape(r.id),
            escape(source),
            escape(fmt_value(r.published, r.unit)),
            fmt_value(r.model_paper_setup, r.unit) if r.setup_stated else "(no setup)",
            f"[{STYLE.get(paper_v, '')}]{paper_v}[/]" if r.setup_stated else "",
            fmt_value(r.model_kit_defaults, r.unit),
            f"[{STYLE.get(kit_v, '')}]{kit_v}[/]",
            fmt_value(r.bound, r.unit) if r.bound is not None else "",
        )
    console.print(table)
    for r in results:
        verdicts = {r.verdict_paper_setup or r.verdict, r.verdict_kit_defaults or r.verdict}
        if verdicts <= {"agrees"}:
            continue
        why = r.explanation or (r.detail.splitlines()[0] if r.detail else "")
        notes = [n for n in (r.bound_note, f"moved most by {moved_text(r)}" if r.moved_most_by
                             else "") if n]  # fmt: skip
        extra = f" ({'; '.join(notes)})" if notes else ""
        if why or extra:
            text = escape(f"{why}{extra}")
            console.print(f"[bold]{escape(r.id)}[/bold] ({r.verdict}): {text}", highlight=False)
    console.print(f"{len(results)} checks under the papers' setups: {_summary(results)}")
    console.print(
        f"{len(results)} checks under the kit's defaults: "
        f"{_summary(results, 'verdict_kit_defaults')}"
    )


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


VERDICT_RULES = (
    "Verdicts (docs/validation-rules.md): *agrees* (a value within the claim's tolerance, "
    "default 10 %, or inside a published range; an ordering that holds by at least its "
    "margin, default 5 %), "
    "*within band* (a value inside the claim's stated band; an ordering that holds by less than "
    "its margin), *exceeds bound* (decided after agreement and band: the model's value is "
    "outside the band and the published figure is above the first-principles bound, computed "
    "from the stated resources with no model run, every chosen resource at its most favourable "
    "value for the figure), *input* (the claimed value is an input of the model, so agreement "
    "would prove nothing), *disagrees*, *error* (the check could not run). Each claim is computed "
    "under the paper's setup (the like-with-like column: `model` and `verdict` in checks.json) "
    "and under the kit's own defaults; a disagreement is explained by the assumption it comes "
    "from, and no model constant is fitted to a published figure."
)


def _setup_lines(setups: dict[str, dict[str, Any]]) -> list[str]:
    lines = ["## The papers' setups", ""]
    for paper, setup in setups.items():
        lines += [f"**{paper}**: {setup['summary']}", ""]
        lines += ["| key | value | source or choice |", "|---|---|---|"]
        for v in setup["values"]:
            origin = f"source: {v['source']}" if "source" in v else f"chosen: {v['chosen']}"
            if "swept" in v:
                origin += f" (swept: {v['swept']})"
            lines.append(
                f"| {_cell(v['key'])} | {_cell(fmt_value(v['value']))} | {_cell(origin)} |"
            )
        lines.append("")
    return lines


def report_markdown(
    results: list[CheckResult], *, quick: bool, setups: dict[str, dict[str, Any]] | None = None
) -> str:
    now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    lines = [
        "# nmp validate",
        "",
        f"{now}; {'quick set (claims marked quick)' if quick else 'every check and claim'}. "
        f"Under the papers' setups: {_summary(results)}. Under the kit's defaults: "
        f"{_summary(results, 'verdict_kit_defaults')}.",
        "",
        VERDICT_RULES,
        "",
        "## Counts per paper",
        "",
        "| paper | checks | under the paper's setup | under the kit's defaults |",
        "|---|---|---|---|",
    ]
    for paper, c in counts_per_paper(results).items():
        lines.append(
            f"| {paper} | {sum(c['paper_setup'].values())} | "
            + " | ".join(
                ", ".join(f"{n} {v}" for v, n in c[k].items())
                for k in ("paper_setup", "kit_defaults")
            )  # fmt: skip
            + " |"
        )
    lines.append("")
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
                "| check | figure | published | paper setup | verdict | kit defaults | verdict "
                "| first-principles bound | model ceiling | moved most by |",
                "|---|---|---|---|---|---|---|---|---|---|",
            ]
            for r in rows:
                paper = fmt_value(r.model_paper_setup, r.unit) if r.setup_stated else "no setup"
                bound = fmt_value(r.bound, r.unit) if r.bound is not None else ""
                if r.exceeds_bound:
                    bound += " (published exceeds)"
                lines.append(
                    f"| {_cell(r.id)} | {_cell(r.figure)} | "
                    f"{_cell(fmt_value(r.published, r.unit))} | {_cell(paper)} | "
                    f"{r.verdict_paper_setup if r.setup_stated else ''} | "
                    f"{_cell(fmt_value(r.model_kit_defaults, r.unit))} | "
                    f"{r.verdict_kit_defaults} | {_cell(bound)} | "
                    f"{_cell(fmt_value(r.model_ceiling, r.unit))} | {_cell(moved_text(r))} |"
                )
        else:
            lines += ["| check | source | reference | model | verdict |", "|---|---|---|---|---|"]
            for r in rows:
                lines.append(
                    f"| {_cell(r.id)} | {_cell(r.source)} | {_cell(r.published)} | "
                    f"{_cell(r.model)} | {r.verdict} |"
                )
        lines.append("")
    if setups:
        lines += _setup_lines(setups)
    notes = [r for r in results if r.explanation or r.detail or r.source]
    if notes:
        lines += ["## Sources, setups and explanations", ""]
        for r in notes:
            parts = [f"- **{r.id}**"]
            if r.group == "claim":
                parts.append(f"{r.claim}. source: {r.source}.")
            if r.detail:
                label = "paper setup" if r.setup_stated else "setup"
                parts.append(f"{label}: {r.detail.strip()}.")
            if r.group == "claim" and r.setup_stated and r.detail_kit_defaults:
                parts.append(f"kit defaults: {r.detail_kit_defaults.strip()}.")
            if r.bound_note:
                parts.append(f"{r.bound_note}: {r.bound_detail.strip()}.")
            if r.setup_moves:
                moves = "; ".join(f"{m['key']} {_move_text(m, r.unit)}" for m in r.setup_moves)
                parts.append(f"setup values that move it: {moves}.")
            if r.sensitivity:
                parts.append(f"chosen values swept in {r.sensitivity}.")
            if r.input:
                parts.append(f"an input of the model: {r.input}.")
            if r.explanation:
                parts.append(f"why the model differs: {r.explanation}")
            lines.append(" ".join(parts))
        lines.append("")
    return "\n".join(lines)


def paper_setups(results: list[CheckResult]) -> dict[str, dict[str, Any]]:
    """The setups (as JSON) of the papers whose claims are in ``results``."""
    papers = {r.id.split(".")[0] for r in results if r.group == "claim" and r.setup_stated}
    out: dict[str, dict[str, Any]] = {}
    for claim in load_claims():
        if claim.paper in papers and claim.setup is not None:
            out.setdefault(claim.paper, claim.setup.to_json())
    return dict(sorted(out.items()))


def write_report(results: list[CheckResult], out: Path, *, quick: bool) -> Path:
    """``<out>/validate-<UTC time>/report.md`` and ``checks.json``; the folder is new."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    run_dir = claim_new_folder(out, f"validate-{stamp}")  # two runs in one second: two folders
    setups = paper_setups(results)
    atomic_write_text(run_dir / "report.md", report_markdown(results, quick=quick, setups=setups))
    doc = {"quick": quick, "checks": [r.to_json() for r in results], "setups": setups}
    atomic_write_text(run_dir / "checks.json", json.dumps(doc, indent=2) + "\n")
    return run_dir
