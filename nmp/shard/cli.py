"""``nmp shard``: place a workload's embedding rows across GPUs and memory tiers, and cost it.

nmp shard --workload criteo-terabyte --sharder recshard [--topology a100x8-pcie4]
          [--set topology.hbm_gib=2 --set topology.gpus=16 --set workload.batch=4096]
          [--profile-batches 8] [--eval-batches 2] [--index-file lookups.npz]
          [--profile-policy held-out|served] [--seeds N] [--json]
nmp shard --workload criteo-terabyte --sharder all      # every sharder, one table
"""

from __future__ import annotations

import argparse

from nmp.cliargs import json_text
from nmp.config import parse_set_args, split_overrides
from nmp.errors import NmpError
from nmp.shard.topology import DEFAULT_TOPOLOGY

# The `nmp shard` command: nmp.cli reads this literal without importing the module
# (name, place in `nmp --help`, one-line help; nmp.cli.command_table).
NMP_COMMAND = {
    "name": "shard",
    "order": 8,
    "help": "place embedding rows across GPUs and HBM/host tiers (RecShard, greedy sharders)",
}


ALL_SHARDERS = "all"  # --sharder all: every registered sharder (not a sharder's name)


def _run(args: argparse.Namespace) -> int:
    # numpy: loaded on use (start-up time)
    from nmp.report.progress import activity
    from nmp.shard.registry import sharder_names

    over = split_overrides(parse_set_args(args.set), ("workload", "topology"))

    names = sharder_names() if args.sharder == ALL_SHARDERS else [args.sharder]
    unknown = [n for n in names if n not in sharder_names()]
    if unknown:  # before the profile (it ran for a minute before the name was looked up)
        known = ", ".join(sharder_names())
        raise NmpError(f"--sharder: unknown sharder '{unknown[0]}' (known: {known}, all)")

    # (--seeds' range, 1 to 100, is refused as it is parsed: nmp.cliargs.INT_FLAG_RANGES)
    if args.seeds > 1 and args.index_file:
        raise NmpError("--seeds: draws generated batches; an --index-file has one profile")

    def shard(name: str, seed: int) -> dict:
        with activity(f"sharding {args.workload} with {name} (seed {seed})", quiet=args.json):
            return _shard_one(args, name, over, seed)

    if args.seeds > 1:
        seeds = range(args.seeds)
        runs = {n: [shard(n, args.seed + i) for i in seeds] for n in names}
        return _print_seeds(args, runs)
    rows = [shard(name, args.seed) for name in names]
    if args.json:
        print(json_text(rows[0] if len(rows) == 1 else rows))
        return 0
    r0 = rows[0]
    print(
        f"nmp shard: {r0['workload']} ({r0['tables_gib']:.2f} GiB of tables) on {r0['topology']}: "
        f"{r0['gpus']} x {r0['gpu']}, {r0['hbm_gib_per_gpu']:g} GiB HBM each for embeddings; "
        f"profile {r0['profile']}; timed on {r0['eval_batches']} "
        f"{'held-out' if r0['held_out'] else 'profiled'} batch(es) (profile policy "
        f"{r0['profile_policy']})"
    )
    head = f"{'sharder':<12}{'step_ms':>10}{'load_bal':>10}{'slow/batch':>12}{'slow%':>8}"
    head += f"{'HBM_GiB':>9}{'solve_s':>9}"
    print(head)
    for r in rows:
        print(
            f"{r['sharder']:<12}{r['step_ms']:>10.4f}{r['load_balance']:>10.2f}"
            f"{r['slow_accesses_per_batch']:>12.0f}{100 * r['slow_access_fraction']:>7.2f}%"
            f"{r['hbm_bytes'] / 2**30:>9.2f}{r['solve_s']:>9.2f}"
        )
    for r in rows:
        if r["solver"]:
            s = r["solver"]
            print(
                f"{r['sharder']} MILP: {s['variables']} variables ({s['binaries']} binary), "
                f"{s['constraints']} constraints, {s['classes']} frequency classes, "
                f"gap {s['mip_gap']:.2%}, {s['status']}"
            )
    if len(rows) == 1:
        print(f"{'gpu':>4}{'t_ms':>10}{'hbm_ms':>10}{'slow_ms':>10}{'slow/batch':>12}  tables")
        for g in r0["per_gpu"]:
            print(
                f"{g['gpu']:>4}{g['t_ms']:>10.4f}{g['hbm_ms']:>10.4f}{g['slow_ms']:>10.4f}"
                f"{g['slow_accesses_per_batch']:>12.0f}  {g['tables']}"
            )
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    from nmp.cliargs import input_file
    from nmp.shard.registry import sharder_names
    from nmp.shard.unseen import DEFAULT_UNSEEN, UNSEEN_ESTIMATORS

    p = sub.add_parser(
        "shard",
        help=str(NMP_COMMAND["help"]),
        description="Profile a workload's tables, place them with a sharder across the GPUs of "
        "a topology (models/topology/) and the HBM / host-memory tiers, and report the modeled "
        "embedding step time, load balance and slow-tier accesses.",
    )
    p.add_argument("--workload", required=True, help="workload preset (nmp models --kind workload)")
    p.add_argument(
        "--topology", default=DEFAULT_TOPOLOGY, help=f"topology preset (default {DEFAULT_TOPOLOGY})"
    )
    p.add_argument(
        "--sharder",
        default="recshard",
        help=f"{', '.join(sharder_names())}, or {ALL_SHARDERS} (default recshard)",
    )
    p.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override workload.* or topology.* by dotted path (repeatable)",
    )
    p.add_argument("--profile-batches", type=int, default=8, help="batches profiled (default 8)")
    p.add_argument("--eval-batches", type=int, default=2, help="held-out batches timed (default 2)")
    p.add_argument(
        "--index-file", type=input_file, help="profile a user's index file (.npz) instead"
    )
    p.add_argument("--seed", type=int, default=0, help="first profile seed (default 0)")
    p.add_argument(
        "--seeds",
        type=int,
        default=1,
        metavar="N",
        help="run at N profile seeds from --seed and report each sharder's median and range "
        "(held out, RecShard's placement is a draw: docs/sharding.md)",
    )
    p.add_argument(
        "--overlap",
        action="store_true",
        help="HBM and host-tier time overlap (max) instead of adding up",
    )
    p.add_argument(
        "--profile-policy",
        choices=("held-out", "served"),  # nmp.shard.run.PROFILE_POLICIES (not loaded at start-up)
        default="held-out",
        help="what the placement is timed on: held-out batches (default) or the profiled "
        "batches it serves (served: RecShard's setting)",
    )
    p.add_argument(
        "--eval-on-profile",
        action="store_true",
        help="the same as --profile-policy served",
    )
    p.add_argument(
        "--unseen",
        choices=UNSEEN_ESTIMATORS.names(),
        default=DEFAULT_UNSEEN,
        help="weight of rows the profile never saw: "
        + "; ".join(f"{n}: {e.description}" for n, e in UNSEEN_ESTIMATORS.items()),
    )
    p.add_argument("--time-limit", type=float, default=60.0, help="MILP time limit, s (default 60)")
    from nmp.guard import add_argument

    add_argument(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_run)


