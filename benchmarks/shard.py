"""Speed of sharding (printed, not asserted).

1. RecShard MILP solve time (HiGHS through scipy.optimize.milp) with its size (variables,
   binaries, constraints, frequency classes) and final gap: Criteo Terabyte on 4, 8 and 16 GPUs
   (1 GiB of HBM each), and a 100-table synthetic model (dlrm-benchmark with 100 tables of 1M
   rows, Zipf 1.05, pooling 10) on 8 and 16 GPUs. The greedy size sharder's time on the same
   problem is printed beside it as the peer figure.
2. Cost evaluation: placements costed per second and lookups per second of
   :func:`nmp.shard.cost.evaluate` on Criteo Terabyte (8 GPUs, 2 batches of 53K lookups), each
   placement priced afresh (the kept GPU stages cleared) and once more from the kept stages,
   with the GPU model's own time for the unsharded batch on one GPU (``embedding_stage``) as
   the peer.
3. What the kept stages save a whole run: every sharder at seeds 0-2 on Criteo Terabyte
   (``nmp shard --sharder all --seeds 3``), with the stages kept and with none kept (the same
   placements solved again in each pass), and the share of stages that were repeats.
   CPU time of this process (``time.process_time``): the VM is shared.

Usage: ``python benchmarks/shard.py [--time-limit 120]``
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("NUMBA_NUM_THREADS", "1")


def problem_for(workload, overrides, gpus, hbm_gib, profile_batches, time_limit):
    from nmp.shard.run import shard_problem, workload_of
    from nmp.shard.topology import load_topology

    topo = load_topology("a100x8-pcie4", {"gpus": gpus, "hbm_gib": hbm_gib})
    problem = shard_problem(workload, overrides, topo, profile_batches, time_limit_s=time_limit)
    return topo, workload_of(workload, overrides), problem


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=120.0)
    args = ap.parse_args()
    from nmp.shard.registry import get_sharder

    synthetic = {"num_tables": 100, "rows": 1_000_000, "pooling": 10, "alpha": 1.05}
    cases = [("criteo-terabyte", {}, g, 1.0, 8) for g in (4, 8, 16)]
    cases += [("dlrm-benchmark", synthetic, g, 1.0, 2) for g in (8, 16)]
    print("1. RecShard MILP solve time (wall s; greedy size sharder as peer)")
    for workload, over, gpus, hbm, prof in cases:
        _, _, p = problem_for(workload, over, gpus, hbm, prof, args.time_limit)
        t0 = time.perf_counter()
        pl = get_sharder("recshard").place(p)
        milp_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        get_sharder("size").place(p)
        greedy_s = time.perf_counter() - t0
        i = pl.info
        name = workload + (" (100 tables)" if over else "")
        print(
            f"  {name:<28} {gpus:>2} GPUs: {milp_s:7.2f} s, {i['variables']} vars "
            f"({i['binaries']} binary), {i['constraints']} rows, {i['classes']} classes, "
            f"gap {i['mip_gap']:.2%}; size sharder {greedy_s * 1e3:.1f} ms "
            f"(MILP/greedy {milp_s / max(greedy_s, 1e-9):.0f}x)"
        )
    print("2. Cost evaluation (CPU s)")
    import nmp.shard.cost as cost
    from nmp.gpu import load_gpu
    from nmp.gpu.model import embedding_stage
    from nmp.shard.cost import evaluate
    from nmp.shard.run import _eval_batches

    topo, spec, p = problem_for("criteo-terabyte", {}, 8, 1.0, 8, args.time_limit)
    pl = get_sharder("recshard").place(p)
    batches = _eval_batches("criteo-terabyte", "()", (), 2, 0)
    evaluate(pl, topo, batches, [4] * 26)  # warm-up (compilation, calibration)
    reps = 3
    t0 = time.process_time()
    for _ in range(reps):
        cost._STAGE_NS.clear()
        evaluate(pl, topo, batches, [4] * 26)
    per = (time.process_time() - t0) / reps
    t0 = time.process_time()
    for _ in range(reps):
        evaluate(pl, topo, batches, [4] * 26)
    kept = (time.process_time() - t0) / reps
    lookups = sum(b.num_lookups for b in batches)
    gpu = load_gpu(topo.gpu)
    t0 = time.process_time()
    for b in batches:
        embedding_stage(gpu, b)
    peer = time.process_time() - t0
    print(
        f"  evaluate(): {per:.3f} s per placement ({1 / per:.1f}/s), "
        f"{lookups / per / 1e6:.2f} M lookups/s; embedding_stage on the unsharded batches "
        f"{peer:.3f} s (evaluate/embedding_stage {per / peer:.2f}x); from the kept stages "
        f"{kept:.3f} s"
    )
    print("3. A whole run: every sharder, seeds 0-2 (CPU s)")
    print("  " + whole_run(cost))


def whole_run(cost) -> str:
    """Every sharder at seeds 0-2 twice, the placements and profiles solved again in each pass:
    with no stage kept, then with the stages kept."""
    import nmp.shard.run as run
    from nmp.identity_cache import KeyedCache
    from nmp.shard.registry import SHARDERS

    def one_pass() -> float:
        for fn in (run._placement, run._profile, run._eval_batches):
            fn.cache_clear()
        cost._STAGE_NS.clear()
        t0 = time.process_time()
        for seed in range(3):
            for name in SHARDERS.names():
                run.run_shard(workload="criteo-terabyte", sharder=name, seed=seed)
        return time.process_time() - t0

    import nmp.gpu.model as model

    kept_stages = cost._STAGE_NS
    priced = {"n": 0}
    stage = model.embedding_stage  # (stage_ns imports it at each call: the count sees each)

    def counting(*a, **k):
        priced["n"] += 1
        return stage(*a, **k)

    model.embedding_stage = counting
    try:
        cost._STAGE_NS = KeyedCache(0)  # none kept
        off = one_pass()
        every = priced["n"]
        priced["n"] = 0
        cost._STAGE_NS = kept_stages
        on = one_pass()
        distinct = priced["n"]
    finally:
        model.embedding_stage = stage
        cost._STAGE_NS = kept_stages
    return (
        f"none kept {off:.2f} s ({every} stages priced), kept {on:.2f} s ({distinct} priced: "
        f"{1 - distinct / every:.0%} were repeats), {off / on:.2f}x"
    )


if __name__ == "__main__":
    main()
