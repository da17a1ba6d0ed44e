"""``nmp train``: train DLRM on the modeled hardware with failures.

    nmp train --workload criteo-kaggle --strategy ecrec --fail step=300,node=1 [--json]
    nmp train --compare [--json]            # every strategy, one seed, one failure schedule
    nmp train --extrapolate [--setup ecrec|cpr] [--servers 5 --server-mtbf-hours 720] [--json]
    nmp train --crossover [--setup ecrec|cpr] [--out DIR] [--json]

Training presets: the workload preset's tables are capped at ``train.max_rows`` rows (2000 by
default; synthetic ids are drawn within the cap, Criteo TSV ids hashed into it) so that a run
takes seconds on one CPU core; every knob is ``--set train.<field>=value`` (nmp/train/config.py).
"""

from __future__ import annotations

import argparse
import contextlib
import re

from nmp.cliargs import json_text
from nmp.errors import NmpError
from nmp.parity_codes import PARITY_CODES
from nmp.results import jsonable

# The `nmp train` command: nmp.cli reads this literal without importing the module
# (name, place in `nmp --help`, one-line help; nmp.cli.command_table).
NMP_COMMAND = {
    "name": "train",
    "order": 6,
    "help": "train DLRM on the modeled hardware with failures",
}


def _config(args: argparse.Namespace):
    from nmp.config import parse_set_args, split_overrides
    from nmp.train.config import TrainConfig, with_overrides

    overrides = split_overrides(parse_set_args(args.set), ("train",))["train"]
    for flag, key in (
        ("workload", "workload"),
        ("steps", "steps"),
        ("seed", "seed"),
        ("code", "code"),
        ("parities", "parities"),
        ("nodes", "nodes"),
        ("arch", "arch"),
        ("data", "data"),
        ("mtbf_steps", "mtbf_steps"),
        ("compress", "compress"),
        ("eb", "eb"),
        ("eb_schedule", "eb_schedule"),
    ):
        value = getattr(args, flag)
        if value is not None:
            overrides[key] = value
    if "code" in overrides and "parities" not in overrides and overrides["code"] in PARITY_CODES:
        overrides["parities"] = PARITY_CODES.get(overrides["code"]).default_parities
    cfg = with_overrides(TrainConfig(), overrides)
    try:
        cfg.validate()
    except ValueError as exc:
        raise NmpError(f"train config: {exc}") from None
    _check_presets(cfg)
    _check_memory(cfg, args.max_memory)
    if cfg.ckpt_dir:  # a folder it cannot write: refused before the training, not after
        from nmp.cliargs import check_out_folder

        check_out_folder(cfg.ckpt_dir, flag="key 'train.ckpt_dir':")
    return cfg


def _check_presets(cfg) -> None:
    """The presets the config names (workload, arch, memory), loaded before torch is:
    a misnamed one (a folder, a pipe) was refused only after a minute of imports when busy."""
    from nmp.arch.presets import load_arch_spec
    from nmp.memory import load_memory
    from nmp.workload import load_workload

    load_workload(cfg.workload)
    load_arch_spec(cfg.arch)
    if cfg.memory:
        load_memory(cfg.memory)


def _check_memory(cfg, max_memory: str | None) -> None:
    """Refuse before anything is allocated a run that cannot fit (:mod:`nmp.guard`)."""
    import nmp.guard as guard
    from nmp.train.cost import mlp_weights
    from nmp.train.optim import state_width
    from nmp.train.trainer import resolve_geometry

    geo = resolve_geometry(cfg)
    if cfg.workers > geo.batch:  # each worker trains a slice of the batch, one sample at least
        raise NmpError(
            f"must be <= the batch ({geo.batch} samples), got {cfg.workers}", key="train.workers"
        )
    state = state_width(cfg.optimizer, geo.dim)
    samples = geo.batch * (1 + cfg.eval_batches)
    # the records grow with the rows and the width: the one further above its default is named
    default = resolve_geometry(type(cfg)())
    wider = geo.dim / default.dim > sum(geo.table_rows) / sum(default.table_rows)
    estimate = guard.train_estimate(
        sum(geo.table_rows),
        geo.dim,
        state,
        samples,
        cfg.nodes,
        records_key="train.dim" if wider else "train.max_rows",
        mlp_params={f"train.{part}": float(n) for part, n in mlp_weights(geo).items()},
    )
    guard.check(estimate, max_memory)


