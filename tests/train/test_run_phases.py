"""The schedule as the table the distributed processes walk, and the run phases' model (no
processes: records shaped as the launcher's)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from nmp.errors import NmpError
from nmp.train.dist.phases import plan
from nmp.train.dist.runphases import _d_save, run_phases
from nmp.train.schedule import COMMON, Phase
from nmp.train.strategies import REGISTRY


def _handlers(*names):
    return {n: (lambda st: None) for n in names}


SERVER = _handlers(
    "lookup", "gather", "pooled", "row_grad", "optimizer", "parity_delta", "vote", "parity_xor"
)
WORKER = _handlers("lookup", "pooled", "dense", "row_grad", "dense_grad", "vote")


def test_each_role_walks_its_phases_of_the_strategys_schedule_in_order():
    ecrec = REGISTRY.get("ecrec").schedule
    assert [n for n, _ in plan(ecrec, "server", SERVER, "ecrec")] == [
        "lookup", "gather", "pooled", "row_grad", "optimizer", "parity_delta", "vote",
        "parity_xor",
    ]  # fmt: skip
    assert [n for n, _ in plan(COMMON, "server", SERVER, "x")] == [
        "lookup", "gather", "pooled", "row_grad", "optimizer", "vote",
    ]  # fmt: skip
    assert [n for n, _ in plan(ecrec, "worker", WORKER, "ecrec")] == [
        "lookup", "pooled", "dense", "row_grad", "dense_grad", "vote",
    ]  # fmt: skip


def test_a_phase_no_process_can_run_is_refused_up_front():
    sched = COMMON.with_phases(Phase("scrub", "server", "compute", after=("optimizer",)))
    with pytest.raises(NmpError, match="phase 'scrub' has no server handler"):
        plan(sched, "server", SERVER, "mine")
    plan(sched, "worker", WORKER, "mine")  # not a worker's phase: the workers walk on


def test_checkpointing_declares_its_run_phases_and_ecrec_its_repair():
    names = {n: [p.name for p in REGISTRY.get(n).schedule.run] for n in ("checkpoint", "cpr-mfu")}
    assert names == {
        "checkpoint": ["regroup", "save", "restore", "reexec"],
        "cpr-mfu": ["regroup", "save", "restore"],
    }
    run = REGISTRY.get("ecrec").schedule.run
    assert [(p.name, p.when) for p in run] == [("regroup", "per_failure"), ("repair", "per_step")]


def _rec(walls, train_wall_s, **server):
    return {
        "results": {
            "worker:0": {"step_wall": walls, "group_s": {"0": 0.02}},
            "server:0": {"group_s": {"0": 0.04}, **server},
        },
        "events": [],
        "train_wall_s": train_wall_s,
        "ctx": None,
    }


def test_run_phases_are_modeled_from_what_the_processes_did():
    step = 0.01
    ff = _rec([(0, i, step) for i in range(20)], 0.22)  # 20 steps + 1 ms between steps
    ff["results"]["worker:0"]["phase_s"] = {f"0:{i}": {"dense_grad": 0.004} for i in range(20)}
    run = _rec(
        [(0, i, 0.012) for i in range(10)] + [(1, i, 0.011) for i in range(5, 20)],
        0.6,
        ckpt_writes=[(0, 0.03, 4000), (10, 0.05, 4000), (10, 0.01, 2000)],
        begin_s={"1": 0.02},
        loaded_bytes={"1": 8000},
        loaded_files={"1": 2},
        store_ops={"1": 3},
        store_rtt_s=[0.001, 0.003, 0.002],
    )
    # a worker read a part too (the restore: the longest process or all over the cores)
    run["results"]["worker:0"].update(loaded_bytes={"1": 1000}, loaded_files={"1": 1})
    run["traffic"] = {"sched_s": {"a": [2.0, 1.0], "b": [2.0, 3.0]}, "cpu_s": {"a": 0.3}}
    run.update(machine_busy_s=0.9, machine_cpus=2)  # contention 4 / 4; others 0.6 of 0.9 s
    run["events"] = [
        {"failed": "server:0", "gen": 1, "resume_step": 5, "committed_steps": 10,
         "regroup_wall_s": 0.1},
    ]  # fmt: skip
    bench = {
        "write_s": 0.02, "write_file_s": 0.005, "read_s": 0.004, "bench_bytes": 4000.0,
        "read_file_cpu_s": 0.001, "read_byte_cpu_s": 1e-6,
    }  # fmt: skip
    sched = REGISTRY.get("checkpoint").schedule
    out = run_phases(
        run,
        {"runs": [ff]},
        sched,
        added_step_s=0.005,
        repair_s=0.0,
        bench=bench,
        workers=2,
        world=4,
    )
    ph = out["phases"]
    # measured: the re-executed steps 5..9 of generation 1, each save's slowest writer
    assert ph["reexec"]["measured_s"] == pytest.approx(5 * 0.011)
    assert ph["steps"]["measured_s"] == pytest.approx(10 * 0.012 + 10 * 0.011)
    assert ph["save"]["measured_s"] == pytest.approx(0.03 + 0.05)
    assert ph["restore"]["measured_s"] == pytest.approx(0.02)
    assert ph["regroup"]["measured_s"] == pytest.approx(0.1 - 0.02)
    # modeled: steps at the failure-free mean plus the strategy's added phases; a save's
    # largest part at the benchmark's bytes per second; the restore's bytes read likewise
    assert ph["steps"]["modeled_s"] == pytest.approx(20 * (step + 0.005))
    assert ph["reexec"]["modeled_s"] == pytest.approx(5 * (step + 0.005))
    # (each save: the largest part, 4000 B = the benchmark's file, and 2 store round trips)
    assert ph["save"]["modeled_s"] == pytest.approx(2 * (0.02 + 2 * 0.002))
    # a small part (CPR's partial save) still costs a file's fixed write: 1000 B of 4000
    small = {"results": {"server:0": {"ckpt_writes": [(20, 0.01, 1000)]}}}
    inp = {**bench, "store_rtt_s": 0.002}
    assert _d_save(small, inp) == pytest.approx(0.005 + 0.25 * 0.015 + 2 * 0.002)
    # the restore: server 2 files + 8000 B, the worker 1 file + 1000 B of CPU, the longer
    # of the longest and the sum over the cores, stretched by the contention (1 + 1); the
    # server's 3 store round trips at the run's median 2 ms
    reads = max(2 * 0.001 + 8000e-6, (2 * 0.001 + 8000e-6 + 0.001 + 1000e-6) / os.cpu_count())
    assert ph["restore"]["modeled_s"] == pytest.approx(reads * 2 + 3 * 0.002)
    assert ph["between"]["modeled_s"] == pytest.approx(25 * 0.001)
    # the regroup: the launcher's and the spare's half polling periods, a barrier of the 4
    # processes (the all-gather's rounds, all 4 ms among 1 peer: the last of 3 is 4 ms too),
    # the group formation of the failure-free run's last process to arrive
    assert ph["regroup"]["modeled_s"] == pytest.approx(0.0035 + 0.004 + 0.02)
    # the load the run met: its processes' CPU and the rest of the machine's busy time
    assert out["machine"] == pytest.approx(
        {"cpus": 2, "ours_cores": 0.5, "others_cores": 1.0, "cpu_contention": 1.0}
    )
    total = sum(v["modeled_s"] for v in ph.values())
    assert out["total_s"]["modeled"] == pytest.approx(total)
    assert out["overhead_pct"]["modeled"] == pytest.approx(100 * (total / 0.22 - 1))
    assert out["overhead_pct"]["measured"] == pytest.approx(100 * (0.6 / 0.22 - 1))


def test_failure_free_steps_run_at_the_speed_this_run_did_identical_work():
    """The reference phase took 10 % more CPU per step in the run than in the failure-free
    runs: the modeled steps are the failure-free mean step 10 % longer, plus the strategy's."""
    from nmp.train.dist.phases import work_speed

    def cpu(dense_s):
        return {f"0:{i}": {"dense": dense_s, "lookup": 0.5} for i in range(4)}

    ff = _rec([(0, i, 0.01) for i in range(20)], 0.22)
    ff["results"]["worker:0"]["phase_cpu_s"] = cpu(0.002)
    run = _rec([(0, i, 0.012) for i in range(20)], 0.26)
    run["results"]["worker:0"]["phase_cpu_s"] = cpu(0.0022)
    run["traffic"] = {"sched_s": {}, "cpu_s": {"a": 0.3}}
    assert work_speed(run, [ff]) == pytest.approx(1.1)
    assert work_speed({"results": {}}, [ff]) == 1.0  # not recorded: the failure-free speed
    sched = REGISTRY.get("checkpoint").schedule
    bench = {
        "write_s": 0.02, "write_file_s": 0.005, "read_s": 0.004, "bench_bytes": 4000.0,
        "read_file_cpu_s": 0.001, "read_byte_cpu_s": 1e-6,
    }  # fmt: skip
    out = run_phases(
        run, {"runs": [ff]}, sched, added_step_s=0.001, repair_s=0.0, bench=bench,
        workers=2, world=4,
    )  # fmt: skip
    assert out["inputs"]["work_speed"] == pytest.approx(1.1)
    assert out["phases"]["steps"]["modeled_s"] == pytest.approx(20 * (0.01 * 1.1 + 0.001))


