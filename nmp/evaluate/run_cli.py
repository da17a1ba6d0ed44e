"""``nmp run``: one design point, as a rich summary or one JSON object."""

from __future__ import annotations

import argparse

import nmp.guard as guard
from nmp.cliargs import json_text
from nmp.config import parse_set_args
from nmp.guard import add_argument

# The `nmp run` command: nmp.cli reads this literal without importing the module
# (name, place in `nmp --help`, one-line help; nmp.cli.command_table).
NMP_COMMAND = {
    "name": "run",
    "order": 3,
    "help": "evaluate one design point (architecture x workload x memory)",
}


def _run(args: argparse.Namespace) -> int:
    # numpy, numba: loaded when the command runs, not for `nmp --help`
    from nmp.evaluate.budget import point_estimate
    from nmp.evaluate.point import run_point
    from nmp.memory.driver import on_replay
    from nmp.report.progress import first_use_status

    overrides = parse_set_args(args.set)
    # refuse a point that cannot fit before it allocates
    guard.check(point_estimate(args.arch, args.workload, args.memory, overrides), args.max_memory)
    with first_use_status(quiet=args.json, replays=on_replay):
        result = run_point(args.arch, args.workload, args.memory, overrides, seed=args.seed)
    data = result.to_json()
    if args.json:
        print(json_text(data))
        return 0
    # numpy, rich: loaded on use (start-up time)
    from nmp.design import family_of
    from nmp.evaluate.analysis import dominant_bottleneck, memory_system, time_components
    from nmp.report.console import print_point

    bd = data.get("breakdown") or {}
    print_point(
        data,
        bottleneck=dominant_bottleneck(bd),
        time_split_ns=time_components(bd),
        breakdown=args.breakdown,
    )
    # a design used where the model says most of its time is tail (a GPU at a small batch)
    from nmp.evaluate.explain import regime_flags
    from nmp.workload import load_workload

    batch = overrides.get("workload.batch")
    if not isinstance(batch, int):
        batch = load_workload(args.workload).batch
    for flag in regime_flags(data, batch):
        print(f"note: {flag}")
    # Presets sit on different memories (RecNMP on 4 DDR4 channels): say which one this ran on.
    mem = memory_system(args.arch, args.memory, overrides)
    if mem:
        print(f"memory: {mem} (compare designs on one memory: --memory, --set arch.memory.*)")
    else:  # a family whose memory is part of its preset (a GPU's HBM)
        print(f"memory: its own, part of the {family_of(args.arch).label} preset")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "run",
        help=str(NMP_COMMAND["help"]),
        description="Run one workload on one architecture (NMP design or GPU) and report its "
        "latency, throughput, energy and area.",
    )
    p.add_argument(
        "--arch",
        required=True,
        help="design preset: an architecture or a GPU (nmp models lists each family's presets)",
    )
    p.add_argument("--workload", required=True, help="workload preset (nmp models --kind workload)")
    p.add_argument("--memory", help="memory preset overriding the architecture's own")
    p.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override a spec field by dotted path, e.g. arch.bank.units=8 (repeatable)",
    )
    p.add_argument("--seed", type=int, help="seed for the generated lookups (default: workload's)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--breakdown", action="store_true", help="print the full breakdown table")

    add_argument(p)  # --max-memory
    p.set_defaults(func=_run)
