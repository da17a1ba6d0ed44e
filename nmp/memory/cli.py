"""``nmp replay``: replay a memory trace on a modeled DRAM system."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import nmp.guard as guard
from nmp.cliargs import json_text
from nmp.config import parse_set_args
from nmp.errors import NmpError
from nmp.guard import add_argument
from nmp.memory import load_memory

# The `nmp replay` command: nmp.cli reads this literal without importing the module
# (name, place in `nmp --help`, one-line help; nmp.cli.command_table).
NMP_COMMAND = {
    "name": "replay",
    "order": 1,
    "help": "replay a memory trace on a modeled DRAM system",
    "one_blas_thread": True,
}


def add_memory_arguments(p: argparse.ArgumentParser) -> None:
    """The flags that pick the memory: ``--memory``, ``--channels``, ``--ranks``, ``--mapping``,
    ``--set`` (a reference case's ``memory_args`` are these too)."""
    p.add_argument(
        "--memory",
        default="ddr4-3200aa",
        help="memory preset (case-insensitive) or a TOML file; see 'nmp models --kind memory'",
    )
    p.add_argument("--channels", type=int, help="number of channels")
    p.add_argument("--ranks", type=int, help="ranks per channel (pseudo channels on HBM)")
    p.add_argument("--mapping", help="address mapping, e.g. RoBaRaCoCh, RoBaRaCoBgCh, RoCoBaRaCh")
    p.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override a preset field, e.g. --set timing.nCL=24 --set controller.row_policy=closed",
    )


def memory_spec(args: argparse.Namespace):
    """The memory spec that :func:`add_memory_arguments`' flags describe."""
    try:
        return load_memory(
            args.memory,
            channels=args.channels,
            ranks=args.ranks,
            mapping=args.mapping,
            overrides=parse_set_args(args.set),
        )
    except NmpError as exc:
        # a count the flag gave is refused under the organization's key: name the flag
        for flag, key in (("channels", "org.channels"), ("ranks", "org.ranks")):
            if exc.key == key and getattr(args, flag) is not None:
                raise type(exc)(exc.message, key=f"--{flag}") from None
        raise


def _blame_source(estimate, args: argparse.Namespace):
    """``estimate`` naming where its large count came from: the flag (--channels) where one was
    given, else the spec's key, at its file where the memory is a file (channels = 2^20 in a
    memory TOML was blamed on --channels)."""
    flags = {"--channels": args.channels, "--ranks": args.ranks}
    if estimate.key not in flags or flags[estimate.key] is not None:
        return estimate
    field = "org." + estimate.key.removeprefix("--")
    from_set = any(s.split("=", 1)[0].strip() == field for s in args.set or [])
    is_file = bool(args.memory) and str(args.memory).endswith(".toml") and not from_set
    return dataclasses.replace(estimate, key=field, file=args.memory if is_file else None)


def _run(args: argparse.Namespace) -> int:
    spec = memory_spec(args)
    try:
        size = Path(args.trace).stat().st_size
    except OSError as exc:
        raise NmpError(f"cannot read the trace: {exc.strerror}", file=args.trace) from None
    estimate = guard.replay_estimate(spec, size, compressed=args.trace.endswith(".gz"))
    guard.check(_blame_source(estimate, args), args.max_memory)
    with _activity(args, f"replaying {args.trace} on {spec.name} ({spec.org.channels} ch)"):
        stats = _replay(args.trace, spec, guard.trace_text_bound(spec, args.max_memory), args)
    if args.json:
        out = stats.to_json()
        out["trace"] = str(args.trace)
        out["avg_read_latency_cycles"] = round(out["avg_read_latency_cycles"], 4)
        print(json_text(out, indent=None))
        return 0
    _print_table(args.trace, spec, stats)
    return 0


def _activity(args: argparse.Namespace, message: str):
    """The progress display; none with ``--json`` (its module not even loaded: 2 M
    instructions of a start; issue 43), loaded when the command runs, not for `nmp --help`."""
    if args.json:
        import contextlib

        return contextlib.nullcontext()
    from nmp.report.progress import activity

    return activity(message)