def test_repeats_give_each_runs_overheads_and_their_spread():
    from nmp.train.dist.runphases import repeats

    def ff(wall, cpu):
        return {"train_wall_s": wall, "traffic": {"cpu_s": {"a": cpu}}}

    pairs = [{"runs": [ff(10.0, 5.0), ff(12.0, 5.0)]}, {"runs": [ff(12.0, 5.0), ff(11.0, 5.0)]}]
    runs = [{"traffic": {"cpu_s": {"a": 6.0}}}, {"traffic": {"cpu_s": {"a": 5.5}}}]
    walls = iter([(13.2, 12.0), (11.5, 12.5)])  # (measured, modeled) training seconds

    def modeled(pair, run):
        m, d = next(walls)
        ff_s = sum(b["train_wall_s"] for b in pair["runs"]) / 2
        pct = {"measured": 100 * (m / ff_s - 1), "modeled": 100 * (d / ff_s - 1)}
        return {"run_phases": {"overhead_pct": pct, "phases": {}}}

    out = repeats(pairs, runs, modeled)
    assert [r["overhead_pct"] for r in out["runs"]] == pytest.approx([20.0, 0.0])
    assert [r["cpu_overhead_pct"] for r in out["runs"]] == pytest.approx([20.0, 10.0])
    assert out["overhead_pct"]["mean"] == pytest.approx(10.0)
    assert out["overhead_pct"]["min"] == pytest.approx(0.0)
    assert out["overhead_pct"]["sd"] == pytest.approx(14.142, rel=1e-3)
    assert out["failure_free_repeat_pct"]["max"] == pytest.approx(20.0)