def _check_nodes(cfg, strategies) -> None:
    """Refuse before anything is built a node count the hardware cannot hold: a strategy that
    keeps parity stripes every record over all ``cfg.nodes`` nodes (k + r = nodes), and the
    cost model places a stripe's rows on distinct units of the design's parity level (nodes 9
    failed after a setup of seconds; nodes 100000 grew to 23 GB first)."""
    from nmp.train.strategies import REGISTRY

    if not any(REGISTRY.get(name).uses_parity for name in strategies):
        return
    from nmp.arch.point import load_memory_for
    from nmp.arch.presets import load_arch_spec

    spec = load_arch_spec(cfg.arch)
    org = load_memory_for(spec, cfg.memory or None).org
    per_level = {"rank": org.ranks, "bankgroup": org.ranks * org.bankgroups}
    per_level["bank"] = per_level["bankgroup"] * org.banks
    units = per_level.get(spec.parity.level)
    if units is not None and cfg.nodes > org.channels * units:
        raise NmpError(
            f"{cfg.nodes} nodes: a parity stripe spans every node, and {cfg.arch}'s parity "
            f"level '{spec.parity.level}' has {org.channels * units} units on its memory "
            "(fewer nodes, or a larger memory: train.memory)",
            key="train.nodes",
        )


def _failures(args, cfg):
    from nmp.train.failures import check_schedule, parse_failure, random_failures

    fails = [parse_failure(f) for f in args.fail or []]
    if args.random_failures:
        fails += random_failures(cfg.steps, cfg.nodes, cfg.mtbf_steps, cfg.seed)
    return check_schedule(fails, cfg.steps, cfg.nodes)


def procs_pair(text: str) -> tuple[int, int]:
    """``--procs SERVERS,WORKERS``: 2..63 servers and 1..62 workers, 64 in all; checked as the
    flag is parsed (before torch loads: a mistyped pair took a minute to refuse on a busy
    machine)."""
    try:
        servers, workers = (int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expects SERVERS,WORKERS like 4,2, got {text!r}"
        ) from None
    if servers < 2 or workers < 1 or servers + workers > 64:
        raise argparse.ArgumentTypeError(f"{text}: 2..63 servers and 1..62 workers, 64 in all")
    return servers, workers


def _procs(args: argparse.Namespace, cfg) -> int:
    """``--procs SERVERS,WORKERS``: the distributed trainer on this machine."""
    from dataclasses import replace

    from nmp.train.dist.launch import parse_kill
    from nmp.train.dist.report import print_procs, run_procs

    servers, workers = args.procs  # checked as the flag was parsed (procs_pair)
    if args.fail or args.random_failures or args.compare:
        raise NmpError("--procs kills real processes: give --kill, not --fail/--compare")
    if not args.strategy:
        raise NmpError("--procs needs --strategy NAME")
    cfg = replace(cfg, nodes=servers, workers=workers)
    try:
        cfg.validate()
    except ValueError as exc:
        raise NmpError(f"train config: {exc}") from None
    _check_memory(cfg, args.max_memory)
    _check_nodes(cfg, [args.strategy])
    kills = [parse_kill(k) for k in args.kill or []]
    from nmp.train.dist.launch import torchrun_env

    if torchrun_env() is not None and not args.run_dir:
        raise NmpError(
            "under torchrun, give --run-dir: a folder every host shares (results, checkpoints)"
        )
    from nmp.report.progress import activity

    with activity(f"distributed training ({args.strategy})", quiet=args.json):
        if args.run_dir and torchrun_env() is None:
            # one run per folder on this machine (two mixed their logs and checkpoints); under
            # torchrun every host's agent shares the folder by design
            from nmp.cliargs import check_out_folder
            from nmp.fileio import folder_lock

            folder = check_out_folder(args.run_dir, "--run-dir")
            busy = f"--run-dir {folder}: another nmp train --procs (pid {{pid}}) runs there"
            with folder_lock(folder, busy + "; wait for it, or give another folder"):
                row = run_procs(cfg, args.strategy, kills, run_dir=args.run_dir, repeat=args.repeat)
        else:
            row = run_procs(cfg, args.strategy, kills, run_dir=args.run_dir, repeat=args.repeat)
    if row is None:
        return 0  # another host's agent: rank 0 reports
    if args.json:
        print(json_text(jsonable(row)))
    else:
        print_procs(row)
    return 0