def _replay(trace: str, spec, max_bytes: int | None, args: argparse.Namespace):
    """The statistics of the trace replayed on ``spec``: a canonical Ramulator text on the C
    engine without numpy (its import was most of a replay's start-up), anything else through
    the driver (numpy; numba where the numba engine runs)."""
    from nmp.errors import TraceError
    from nmp.memory.text_replay import replay_text
    from nmp.memory.trace_file import read_trace_bytes

    data = read_trace_bytes(Path(trace), max_bytes)
    try:
        stats = replay_text(data, spec, drain=not args.no_drain)
        if stats is None:
            from nmp.memory.driver import replay
            from nmp.memory.trace import parse_trace_bytes

            stats = replay(parse_trace_bytes(data, trace), spec, drain=not args.no_drain)
    except TraceError as exc:
        if exc.file is not None:
            raise
        # an address beyond the memory's capacity was found after parsing: name the trace
        raise TraceError(exc.message, file=trace, line=exc.line, key=exc.key) from None
    return stats


def _print_table(trace: str, spec, stats) -> None:
    # rich: loaded on use (start-up time)
    from rich.table import Table

    from nmp.memory.standards import load_standard

    # rich: loaded on use (start-up time)
    from nmp.report.console import make_console

    o = spec.org
    table = Table(
        title=f"{trace} on {spec.name} ({o.channels} ch x {o.ranks} "
        f"{load_standard(spec.standard).rank_level_short}, {spec.mapping})",
        title_justify="left",
    )
    table.add_column("metric")
    table.add_column("value", justify="right")
    c = stats.cmd_counts
    a = stats.at_cycles
    rows = [
        ("requests (reads / writes)", f"{stats.requests} ({stats.reads} / {stats.writes})"),
        ("cycles (last request accepted)", f"{stats.cycles}"),
        ("time", f"{stats.t_ns:,.1f} ns"),
        ("cycles drained (all completed)", f"{stats.cycles_drained}"),
        ("row hits / misses / conflicts", f"{stats.row_hits} / {stats.row_misses} / "
         f"{stats.row_conflicts}"),
        ("  same, at `cycles` (Ramulator)", f"{a['row_hits']} / {a['row_misses']} / "
         f"{a['row_conflicts']}"),
        ("ACT / PRE / RD / WR / REF", f"{c['ACT']} / {c['PRE']} / {c['RD']} / {c['WR']} / "
         f"{c['REF']}"),
        ("avg read latency", f"{stats.avg_read_latency_cycles:.1f} cycles"),
        ("bandwidth", f"{stats.bandwidth_gbps:.2f} GB/s "
         f"({100 * stats.bandwidth_utilization:.1f} % of {spec.peak_bandwidth_gbps:.1f})"),
        ("energy", f"{stats.energy_pj / 1e6:.3f} uJ"),
    ]  # fmt: skip
    for name, value in rows:
        table.add_row(name, value)
    eb = stats.energy_breakdown_pj
    table.add_row(
        "  act / rd / wr / ref / bg / io",
        " / ".join(f"{eb[k] / 1e6:.3f}" for k in ("act", "rd", "wr", "ref", "background", "io"))
        + " uJ",
    )
    make_console().print(table)


def register(sub: argparse._SubParsersAction) -> None:
    from nmp.cliargs import input_file

    p = sub.add_parser(
        "replay",
        help=str(NMP_COMMAND["help"]),
        description=(
            "Replay a Ramulator (LD/ST 0x..) or DRAMsim3 (0x.. READ|WRITE cycle) trace, plain or "
            "gzip, on a DRAM preset with the Ramulator-2-exact engine. 'cycles' is Ramulator 2's: "
            "memory cycles until the last request was accepted."
        ),
    )
    p.add_argument("trace", type=input_file, help="trace file (.gz or plain)")
    add_memory_arguments(p)
    p.add_argument("--no-drain", action="store_true", help="stop when the last request is accepted")

    add_argument(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_run)
