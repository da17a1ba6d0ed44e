"""Speed of the embedding cache (printed, not asserted).

1. Simulated lookups per second of each policy (``nmp.cache.engine``, numba, one core) on
   criteo-kaggle's request stream (1.04M lookups by default), L1 1 MiB, and for EVStore L2 int8
   + L3; beside a plain-Python LRU (``collections.OrderedDict``) on the same keys, in the same
   run, as the peer figure (ratio printed). Best of N, after one warm-up run (compilation).
   Times are CPU time of this process (``time.process_time``): the VM is shared, and wall
   time there measures the neighbours.
2. Backend lookups per second and latency: the touched rows written into LMDB and SQLite on
   disk (a temporary folder), then every lookup of the first requests read back one request at
   a time (``nmp.cache.kvstore.measure_reads``), SQLite's figure given as a ratio of LMDB's.

Usage: ``python benchmarks/cache.py [--requests 40000] [--repeat 3]``
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections import OrderedDict

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("NUMBA_NUM_THREADS", "1")


def python_lru(keys, cap: int) -> int:
    cache: OrderedDict = OrderedDict()
    hits = 0
    for k in keys.tolist():
        if k in cache:
            cache.move_to_end(k)
            hits += 1
        else:
            cache[k] = None
            if len(cache) > cap:
                cache.popitem(last=False)
    return hits


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=40_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    import numpy as np

    from nmp.cache import engine, policy
    from nmp.cache.requests import request_stream
    from nmp.cache.serve import CacheConfig, layer_bytes
    from nmp.workload import load_workload

    spec = load_workload("criteo-kaggle")
    stream = request_stream(spec, args.requests, seed=0)
    uniq, inv = np.unique(stream.keys, return_inverse=True)
    inv = inv.astype(np.int64)
    n = stream.lookups
    print(f"criteo-kaggle: {args.requests} requests, {n} lookups, {uniq.size} distinct keys")
    subst = np.where(np.arange(uniq.size) % 3 == 0, np.arange(uniq.size)[::-1], -1)
    rates = {}
    for name in policy.names():
        pol = policy.get(name)
        b1, b2, b3 = layer_bytes(CacheConfig(policy=name, l1_mb=1.0))
        caps = (b1 // 64, b2 // 24, b3 // 16)
        engine.simulate(inv[:1000], stream.req_off[:2] * 0 + [0, 1000], subst, caps,
                        pol.insert_rule, pol.hit_rule)  # fmt: skip
        best = float("inf")
        for _ in range(args.repeat):
            t0 = time.process_time()
            engine.simulate(inv, stream.req_off, subst, caps, pol.insert_rule, pol.hit_rule)
            best = min(best, time.process_time() - t0)
        rates[name] = n / best
        print(f"  simulate {name:10s} caps {caps}: {n / best / 1e6:6.2f} M lookups/s")
    t0 = time.process_time()
    python_lru(inv, 1 << 14)
    py = n / (time.process_time() - t0)
    print(f"  plain-Python OrderedDict LRU (peer): {py / 1e6:6.2f} M lookups/s; numba LRU "
          f"{rates['lru'] / py:.1f}x")  # fmt: skip

    from nmp.cache.kvstore import BACKENDS, measure_reads, open_store
    from nmp.cache.table import init_rows

    rows = init_rows(uniq, stream.table_offsets, 16, 0)
    got = {}
    for name in BACKENDS:
        with tempfile.TemporaryDirectory() as d:
            store = open_store(name, d, 16)
            t0 = time.process_time()
            store.put_rows(uniq, rows)
            w = time.process_time() - t0
            m = measure_reads(store, stream.keys, stream.req_off, 4000)
            store.close()
        got[name] = m
        print(f"  backend {name:6s}: write {uniq.size / w / 1e3:7.1f} K rows/s; read "
              f"{m['lookups_per_s'] / 1e3:7.1f} K lookups/s, {m['lookup_us']:.2f} us/lookup, "
              f"request (26 lookups) avg {m['request_avg_us']:.1f} us, median "
              f"{m['request_p50_us']:.1f} us, p90 "
              f"{m['request_p90_us']:.1f} us")  # fmt: skip
    print(f"  sqlite / lmdb lookups/s: "
          f"{got['sqlite']['lookups_per_s'] / got['lmdb']['lookups_per_s']:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
