"""Speed of the GPU embedding-stage model: simulated lookups per second of wall time.

Runs gpu-micro24 (12 tables x 2048 bags x 150 lookups = 3.69 M lookups, 512-B rows: 14.7 M
sectored L1 requests) on a GPU preset, once per cache-simulation mode (exact, and line-sampled
with k = 4 and 8), after a warm-up run that compiles the numba kernels and fills the HBM
calibration cache. Prints the model's wall time (lookup generation excluded and shown apart),
lookups per second of wall time (target >= 2 M/s) and per CPU second of this process.

    python benchmarks/gpu.py [--arch a100-80gb] [--reuse medium] [--variant combined]
"""

from __future__ import annotations

import argparse
import os
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="a100-80gb")
    parser.add_argument("--reuse", default="medium")
    parser.add_argument("--variant", default="combined")
    parser.add_argument("--samples", default="1,4,8", help="line_sample values to time")
    args = parser.parse_args()

    from nmp.gpu.model import embedding_stage
    from nmp.gpu.point import PROFILE_SEED_OFFSET
    from nmp.gpu.spec import load_gpu
    from nmp.workload import generate_batch, load_workload

    wspec = load_workload("gpu-micro24", {"reuse": args.reuse})
    t0 = time.perf_counter()
    batch = generate_batch(wspec)
    t_gen = time.perf_counter() - t0
    profile = generate_batch(wspec, seed=wspec.seed + PROFILE_SEED_OFFSET)
    lookups = batch.num_lookups
    warm = load_gpu(args.arch, {"variant": args.variant})
    embedding_stage(warm, batch, pin_profile=profile)  # compile + calibrate

    print(
        f"gpu-micro24 ({args.reuse} reuse), {args.arch} {args.variant}: {lookups:,} lookups; "
        f"generating the batch took {t_gen:.2f} s ({lookups / t_gen / 1e6:.1f} M lookups/s)"
    )
    print(
        f"{'line_sample':>11} {'model s':>8} {'M lookups/s':>12} {'with gen':>9} "
        f"{'cpu s':>6} {'M/cpu-s':>8} {'modeled us':>11} {'L2 hit':>7}"
    )
    for k in (int(x) for x in args.samples.split(",")):
        gpu = load_gpu(args.arch, {"variant": args.variant, "sim.line_sample": k})
        t0, c0 = time.perf_counter(), time.process_time()
        op = embedding_stage(gpu, batch, pin_profile=profile)
        dt, cpu = time.perf_counter() - t0, time.process_time() - c0
        print(
            f"{k:>11} {dt:>8.2f} {lookups / dt / 1e6:>12.2f} "
            f"{lookups / (dt + t_gen) / 1e6:>9.2f} {cpu:>6.2f} {lookups / cpu / 1e6:>8.2f} "
            f"{op.t_ns / 1e3:>11.1f} {op.breakdown['l2_hit_rate']:>7.3f}"
        )
    if hasattr(os, "getloadavg"):
        print(
            f"load average during the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs "
            "(wall-time figures shrink when other work shares the machine)"
        )


if __name__ == "__main__":
    main()
