"""``nmp measure host``: measure this machine's CPU and caches, write a host preset, and with
``--check`` set real lookups beside the model configured from it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from nmp.cliargs import json_text
from nmp.errors import NmpError

# The `nmp measure` command: nmp.cli reads this literal without importing the module
# (name, place in `nmp --help`, one-line help; nmp.cli.command_table).
NMP_COMMAND = {
    "name": "measure",
    "order": 10,
    "help": "measure this host's CPU (caches, latency, bandwidth) and check the model on it",
}


def _measure(args: argparse.Namespace) -> int:
    if args.target != "host":
        raise NmpError(f"nmp measure: unknown target '{args.target}' (known: host)")
    if args.max_mib is not None and args.max_mib < 1:
        raise NmpError("--max-mib: must be >= 1")
    if args.max_rows < 1:
        raise NmpError("--max-rows: must be >= 1")
    from nmp.measure.check import parse_batches

    batches = parse_batches(args.batches)
    out = Path(args.out)
    if out.suffix != ".toml":
        raise NmpError(f"--out {out}: a host preset is a .toml file")
    from nmp.fileio import atomic_write_text, check_writable_output

    # a link, a device, a folder, a place that takes no file: refused before minutes of work
    check_writable_output(out)
    _check_memory(args, batches)
    from nmp.measure import host, kernel, sysinfo
    from nmp.report.progress import activity

    kernel.torch_quiet()  # before anything else loads torch: idle OpenMP threads sleep
    report: dict[str, Any] = {}
    with activity("measuring the host", quiet=args.json) as _:
        m = host.measure(
            max_bytes=args.max_mib * 2**20 if args.max_mib else None,
            quick=args.quick,
            on_step=_say(args.json),
            kernel=kernel.table_lookup_ns,
            call=kernel.call_cost,
        )
    atomic_write_text(out, host.preset_toml(m))
    report["measured"] = host.summary(m)
    report["preset"] = str(out)
    if not args.json:
        _print_measured(m, out)
    if m.warnings:
        import warnings

        for text in m.warnings:  # (one line each on stderr, JSON or not)
            warnings.warn(text, stacklevel=1)
    if args.check:
        report["check"] = _check(args, out, batches, sysinfo.usable_cpus())
    if args.json:
        print(json_text(report))
    return 0


# chosen: a lookup of the check's batches holds an int64 index and (per bag) an int64 offset
CHECK_LOOKUP_BYTES = 16


def _check_memory(args, batches: tuple[int, ...]) -> None:
    """Refuse, before minutes of measuring, what cannot fit in memory (nmp.guard), naming the
    flag: the pointer chase's largest working set (--max-mib) and, with --check, the fused
    table (--max-rows) and the batches held (--batches)."""
    import nmp.guard as guard

    terms: dict[str, float] = {}
    if args.max_mib:
        terms["--max-mib"] = args.max_mib * 2**20
    if args.check:
        from nmp.measure.check import POOL_BATCHES, capped_rows
        from nmp.workload.spec import load_workload

        try:
            wl = load_workload(args.workload)
        except NmpError as exc:
            raise NmpError(exc.message, key="--workload") from None
        rows, dim = capped_rows(args.workload, args.seed, args.max_rows)
        terms["--max-rows"] = sum(rows) * dim * 4
        per_sample = sum(wl.table_pooling(t).mean_lookups for t in range(len(wl.tables)))
        # POOL_BATCHES drawn batches per skew and batch size, held through the interleaved
        # rounds; one sample's batches mapped into the fused table at a time (and the
        # model's lines of a batch)
        pools = 2 * sum(batches) * POOL_BATCHES * per_sample * CHECK_LOOKUP_BYTES
        sample = max(batches) * POOL_BATCHES * per_sample
        terms["--batches"] = pools + sample * (2 * CHECK_LOOKUP_BYTES + guard.LINE_BYTES)
    if terms:
        key = max(terms, key=terms.__getitem__)
        detail = ", ".join(f"{k} {guard.format_bytes(v)}" for k, v in terms.items())
        estimate = guard.Estimate(guard.POINT_BASE_BYTES + sum(terms.values()), key, detail)
        guard.check(estimate, args.max_memory)


def _check(args, preset: Path, batches, cpus: int) -> dict[str, Any]:
    import os

    from nmp.measure.check import CheckPlan, run_check
    from nmp.report.progress import bar

    plan = CheckPlan(
        str(preset),
        workload=args.workload,
        batches=batches,
        thread_counts=tuple(sorted({1, cpus})),
        max_rows=args.max_rows,
        seed=args.seed,
    )
    tty = sys.stderr.isatty() and not args.json
    with bar("measure host --check", total=plan.steps(), quiet=not tty) as advance:

        def on_row(row) -> None:
            if not tty and not args.json:
                print(_row_line(row), file=sys.stderr, flush=True)

        rows = run_check(plan, on_row, advance)
    load = os.getloadavg() if hasattr(os, "getloadavg") else (0.0, 0.0, 0.0)
    if not args.json:
        _print_check(rows, plan, load)
    return {
        "workload": args.workload,
        "max_rows": args.max_rows,
        "load_average": list(load),
        "skipped": plan.skipped,
        "rounds": plan.rounds,
        "round_lookups": plan.round_lookups,
        "rows": [r.to_json() for r in rows],
        "rows_within_tolerance": sum(r.within for r in rows),
        "worst_ratio": max((r.ratio for r in rows), key=lambda x: abs(x - 1.0), default=1.0),
        "all_within_tolerance": all(r.within for r in rows),
    }


def _say(quiet: bool):
    def on_step(text: str) -> None:
        if not quiet and not sys.stderr.isatty():
            print(f"measure: {text}", file=sys.stderr, flush=True)

    return on_step


def _row_line(row) -> str:
    return (
        f"{row.kernel:14s} {row.skew:8s} batch {row.batch:4d} threads {row.threads:2d}: "
        f"measured {row.measured / 1e6:8.1f} M/s  model {row.model / 1e6:8.1f} M/s  "
        f"ratio {row.ratio:5.2f}  spread {row.spread:4.2f}  {'pass' if row.within else 'FAIL'}"
    )


def _print_measured(m, out: Path) -> None:
    from rich.markup import escape
    from rich.table import Table

    from nmp.report.console import make_console

    t = Table(title=escape(f"{m.cpu}: host preset written to {out}"))
    t.add_column("key")
    t.add_column("value", justify="right")
    t.add_column("source")
    for k, v in m.host.items():
        if k in ("cpu", "source"):
            continue
        t.add_row(escape(k), escape(str(v)), escape(m.notes.get(k, "")))
    make_console().print(t)


def _print_check(rows, plan, load) -> None:
    from rich.table import Table

    from nmp.report.console import make_console

    t = Table(
        title=f"measured vs model ({plan.workload}, tables capped at {plan.max_rows:,} rows; "
        f"measured: the median of {plan.rounds} interleaved rounds)"
    )
    cols = (
        "kernel",
        "skew",
        "batch",
        "threads",
        "measured M/s",
        "spread",
        "model M/s",
        "model/meas",
        "within 25 %",
    )
    for col in cols:
        t.add_column(col, justify="right")
    t.add_column("model bound")
    for r in rows:
        t.add_row(
            r.kernel,
            r.skew,
            str(r.batch),
            str(r.threads),
            f"{r.measured / 1e6:.1f}",
            f"{r.spread:.2f}",
            f"{r.model / 1e6:.1f}",
            f"[{'green' if r.within else 'red'}]{r.ratio:.2f}[/]",
            "pass" if r.within else "[red]FAIL[/]",
            r.model_bottleneck,
        )
    c = make_console()
    c.print(t)
    for k, why in plan.skipped.items():
        c.print(f"{k}: skipped: {why}", markup=False)
    c.print(f"{sum(r.within for r in rows)} of {len(rows)} rows within +-25 %")
    c.print(f"load average during the check: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "measure",
        help=str(NMP_COMMAND["help"]),
        description="Measure the machine this runs on: cores, caches (sysfs), load latency per "
        "working-set size (a compiled pointer chase), misses in flight and read bandwidth per "
        "thread count; write them as a host preset (docs/host-model.md). --check runs real "
        "embedding lookups on the kit's workload batches and prints them beside the model.",
    )
    p.add_argument("target", help="what to measure: host")
    p.add_argument("--out", default="host-measured.toml", help="the host preset to write (.toml)")
    p.add_argument("--check", action="store_true", help="run real lookups beside the model")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--workload", default="recross-eval", help="workload of the check")
    p.add_argument("--batches", default="8,32,128", help="batch sizes of the check (comma list)")
    p.add_argument(
        "--max-rows",
        type=int,
        default=500_000,
        help="cap every table's rows in the check (the fused table must fit in memory)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the check's batches")
    import nmp.guard as guard

    guard.add_argument(p)
    p.add_argument("--max-mib", type=int, help="largest working set measured (default 4x LLC)")
    p.add_argument("--quick", action="store_true", help="fewer loads per point (noisier)")
    p.set_defaults(func=_measure)