def test_cpu_overhead_per_cpu_second_of_the_same_work():
    """A run whose CPUs ran 10 % slower (its MLP took 10 % more CPU for the same work) and
    that added 1 s of tracking: 15 % more CPU seconds, 4.5 % more work."""
    from nmp.train.dist.runphases import cpu_overhead

    def rec(cpu, dense, track=0.0, save=0.0):
        phases = {"0:0": {"dense": dense, "lookup": 1.0}}
        server = {"phase_cpu_s": {"0:0": {"track": track}} if track else {}}
        server["main_cpu_s"] = {"save": save, "step": 1.0, "publish": 0.1}
        return {
            "traffic": {"cpu_s": {"a": cpu}},
            "results": {"worker:0": {"phase_cpu_s": phases}, "server:0": server},
        }

    base = {"runs": [rec(20.0, 2.0), rec(20.0, 2.0)]}
    out = cpu_overhead(rec(23.0, 2.2, track=1.0, save=0.2), base)
    assert out["overhead_pct"] == pytest.approx(15.0)
    assert out["work_overhead_pct"] == pytest.approx(100 * ((23.0 / 2.2) / 10.0 - 1))
    assert out["added_phases_s"] == pytest.approx({"track": 1.0, "save": 0.2})


def test_added_phases_are_priced_by_what_they_do():
    from nmp.train.dist.phases import contention, model_phases

    base = {"lookup": 0.005, "dense_grad": 0.004, "vote": 0.003}
    ecrec = REGISTRY.get("ecrec").schedule
    run = {"traffic": {"sched_s": {"a": [1.0, 2.0], "b": [3.0, 2.0]}}}
    q = contention(run)
    assert q == pytest.approx(1.0)  # 4 s waiting for a CPU per 4 s on one
    rounds = np.array([0.006, 0.002, 0.004])  # the all-gather's rounds among 2 peers
    got, inputs = model_phases(
        ecrec, COMMON, base, delta_bytes_per_server=1e6, compute_s={"parity_xor": 0.0002},
        link_gbps=1.0, servers=4, workers=3, cpu_contention=q, round_samples=rounds,
        stat="mean",
    )  # fmt: skip
    assert got["lookup"] == 0.005  # a common phase: the failure-free runs' own
    # a send among the 4 servers: a round among 3 peers, the measured rounds' distribution
    # (among 2) to the power 3/2: the sorted rounds weighted by P(max is the i-th), plus its
    # bytes over the link
    w = [(1 / 3) ** 1.5, (2 / 3) ** 1.5 - (1 / 3) ** 1.5, 1 - (2 / 3) ** 1.5]
    round_s = 0.002 * w[0] + 0.004 * w[1] + 0.006 * w[2]
    assert got["parity_delta"] == pytest.approx(round_s + 1e6 / 1e9)
    assert inputs["round_ms"] == pytest.approx(1e3 * round_s)
    # a compute: its microbenchmark stretched by the run's CPU contention
    assert got["parity_xor"] == pytest.approx(0.0002 * 2)
    assert inputs["cpu_contention"] == q
    cpr = REGISTRY.get("cpr-mfu").schedule
    assert [p.name for p in cpr.step if not COMMON.has(p.name)] == ["track"]
    got, _ = model_phases(
        cpr, COMMON, base, delta_bytes_per_server=0.0, compute_s={"track": 0.0001},
        link_gbps=1.0, servers=4, workers=3, cpu_contention=0.5, cores=2,
    )  # fmt: skip
    # CPR's bookkeeping, on the critical path: 4 servers at once on 2 cores take 2 turns
    assert got["track"] == pytest.approx(0.0001 * 2 * 1.5)
    assert cpr.critical_path_ns(got) > COMMON.critical_path_ns(got)


