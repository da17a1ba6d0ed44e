"""``nmp train --procs SERVERS,WORKERS``: a distributed run, measured beside the scale model.

Two runs of the same configuration on this machine: the failure-free baseline (no protection,
no kill) and the strategy with its kills. Measured: the wall time of training (all processes
ready to the last commit), the median step, the regroup after each kill, the time spent
restoring state and re-executing committed steps (``pause_s``), the bytes sent by kind, the
link (a ping-pong between two processes) and the checkpoint writes. Modeled: the scale model
(:func:`nmp.train.extrapolate.scheduled`) for the *same* configuration and failure schedule,
with the measured link and storage bandwidths, the measured baseline step, the group formation
time as every strategy's regroup per failure (no job restart), and the bytes per unit of work
this run counted.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np

from nmp.errors import NmpError
from nmp.parity_codes import PARITY_CODES
from nmp.train.dist.runphases import bench_for, cpu_overhead, repeats


def interval_steps(cfg, strategy: str) -> int:
    """Steps between saves: ``train.ckpt_every``, else the single-process strategy's rule
    (Young/Daly on the modeled write time and MTBF; CPR's bound on lost samples)."""
    from nmp.train.strategies import REGISTRY, make_strategy
    from nmp.train.trainer import Trainer

    if cfg.ckpt_every:
        return cfg.ckpt_every
    cls = REGISTRY.get(strategy)
    if not cls.writes_checkpoints:
        return 0
    strat = make_strategy(strategy, cfg)
    strat.attach(Trainer(cfg, parity=False))
    strat.finish()
    # the saving strategies' interval (an attribute of theirs alone, not of every Strategy)
    return int(getattr(strat, "interval_steps"))  # noqa: B009


def check(cfg, strategy: str, kills) -> None:
    from nmp.train.strategies import REGISTRY

    cls = REGISTRY.get(strategy)
    if cls.is_baseline and kills:
        raise NmpError(f"strategy '{strategy}' protects nothing: it cannot be given --kill")
    if cls.uses_parity and not PARITY_CODES.get(cfg.code).plain_xor:
        raise NmpError("--procs runs ECRec with the XOR code (train.code xor, parities 1)")
    if cfg.nodes < 2:
        raise NmpError("--procs needs at least 2 servers")
    for k in kills:
        kind, idx = k.role.split(":")
        limit = cfg.nodes if kind == "server" else cfg.workers
        if int(idx) >= limit:
            raise NmpError(f"--kill {kind}={idx}: the run has {kind}s 0..{limit - 1}")
        if not 0 < k.step < cfg.steps:
            raise NmpError(f"--kill step={k.step}: the run has steps 1..{cfg.steps - 1}")


def _one(
    cfg, strategy: str, kills, folder: Path, timeout_s: float, every: int, probe: bool = False
) -> dict:
    from nmp.train.dist.context import Context, RunSpec
    from nmp.train.dist.launch import launch
    from nmp.train.dist.outcome import digest

    spec = RunSpec(
        cfg=asdict(cfg),
        strategy=strategy,
        servers=cfg.nodes,
        workers=cfg.workers,
        run_dir=str(folder),
        timeout_s=timeout_s,
        ckpt_every=every,
        extra={"probe": probe},
    )
    rec = launch(spec, kills)
    if not rec["coordinator"]:
        return rec
    ctx = Context(replace(spec))
    rec.update(digest(folder, ctx))
    rec["traffic_bytes"] = {k: v for k, v in rec["traffic"]["bytes"].items() if k != "probe"}
    rec["traffic_messages"] = {k: v for k, v in rec["traffic"]["messages"].items() if k != "probe"}
    from nmp.fileio import atomic_write_text

    # the launcher's record beside the processes' results: the run can be analysed again
    atomic_write_text(folder / "record.json", json.dumps(rec, default=float))
    rec["ctx"] = ctx
    return rec


def _step_times(rec: dict) -> list[float]:
    return [s for _, _, s in rec["results"]["worker:0"].get("step_wall", [])]


def _measured(base: dict, run: dict) -> dict[str, Any]:
    res = run["results"]
    steps_base = np.asarray(_step_times(base))
    out: dict[str, Any] = {
        "train_wall_s": run["train_wall_s"],
        "failure_free_train_wall_s": base["train_wall_s"],
        "overhead_pct": 100.0 * (run["train_wall_s"] / base["train_wall_s"] - 1.0),
        "step_ms_median": 1e3 * float(np.median(_step_times(run))),
        "failure_free_step_ms_median": 1e3 * float(np.median(steps_base)),
        # the steady state: the median step against the baseline's (failures barely move it)
        "overhead_steady_pct": 100.0 * (np.median(_step_times(run)) / np.median(steps_base) - 1),
        "setup_s": run["setup_s"],
    }
    failures = [e for e in run["events"] if "failed" in e]
    walls = res["worker:0"].get("step_wall", [])
    restore = reexec = regroup = 0.0
    for ev in failures:
        g = ev["gen"]
        begin = max(float(r.get("begin_s", {}).get(str(g), 0.0)) for r in res.values())
        restore += begin
        regroup += max(0.0, ev.get("regroup_wall_s", 0.0) - begin)
        # committed steps that a rollback re-executes
        redo = range(ev["resume_step"], ev["committed_steps"])
        reexec += sum(s for gg, i, s in walls if gg == g and i in redo)
    out.update(
        pause_s=restore + reexec,
        restore_s=restore,
        reexec_s=reexec,
        regroup_s=regroup,
        failures=len(failures),
    )
    return out


def _noise(base: dict, run: dict) -> float:
    """95 % band of the measured overhead (percentage points) from the spread of the step
    times: each run's training time is a sum of n steps, var = n var(step), taken as
    independent (drift in the machine's load widens the real band). Several failure-free runs
    (:func:`_merged`: their steps pooled) stand as their mean training time, whose variance is
    one run's over their count."""
    a, b = np.asarray(_step_times(run)), np.asarray(_step_times(base))
    if len(a) < 2 or len(b) < 2:
        return float("nan")
    n_runs = len(base.get("runs", [base]))
    var = len(a) * a.var(ddof=1) + len(b) * b.var(ddof=1) / n_runs**2
    return float(100 * 1.96 * np.sqrt(var) / (b.sum() / n_runs))


def _link(base: dict) -> tuple[float, float]:
    link = next(r["link"] for r in base["results"].values() if r.get("link"))
    return float(link[0]), float(link[1])


def _storage_gbps(run: dict) -> float | None:
    secs = sum(sum(r.get("ckpt_write_s", [])) for r in run["results"].values())
    nbytes = sum(r.get("ckpt_bytes", 0) for r in run["results"].values())
    return nbytes / secs / 1e9 if secs > 0 and nbytes else None


def _units(run: dict) -> dict[str, int]:
    """Units of work the run did (its configuration's steps, each executed step counted)."""
    from nmp.train.traffic import step_units

    ctx = run["ctx"]
    walls = run["results"]["worker:0"].get("step_wall", [])
    out: dict[str, int] = {}
    for _, i, _ in walls:
        for k, v in step_units(ctx, i).items():
            out[k] = out.get(k, 0) + v
    positions = 0
    for ev in run["events"]:
        if ev.get("failed", "") and ev["failed"].startswith("server:") and ctx.coded:
            n = int(ev["failed"].split(":")[1])
            positions += int((ctx.shard.node_of_pos == n).sum()) - _padding(ctx, n)
    out["repair"] = positions
    return out


def _padding(ctx, node: int) -> int:
    """Data slots of ``node`` past the last row (the last stripe's padding: never stored)."""
    shard = ctx.shard
    last = shard.node_of_pos.shape[0] - 1
    slots = np.arange(shard.k)
    return int(
        (
            (shard.node_of_pos[last, : shard.k] == node)
            & (last * shard.k + slots >= shard.total_rows)
        ).sum()
    )


def modeled(
    cfg, strategy: str, base: dict, run: dict, every: int, bench: dict[str, float]
) -> dict[str, Any]:
    """The run's phases modeled from what its processes did (:mod:`.runphases`), and the scale
    model on this configuration and failure schedule (see the module doc)."""
    from nmp.train import optim
    from nmp.train.dist.phases import phase_model
    from nmp.train.dist.runphases import run_phases
    from nmp.train.extrapolate import DeploymentSpec, _model, scheduled, steady_fraction
    from nmp.train.traffic import counted, step_units

    ctx = run["ctx"]
    latency_s, gbps = _link(base)
    step_ms = 1e3 * float(np.median(_step_times(base)))
    # the regroup: forming a group, as the process that arrived last at the start saw it (the
    # others' times include waiting for it)
    group_s = min(float(r.get("group_s", {}).get("0", 0.0)) for r in base["results"].values())
    units = _units(run)
    per_unit = counted(run["traffic_bytes"], units)
    storage = _storage_gbps(run)
    every_min = (every or 1) * step_ms / 60e3
    s = ctx.spec.servers
    counted_kw: dict[str, Any] = {f"traffic_{k}": v for k, v in per_unit.items() if v}
    dep = DeploymentSpec(
        name="measured-cluster",
        workload=cfg.workload,
        table_rows=ctx.shard.total_rows,
        dim=ctx.geo.dim,
        batch=ctx.geo.batch,
        servers=s,
        workers=ctx.spec.workers,
        server_mtbf_hours=cfg.mtbf_steps * step_ms * s / 3.6e6,
        storage_gbps=storage or cfg.storage_gbps,
        # no job is rescheduled here: the processes re-form their group on every failure,
        # whatever the strategy (scheduled's regroup_s, below)
        restart_s=0.0,
        optimizer_state_words=optim.state_width(cfg.optimizer, ctx.geo.dim),
        k=ctx.shard.k,
        r=1,
        rebuild_share=cfg.rebuild_share,
        cpr_fraction=cfg.cpr_fraction,
        cpr_pls=cfg.cpr_pls,
        cpr_full_every=cfg.cpr_full_every,
        interval="fixed",
        interval_min=(every_min,),
        arch=cfg.arch,
        bottom=(*cfg.bottom, ctx.geo.dim),
        top=(*cfg.top, 1),
        step_ms=step_ms,
        network_gbps=gbps,
        message_us=1e6 * latency_s,
        **counted_kw,
    )
    one = step_units(ctx, 0)
    step_units_ = {
        "lookups": one["lookup"],
        "pooled_vectors": one["pooled"],
        "worker_rows": one["row_grad"],
        "rows_touched": len(np.unique(ctx.shard.global_rows(ctx.batch(0).ids))),
        "rows_total": ctx.shard.total_rows,
    }
    fails = [e["at_step"] for e in run["events"] if "kill" in e and e["kill"].startswith("server")]
    rows = {
        r["strategy"]: r for r in scheduled(dep, cfg.steps, fails, step_units_, regroup_s=group_s)
    }
    row = rows.get(strategy)
    # This machine's step: the failure-free phases plus the strategy's own, in series as its
    # schedule has them (instead of the scale model's hardware figures for the added phases);
    # the saves and the failures as the scale model charges them on the measured inputs.
    pm = phase_model(cfg, run, base, gbps, _step_times)
    md = _model(dep, step_units_)
    sf = steady_fraction(md, ctx.strategy)
    rp = run_phases(
        run, base, ctx.schedule, added_step_s=pm["added_mean_s"],
        repair_s=pm["repair_s"]["modeled"],
        bench=bench, workers=ctx.spec.workers, world=ctx.spec.world,
    )  # fmt: skip
    return {
        # the run's phases modeled from what its processes did (nmp.train.dist.runphases)
        "modeled_overhead_pct": rp["overhead_pct"]["modeled"],
        # the added phases over the failure-free step, both at the run's speed
        "modeled_overhead_no_failure_pct": pm["step_ms"]["overhead_pct"],
        "extrapolated_overhead_pct": None if row is None else row["overhead_pct"],
        "extrapolated_steady_pct": 100.0 * sf,
        "phases": pm["phases"],
        "run_phases": rp,
        "step_ms": pm["step_ms"],
        "added_phases": pm["added_phases"],  # the phases the step's model adds in series
        "repair_s": pm["repair_s"],
        "phase_inputs": pm["inputs"],
        "model_inputs": {
            "step_ms": step_ms,
            "link_gbps": gbps,
            "link_latency_us": 1e6 * latency_s,
            "storage_gbps": storage,
            "regroup_s": group_s,
            "checkpoint_interval_steps": every,
            "traffic_per_unit": per_unit,
        },
    }


def _merged(bases: list[dict]) -> dict:
    """The failure-free runs as one: mean training wall time, all step times, every run kept
    (``runs``) for the phases."""
    out = dict(bases[0])
    out["train_wall_s"] = float(np.mean([b["train_wall_s"] for b in bases]))
    walls = [w for b in bases for w in b["results"]["worker:0"].get("step_wall", [])]
    out["results"] = {**bases[0]["results"]}
    out["results"]["worker:0"] = {**bases[0]["results"]["worker:0"], "step_wall": walls}
    out["runs"] = bases
    return out


def baseline(cfg, folder: Path, timeout_s: float = 60.0) -> dict:
    """The failure-free run (no protection, no kill, no compression) the overheads and the
    AUC change are measured against."""
    from nmp.train.strategies import baseline_name

    cfg, name = replace(cfg, compress="none"), baseline_name()
    return _one(cfg, name, [], Path(folder) / name, timeout_s, 0, probe=True)


def run_procs(
    cfg,
    strategy: str,
    kills,
    *,
    run_dir: str | None = None,
    timeout_s: float = 60.0,
    base: dict | None = None,
    repeat: int = 1,
) -> dict[str, Any] | None:
    """Baseline (unless given) and strategy runs; the row of ``nmp train --procs ... --json``
    (None on an agent other than torchrun's rank 0, which reports). ``repeat`` > 1: that many
    strategy runs, each between two failure-free ones (A B A B ... A), the spread in
    ``repeats``."""
    from nmp.train.rows import auc_change

    check(cfg, strategy, kills)
    every = interval_steps(cfg, strategy)
    folder = Path(run_dir) if run_dir else Path(tempfile.mkdtemp(prefix="nmp-procs-"))
    try:
        # failure-free, strategy, failure-free again: a change of the machine's load during
        # the runs hits both sides (the two failure-free runs are averaged; their difference
        # is the noise floor, ``measured.failure_free_repeat_pct``)
        bases = [base] if base else [baseline(cfg, folder, timeout_s)]
        runs = []
        for r in range(repeat if base is None else 1):
            sub = folder / (strategy if r == 0 else f"{strategy}-{r}")
            runs.append(_one(cfg, strategy, kills, sub, timeout_s, every))
            if not runs[-1]["coordinator"]:
                return None  # another host's agent under torchrun: agent 0 reports
            if base is None:
                again = folder / ("again" if r == 0 else f"again-{r}")
                bases.append(baseline(cfg, again, timeout_s))
        run = runs[0]
        merged = _merged(bases)
        meas = _measured(merged, run)
        meas["failure_free_repeat_pct"] = (
            100.0 * (bases[1]["train_wall_s"] / bases[0]["train_wall_s"] - 1.0)
            if len(bases) > 1
            else None
        )
        bench = bench_for(folder, runs)
        model = modeled(cfg, strategy, merged, run, every, bench)
        meas["cpu"] = cpu_overhead(run, merged)
        spread = None
        if len(runs) > 1:
            pairs = [_merged(bases[i : i + 2]) for i in range(len(runs))]
            spread = repeats(pairs, runs, lambda b, r: modeled(cfg, strategy, b, r, every, bench))
        base = merged
    finally:
        if run_dir is None:
            shutil.rmtree(folder, ignore_errors=True)
    m, mb = run["results"]["worker:0"]["metrics"], base["results"]["worker:0"]["metrics"]
    speed = model["run_phases"]["inputs"]["work_speed"]
    change, noise = auc_change(_Res(m), _Res(mb))
    row: dict[str, Any] = {
        "strategy": strategy,
        "procs": {"servers": cfg.nodes, "workers": cfg.workers},
        "final_state_sha256": run["final_state_sha256"],
        "failure_free_sha256": base["final_state_sha256"],
        "identical_to_failure_free": run["final_state_sha256"] == base["final_state_sha256"],
        "overhead_pct": meas["overhead_pct"],
        "modeled_overhead_pct": model["modeled_overhead_pct"],
        "pause_s": meas["pause_s"],
        "recovery_ns": 1e9 * meas["pause_s"],
        "auc": m["auc"],
        "auc_ci95": None if m["auc_se"] is None else 1.96 * m["auc_se"],
        "auc_teacher": m.get("auc_teacher"),
        "eval_samples": m["samples"],
        "auc_change": change,
        "auc_change_noise95": noise,
        "auc_change_within_noise": (
            None if change is None or noise is None else bool(abs(change) <= noise)
        ),
        "logloss": m["logloss"],
        "accuracy": m["accuracy"],
        "checkpoint_interval_steps": every or None,
        "measured": meas,
        "modeled": model,
        "overhead_noise95_pct": _noise(base, run),
        # the measured overhead against the failure-free runs at this run's speed, as the
        # modeled one is (modeled.run_phases); the band the same seconds in that unit
        "overhead_at_speed_pct": model["run_phases"]["overhead_pct"]["measured_at_speed"],
        "overhead_noise95_at_speed_pct": _noise(base, run) / speed,
        "traffic_bytes": run["traffic_bytes"],
        "failure_free_traffic_bytes": base["traffic_bytes"],
        "events": run["events"],
    }
    row["phases"] = model.pop("phases")
    if spread is not None:
        row["repeats"] = spread
    if "parity_consistent" in run:
        row["parity_consistent"] = run["parity_consistent"]
    if cfg.compresses:
        row["compression"] = compression(cfg, base, run, model["model_inputs"])
    return row


def compression(cfg, base: dict, run: dict, inputs: dict) -> dict[str, Any]:
    """SC'24's all-to-all through the process group: the codec's real bytes and seconds, and
    the forward exchange (a worker's lookups out to its pooled vectors in) measured against
    the alpha-beta model on the measured link: per step a worker receives one message from
    each server, ``S x (latency + bytes / bandwidth)``, plus the codec's time on those bytes
    at its measured throughput (compressed run only)."""
    stats = {"raw_bytes": 0, "sent_bytes": 0, "encode_s": 0.0, "decode_s": 0.0}
    for res in run["results"].values():
        for st in (res.get("codec") or {}).values():
            for k in stats:
                stats[k] += st[k]
    ratio = stats["raw_bytes"] / stats["sent_bytes"] if stats["sent_bytes"] else 1.0
    enc_gbps = stats["raw_bytes"] / stats["encode_s"] / 1e9 if stats["encode_s"] else None
    dec_gbps = stats["raw_bytes"] / stats["decode_s"] / 1e9 if stats["decode_s"] else None
    s, w = cfg.nodes, cfg.workers
    lat, bw = inputs["link_latency_us"] * 1e-6, inputs["link_gbps"] * 1e9

    def modeled(rec: dict, codec: bool) -> float:
        steps = len(rec["results"]["worker:0"].get("step_wall", [])) or 1
        per_msg = rec["traffic_bytes"].get("pooled", 0) / (steps * s * w)
        t = s * (lat + per_msg / bw)
        if codec and enc_gbps and dec_gbps:
            raw = per_msg * ratio
            t += raw / (enc_gbps * 1e9) + s * raw / (dec_gbps * 1e9)
        return 1e3 * t

    def measured(rec: dict) -> float:
        ex = rec["results"]["worker:0"].get("exchange_s", [])
        return 1e3 * float(np.median(ex)) if ex else float("nan")

    return {
        "codec": cfg.compress,
        "eb": cfg.eb,
        "compression_ratio": ratio,
        "bytes_uncompressed": stats["raw_bytes"],
        "bytes_sent": stats["sent_bytes"],
        "codec_compress_gbps": enc_gbps,
        "codec_decompress_gbps": dec_gbps,
        "exchange_ms_measured": measured(run),
        "exchange_ms_measured_uncompressed": measured(base),
        "exchange_ms_modeled": modeled(run, True),
        "exchange_ms_modeled_uncompressed": modeled(base, False),
    }


class _Res:
    def __init__(self, metrics) -> None:
        self.metrics = metrics


def print_procs(row: dict[str, Any]) -> None:
    """The run as a few lines of text."""
    meas, model = row["measured"], row["modeled"]
    inp = model["model_inputs"]
    p = row["procs"]
    print(
        f"{row['strategy']}: {p['servers']} servers + {p['workers']} workers (processes), "
        f"{meas['failures']} killed; final state "
        + ("identical to" if row["identical_to_failure_free"] else "differs from")
        + " the failure-free run's"
    )
    mod = row["modeled_overhead_pct"]
    print(
        f"  overhead measured {row['overhead_pct']:+.1f} % (training {meas['train_wall_s']:.2f} s "
        f"vs {meas['failure_free_train_wall_s']:.2f} s), modeled "
        + ("-" if mod is None else f"{mod:+.1f} %")
    )
    print(
        f"  pause {row['pause_s']:.3f} s (restore {meas['restore_s']:.3f} s, re-execution "
        f"{meas['reexec_s']:.3f} s), regroup {meas['regroup_s']:.3f} s, median step "
        f"{meas['step_ms_median']:.1f} ms (failure-free {meas['failure_free_step_ms_median']:.1f})"
    )
    print(
        f"  model inputs: link {inp['link_gbps']:.2f} GB/s ({inp['link_latency_us']:.0f} us), "
        f"storage {inp['storage_gbps'] or 0:.2f} GB/s, regroup {inp['regroup_s']:.3f} s"
    )
    auc = row["auc"]
    ch = row["auc_change"]
    print(
        "  held-out AUC "
        + ("undefined" if auc is None else f"{auc:.4f}")
        + ("" if ch is None else f", change {ch:+.4f} (noise ±{row['auc_change_noise95']:.4f})")
    )
    print(f"  bytes sent: {row['traffic_bytes']}")
    from nmp.train.dist.phases import print_phases
    from nmp.train.dist.runphases import print_run_phases

    print_phases(row)
    print_run_phases(model["run_phases"], meas.get("cpu"))
    if "repeats" in row:
        rep = row["repeats"]
        for key, label in (
            ("overhead_pct", "measured"), ("modeled_overhead_pct", "modeled"),
            ("cpu_overhead_pct", "measured in CPU s"),
            ("work_overhead_pct", "CPU s per reference-phase CPU s"),
            ("failure_free_repeat_pct", "A/A"),
        ):  # fmt: skip
            v = rep[key]
            if v is not None:
                print(
                    f"  {len(rep['runs'])} runs, {label}: mean {v['mean']:+.1f} % "
                    f"(min {v['min']:+.1f}, max {v['max']:+.1f}, sd {v['sd']:.1f})"
                )
    if "compression" in row:
        c = row["compression"]
        print(
            f"  all-to-all {c['codec']} (eb {c['eb']}): ratio {c['compression_ratio']:.2f}; "
            f"forward exchange measured {c['exchange_ms_measured']:.2f} ms (uncompressed "
            f"{c['exchange_ms_measured_uncompressed']:.2f}), modeled "
            f"{c['exchange_ms_modeled']:.2f} ms (uncompressed "
            f"{c['exchange_ms_modeled_uncompressed']:.2f})"
        )
    print(f"  final_state_sha256 {row['final_state_sha256']}")
