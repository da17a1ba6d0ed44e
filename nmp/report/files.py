"""Report files of a sweep run: ``report.md``, ``results.csv`` and the PNG plots.

Input is the summary dict built by ``nmp.evaluate.analysis`` (plain data: this package does not
import the evaluator). Every file is written atomically by :mod:`nmp.fileio` (temporary name,
then ``os.replace``; the umask's mode).
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from nmp.fileio import atomic_write_text, open_regular
from nmp.report.format import fmt_num, fmt_ratio, fmt_time_ns
from nmp.report.locality import locality_markdown

CSV_METRICS = (
    "latency_ns",
    "lookups_per_s",
    "energy_pj_per_lookup",
    "area_mm2",
    "speedup",
    "energy_saving",
)
MAX_MD_ROWS = 60


def axis_columns(rows: list[dict[str, Any]]) -> list[str]:
    return list(dict.fromkeys(k for row in rows for k in row["axes"]))


def results_csv(summary: dict[str, Any]) -> str:
    rows = summary["rows"]
    axes = axis_columns(rows)
    head = ["key", "index", "group", "design", "arch", "workload", "memory", *axes]
    head += [*CSV_METRICS, "bottleneck", "pareto", "is_baseline"]
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(head)
    for r in rows:
        line = [r["key"], r["index"], r["group"], r["design"], r["arch"], r["workload"]]
        line += [r["memory"], *(r["axes"].get(a, "") for a in axes)]
        line += ["" if r[m] is None else repr(float(r[m])) for m in CSV_METRICS]
        line += [r["bottleneck"], int(r["pareto"]), int(r["is_baseline"])]
        writer.writerow(line)
    return buf.getvalue()


def _md_table(header: list[str], lines: list[list[str]]) -> list[str]:
    def esc(cell: str) -> str:
        return str(cell).replace("|", "\\|")

    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(esc(c) for c in line) + " |" for line in lines]
    return out


def _point_cells(r: dict[str, Any]) -> list[str]:
    marks = ("P" if r["pareto"] else "") + ("B" if r["is_baseline"] else "")
    return [
        r["label"],
        fmt_num(r["lookups_per_s"]),
        fmt_ratio(r["speedup"]),
        fmt_num(r["energy_pj_per_lookup"]),
        fmt_ratio(r["energy_saving"]),
        fmt_num(r["area_mm2"]),
        fmt_time_ns(r["latency_ns"]),
        r["bottleneck"],
        marks,
    ]


POINT_HEADER = [
    "design",
    "lookups/s",
    "speedup",
    "energy (pJ/lookup)",
    "energy saving",
    "area (mm²)",
    "latency per batch",
    "dominant bottleneck",
    "",
]


TERMS = (
    "Terms of the time breakdown (results.csv, breakdown.png): each NMP resource (channel, "
    "rank, bank group, bank, act_window...) is a *bound*, the time that resource alone needs "
    "for the batch; they overlap, and the largest is the bottleneck. *tail* is the time after "
    "the bottleneck's bound: the last partial sums climbing the reduction tree to the host "
    "(per level: one row transfer plus the CAS latency), which no unit can overlap. "
    "A GPU's parts are stalls that add up to its latency; its *tail* is the makespan beyond "
    "perfect packing of thread blocks onto the SMs (the last wave: with few blocks, the "
    "slowest block sets the time)."
)
WHY = (
    "Why (under each workload): each design's rank on the first objective, the resource that "
    "binds its batch time (its share of that time, and the next one), a flag where most of "
    "the time is tail (outside the design's regime: the batch is too small for it), the "
    "assumption its preset declares that moves it most, re-run with the `--set` shown "
    "(whatif.jsonl), and what its area counts."
)


def _executor(desc: dict[str, Any]) -> str:
    name = desc.get("executor", "?")
    rest = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in desc.items() if k != "executor")
    return f"{name} ({rest})" if rest else name


def _sampling(summary: dict[str, Any]) -> list[str]:
    """A sampled sweep's line: which sampler drew how many of its grid's points."""
    drawn = summary.get("sampling")
    if not drawn:
        return []
    return [
        f"- sampling: `{drawn['sampler']}`, samples = {drawn['samples']} of the grid's points "
        f"(all where it holds fewer), seed {drawn['seed']}, and the baseline point of each drawn "
        "workload and axis values"
    ]


def report_markdown(summary: dict[str, Any], plots: list[str]) -> str:
    rows = summary["rows"]
    by_key = {r["key"]: r for r in rows}
    objectives = ", ".join(
        f"{k} ({'higher' if v == 'max' else 'lower'} is better)"
        for k, v in summary["objectives"].items()
    )
    out = [f"# Sweep `{summary['sweep']}`", ""]
    if summary.get("description"):
        out += [summary["description"], ""]
    env = summary.get("environment") or {}
    git = env.get("git") or {}
    out += [
        f"- points: {summary['completed']} of {summary['points']} completed "
        f"({summary['ran']} run now, {summary['reused']} from an earlier session), "
        f"{len(summary['failed'])} failed",
        *_sampling(summary),
        f"- baseline: `{summary['baseline']}` (speedup = lookups/s over the baseline's; energy "
        "saving = the baseline's energy per lookup over the point's, on the same workload)",
        f"- objectives of the Pareto sets: {objectives}",
        f"- executor: {_executor(summary['executor'])}; wall time of the last session "
        f"{summary['wall_s']:.1f} s",
    ]
    if env:
        commit = git.get("commit", "unknown")[:12] + (" (dirty)" if git.get("dirty") else "")
        out.append(f"- nmp {env.get('nmp')} at commit {commit}, host {env.get('host')}")
    for warning in summary.get("warnings", []):  # nmp.evaluate.analysis.memory_warnings
        out += ["", f"> **Warning:** {warning}"]
    out += [
        "",
        "Marks: P = on the Pareto set of its workload, B = baseline. The dominant bottleneck is "
        "the model's own verdict, else the largest part of the point's time breakdown.",
        "",
        TERMS,
        "",
        WHY,
        "",
        "## Best points",
        "",
    ]
    best_lines = []
    for g in summary["groups"]:
        for metric, key in g["best"].items():
            r = by_key[key]
            best_lines.append([g["group"], metric, r["label"], fmt_num(r[metric])])
    out += _md_table(["workload", "best by", "design", "value"], best_lines)
    for g in summary["groups"]:
        grows = [r for r in rows if r["group"] == g["group"]]
        out += ["", f"## {g['group']}", ""]
        pareto = [by_key[k] for k in g["pareto"]]
        pareto.sort(key=lambda r: -r["lookups_per_s"])
        out += [f"Pareto set ({len(pareto)} of {len(grows)} points):", ""]
        out += _md_table(POINT_HEADER, [_point_cells(r) for r in pareto])
        if g.get("why"):  # nmp.evaluate.explain
            out += ["", "Why each design stands where it does:", ""]
            out += [f"- {line}" for line in g["why"]]
        if len(grows) <= MAX_MD_ROWS:
            out += ["", "All points:", ""]
            out += _md_table(POINT_HEADER, [_point_cells(r) for r in grows])
        else:
            out += ["", f"{len(grows)} points: see results.csv for all of them."]
    if summary.get("locality"):  # nmp.evaluate.locality.locality_summary
        out += ["", *locality_markdown(summary["locality"])]
    if summary["failed"]:
        out += ["", "## Failed points", ""]
        out += _md_table(
            ["key", "point", "error"],
            [[f["key"], f["point"], f["error"]] for f in summary["failed"]],
        )
    if plots:
        out += ["", "## Plots", ""]
        out += [f"![{Path(p).stem}]({p})" for p in plots]
    return "\n".join(out) + "\n"


def write_report_files(
    run_dir: str | Path, summary: dict[str, Any], *, quiet: bool = False
) -> list[str]:
    """Write report.md, results.csv and the plots into ``run_dir``; returns their names."""
    # matplotlib: loaded on use (start-up time)
    from nmp.report.plots import write_plots
    from nmp.report.progress import activity

    with activity("writing report.md, results.csv and the plots", quiet=quiet):
        return _write_report_files(Path(run_dir), summary, write_plots)


def _write_report_files(run_dir: Path, summary: dict[str, Any], write_plots: Any) -> list[str]:
    env_path = run_dir / "environment.json"
    if "environment" not in summary and env_path.exists():
        # read as nmp.evaluate.store.read_sessions reads it (a regular file, no link followed,
        # no blocking on a pipe); a list of sessions the report cannot use is left out
        with open_regular(env_path, follow_links=False) as fh:
            try:
                data = json.loads(fh.read())
            except ValueError:
                data = None
        sessions = data.get("sessions") if isinstance(data, dict) else None
        if isinstance(sessions, list) and sessions and isinstance(sessions[-1], dict):
            summary = {**summary, "environment": sessions[-1]}
    atomic_write_text(run_dir / "results.csv", results_csv(summary))
    plots = write_plots(run_dir, summary)
    atomic_write_text(run_dir / "report.md", report_markdown(summary, plots))
    return ["report.md", "results.csv", *plots]