def test_the_cache_eviction_touches_more_than_a_cores_l2():
    from nmp.train.dist import phases

    phases.evict_private_caches()
    assert phases._EVICT[0].nbytes == phases.EVICT_BYTES >= 2 * (2 << 20)


def test_a_round_among_more_peers_is_the_max_of_as_many_measured_rounds():
    """Order statistics of the measured rounds, no law assumed: among 2 peers the mean of the
    larger of two draws (with replacement) of rounds measured among 1 peer; the process's own
    part (a constant in every sample) is not multiplied."""
    from itertools import product

    from nmp.train.dist.phases import round_seconds

    x = [0.004, 0.001, 0.003, 0.002]
    assert round_seconds(x, workers=2, peers=1) == pytest.approx(np.mean(x))
    pairs = [max(a, b) for a, b in product(x, x)]
    assert round_seconds(x, workers=2, peers=2) == pytest.approx(np.mean(pairs))  # 3.125 ms
    triples = [max(t) for t in product(x, x, x)]
    assert round_seconds(x, workers=2, peers=3) == pytest.approx(np.mean(triples))
    assert round_seconds([0.005] * 7, workers=2, peers=5) == pytest.approx(0.005)
    # the median of the max of 3: the measured rounds' quantile 0.5 ** (1/3)
    assert round_seconds(x, 2, 3, stat="median") == pytest.approx(np.quantile(x, 0.5 ** (1 / 3)))
    assert round_seconds(x, workers=1, peers=3) == 0.0  # one worker: no round measured


def test_cprs_track_phase_is_modeled_from_the_servers_own_bookkeeping(
    tiny_cfg, tmp_path, monkeypatch
):
    """The ``track`` microbenchmark times the very function the servers run in their phase
    (one count per lookup), and the model charges what it times: a tripled or zeroed
    microbenchmark changes the modeled phase."""
    import dataclasses
    from types import SimpleNamespace

    import numpy as np

    from nmp.train.dist import phases
    from nmp.train.dist.context import Context, RunSpec
    from nmp.train.shard import request_for

    cfg = tiny_cfg(steps=10, nodes=3, workers=2)
    spec = RunSpec(
        cfg=dataclasses.asdict(cfg), strategy="cpr-mfu", servers=3, workers=2,
        run_dir=str(tmp_path), timeout_s=60, ckpt_every=5,
    )  # fmt: skip
    ctx = Context(spec)
    rows_of = ctx.shard.rows_of_node(0)
    g = ctx.shard.global_rows(ctx.batch(0).ids)
    reqs = [request_for(ctx.shard, 0, g[:, sl]) for sl in ctx.slices]
    state = ctx.strategy.new_tracking(len(rows_of))
    phases.track_lookups(ctx, state, rows_of, reqs, 0)
    local = np.concatenate([np.searchsorted(rows_of, r.rows) for r in reqs])
    assert np.array_equal(state, np.bincount(local, minlength=len(rows_of)))  # MFU: counts

    now, calls = [0.0], []

    def timed(*args):  # what the server's phase runs, on a clock that it advances by 7 us
        calls.append(args)
        now[0] += 7e-6

    evictions = []
    monkeypatch.setattr(phases, "track_lookups", timed)
    monkeypatch.setattr(phases, "time", SimpleNamespace(perf_counter=lambda: now[0]))
    monkeypatch.setattr(phases, "evict_private_caches", lambda: evictions.append(len(calls)))
    assert phases.track_seconds(ctx) == pytest.approx(7e-6)
    assert len(calls) == 21 and calls[0][2] is not None
    # each repetition starts from caches another process used, as in a run (not warm ones)
    assert evictions == list(range(21))
    bench, _ = phases.compute_benches(ctx, ctx.schedule)
    got, inputs = phases.model_phases(
        ctx.schedule, COMMON, {"dense_grad": 0.004}, delta_bytes_per_server=0.0,
        compute_s=bench, link_gbps=1.0, servers=3, workers=2, cpu_contention=1.0, cores=2,
    )  # fmt: skip
    assert inputs["track_microbenchmark_ms"] == pytest.approx(7e-3)
    assert got["track"] == pytest.approx(7e-6 * 1.5 * 2)  # 3 servers on 2 cores, contention 1