def _run(args: argparse.Namespace) -> int:
    modes = [f"--{m}" for m in ("compare", "extrapolate", "crossover") if getattr(args, m)]
    if len(modes) > 1:
        raise NmpError(f"{' and '.join(modes)} do not combine: each is a run of its own")
    if args.extrapolate or args.crossover:
        from nmp.train.cli_scale import extrapolate

        return extrapolate(args)
    # a mistyped --fail is refused before the config loads torch (a minute on a busy machine)
    from nmp.train.failures import parse_failure

    for text in args.fail or []:
        parse_failure(text)
    cfg = _config(args)
    if args.repeat < 1 or (args.repeat > 1 and not args.procs):
        raise NmpError("--repeat N takes N >= 1, with --procs")
    if args.procs:
        return _procs(args, cfg)
    if args.kill:
        raise NmpError("--kill kills processes of a distributed run: give --procs SERVERS,WORKERS")
    from nmp.train.strategies import strategy_names

    _check_nodes(cfg, strategy_names() if args.compare else [args.strategy or "none"])
    failures = _failures(args, cfg)
    if args.compare:
        from nmp.train.cli_compare import compare

        return compare(args, cfg, failures, _step_progress)
    strategy = args.strategy
    if not strategy:
        if not cfg.compresses:
            raise NmpError("give --strategy NAME, --compare, --extrapolate or --crossover")
        strategy = "none"  # a compression run: training without fault tolerance
    from nmp.train.rows import result_row
    from nmp.train.trainer import run

    with _step_progress(args, cfg.steps) as on_step:
        res = run(cfg, strategy, failures, on_step=on_step)
        # with failures, the failure-free run of the same configuration: is the final state the
        # same, and is the AUC change beyond its noise?
        base = _failure_free(cfg, on_step) if failures else None
    row = result_row(res, base)
    row.pop("overhead_pct")
    if base is None:
        for key in ("auc_change", "auc_change_noise95", "auc_change_within_noise"):
            row.pop(key)
    else:
        row["failure_free_sha256"] = base.final_state_sha256
        row["failure_free_auc"] = base.metrics["auc"]
    if res.trainer.alltoall is not None:  # SC'24 compression: figures + AUC vs uncompressed
        from nmp.train.alltoall.report import compression_report

        row.update(compression_report(cfg, strategy, failures, res))
    if args.json:
        print(json_text(row))
    else:
        _print_run(strategy, cfg, res, row, base)
    return 0


def _print_run(strategy: str, cfg, res, row: dict, base) -> None:
    """A single run's lines: its held-out metrics, modeled time and energy, its events and
    extras, its final state's digest (and the failure-free run's beside it)."""
    m = res.metrics
    auc = (
        f"{m['auc']:.4f}"
        if m["auc"] is not None
        else f"undefined (the {m['samples']} held-out labels are all one class)"
    )
    print(
        f"{strategy}: {cfg.steps} steps on {cfg.workload}; held-out AUC {auc}, "
        f"logloss {m['logloss']:.4f}, accuracy {m['accuracy']:.4f}"
    )
    print(
        f"  modeled time {res.ledger.total_ns / 1e6:.3f} ms, "
        f"energy {res.ledger.total_energy_pj / 1e6:.3f} uJ"
    )
    for ev in res.events:
        print(
            "  event: "
            + ", ".join(
                f"{k.removesuffix('_ns')} {_fmt_extra(k, v)}" for k, v in ev.items() if v != []
            )
        )
    for k, v in res.extra.items():
        text = _fmt_extra(k, v)
        if text:
            print(f"  {k.removesuffix('_ns')}: {text}")
    if res.trainer.alltoall is not None:
        from nmp.train.alltoall.report import print_compression

        print_compression(row)
    print(f"  final_state_sha256 {res.final_state_sha256}")
    if base is not None:
        print("  " + _versus_failure_free(row))


def _failure_free(cfg, on_step):
    from dataclasses import replace

    from nmp.train.strategies import baseline_name
    from nmp.train.trainer import run

    return run(replace(cfg, compress="none"), baseline_name(), [], on_step=on_step)


def _versus_failure_free(row: dict) -> str:
    """One line: the final state against the failure-free run's, and the AUC change with its
    noise (a change inside the noise says nothing about the strategy)."""
    same = (
        "identical to the failure-free run's"
        if row["identical_to_failure_free"]
        else f"DIFFERS from the failure-free run's ({row['failure_free_sha256'][:12]})"
    )
    if row["auc_change"] is None:
        return f"final state {same}; AUC change undefined"
    verdict = "inside the noise" if row["auc_change_within_noise"] else "beyond the noise"
    return (
        f"final state {same}; AUC change {row['auc_change']:+.4f} against "
        f"{row['failure_free_auc']:.4f} (noise ±{row['auc_change_noise95']:.4f}, 95 %: {verdict})"
    )


def _fmt_extra(key: str, value) -> str:
    """A strategy's extra figure as text: times with their unit, fractions as percent, a
    measured-time dict as 'name 1.2 s', nothing for an empty one."""
    from nmp.report.format import fmt_time_ns

    if value is None:
        return "-"
    seconds = re.search(r"_s(_|$)", key) is not None
    if isinstance(value, dict):  # a dict under a *_s key holds seconds
        return ", ".join(
            f"{k} {_fmt_extra(k + '_s' if seconds else k, v)}" for k, v in value.items()
        )
    if isinstance(value, bool):
        return "yes" if value else "no"
    if key.endswith("_ns"):
        return fmt_time_ns(value)
    if seconds and isinstance(value, float):
        return f"{value:.3g} s"
    if key == "memory_overhead":
        return f"{100 * value:.1f} %"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