def _print_seeds(args: argparse.Namespace, runs: dict[str, list[dict]]) -> int:
    """Each sharder at every seed: the median and range of its figures (``--seeds N``)."""
    import statistics

    keys = ("step_ms", "load_balance", "slow_access_fraction")
    summary = []
    for name, rows in runs.items():
        entry: dict = {"sharder": name, "seeds": list(range(args.seed, args.seed + len(rows)))}
        for k in keys:
            vals = [r[k] for r in rows]
            entry[k] = {"median": statistics.median(vals), "min": min(vals), "max": max(vals)}
            entry[f"{k}_by_seed"] = vals
        summary.append(entry)
    if args.json:
        print(json_text({"sharders": summary, "runs": runs}))
        return 0
    r0 = next(iter(runs.values()))[0]
    first, last = args.seed, args.seed + args.seeds - 1
    print(
        f"nmp shard: {r0['workload']} on {r0['topology']}, {r0['gpus']} x {r0['gpu']}, "
        f"{r0['hbm_gib_per_gpu']:g} GiB HBM each; profile seeds {first}..{last}, each timed on "
        f"{r0['eval_batches']} {'held-out' if r0['held_out'] else 'profiled'} batch(es); "
        "median (min-max) over the seeds"
    )
    print(f"{'sharder':<12}{'step_ms':>26}{'load_bal':>20}{'slow%':>22}")
    for e in summary:
        st, lb, sl = (e[k] for k in keys)
        print(
            f"{e['sharder']:<12}{st['median']:>10.4f} ({st['min']:.4f}-{st['max']:.4f})"
            f"{lb['median']:>8.2f} ({lb['min']:.2f}-{lb['max']:.2f})"
            f"{100 * sl['median']:>8.2f}% ({100 * sl['min']:.2f}-{100 * sl['max']:.2f}%)"
        )
    return 0


def _shard_one(args: argparse.Namespace, name: str, over: dict, seed: int) -> dict:
    # numpy: loaded on use (start-up time)
    from nmp.shard.run import run_shard

    return run_shard(
        workload=args.workload,
        sharder=name,
        topology=args.topology,
        workload_overrides=over["workload"],
        topology_overrides=over["topology"],
        profile_batches=args.profile_batches,
        eval_batches=args.eval_batches,
        seed=seed,
        index_file=args.index_file or "",
        overlap=args.overlap,
        time_limit_s=args.time_limit,
        profile_policy="served" if args.eval_on_profile else args.profile_policy,
        unseen=args.unseen,
        max_memory=args.max_memory,
    )