@contextlib.contextmanager
def _step_progress(args, steps: int):
    """A bar per strategy over its steps on a terminal, a line every few seconds otherwise;
    nothing with --json (nmp.report.progress)."""
    from nmp.report.progress import tasks

    with tasks("training", steps, quiet=args.json) as update:

        def on_step(strategy: str, step: int, trainer=None) -> None:
            update(strategy, step)

        yield on_step


def register(sub: argparse._SubParsersAction) -> None:
    from nmp.cliargs import input_file
    from nmp.train.alltoall.bounds import EB_SCHEDULES

    p = sub.add_parser(
        "train",
        help=str(NMP_COMMAND["help"]),
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--workload", help="workload preset (tables capped at train.max_rows)")
    from nmp.train.strategies import strategy_help

    p.add_argument("--strategy", help=strategy_help())
    p.add_argument(
        "--fail",
        action="append",
        metavar="step=S,node=N[,phase=between]",
        help="fail node N before step S (or between the commit phases of step S); repeatable",
    )
    p.add_argument("--random-failures", action="store_true", help="add failures drawn with MTBF")
    p.add_argument("--mtbf-steps", type=float, help="mean steps between failures (system)")
    p.add_argument("--steps", type=int, help="training steps (default 600; train.steps)")
    p.add_argument(
        "--seed", type=int, help="seed of the data, the model and drawn failures (default 0)"
    )
    p.add_argument("--code", choices=PARITY_CODES.names(), help="ecrec parity code")
    p.add_argument("--parities", type=int, help="parities per stripe (r; rs only)")
    p.add_argument("--nodes", type=int, help="memory nodes")
    p.add_argument("--arch", help="architecture preset for the cost model")
    p.add_argument(
        "--data", type=input_file, help="Criteo TSV file instead of the synthetic teacher"
    )
    p.add_argument("--compare", action="store_true", help="all strategies, the comparison table")
    p.add_argument(
        "--extrapolate", action="store_true", help="the comparison at a paper's scale (Monte-Carlo)"
    )
    p.add_argument(
        "--crossover", action="store_true", help="where ECRec overtakes checkpointing and CPR"
    )
    p.add_argument("--setup", help="a paper's setup (workloads/train/NAME.toml: ecrec, cpr)")
    p.add_argument("--trials", type=int, help="extrapolation: Monte-Carlo draws")
    p.add_argument(
        "--until-plateau",
        action="store_true",
        help="compare: train until the failure-free AUC plateaus (train.plateau_every/_gain; "
        "--steps is the cap)",
    )
    p.add_argument(
        "--seeds", type=int, help="compare: repeat over N seeds, paired AUC changes with a 95%% CI"
    )
    p.add_argument("--out", help="crossover: folder for the plot (default: .)")
    p.add_argument("--servers", type=int, help="extrapolation: servers")
    p.add_argument("--server-mtbf-hours", type=float, help="extrapolation: MTBF of one server")
    p.add_argument("--storage-gbps", type=float, help="extrapolation: storage GB/s per server")
    p.add_argument(
        "--compress",
        help="codec of the all-to-all (default none; nmp models --registries lists them)",
    )
    p.add_argument("--eb", type=float, help="relative error bound of the codec (0.03)")
    p.add_argument(
        "--eb-schedule",
        choices=EB_SCHEDULES.names(),
        help="; ".join(f"{name}: {s.description}" for name, s in EB_SCHEDULES.items()),
    )
    p.add_argument(
        "--procs",
        metavar="SERVERS,WORKERS",
        type=procs_pair,
        help="run on torch.distributed: SERVERS embedding-server and WORKERS worker processes "
        "on this machine (see docs/training.md for several hosts)",
    )
    p.add_argument(
        "--kill",
        action="append",
        metavar="server=N,step=S[,phase=commit]",
        help="with --procs: SIGKILL the process of server N (or worker=N) at step S; repeatable",
    )
    p.add_argument("--run-dir", help="with --procs: keep the run's files (logs, checkpoints) here")
    p.add_argument(
        "--repeat", type=int, default=1, metavar="N",
        help="with --procs: N strategy runs, each between two failure-free ones; the spread",
    )  # fmt: skip
    p.add_argument("--set", action="append", metavar="train.KEY=VALUE", help="override a knob")
    from nmp.guard import add_argument

    add_argument(p)
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=_run)
