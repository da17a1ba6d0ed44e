"""Table-wise greedy sharding, as TorchRec's planner does it: the shared part of the baselines.

Tables are taken in descending order of a per-table key (size, lookups, or both) and each goes to
the GPU whose summed key is lowest so far (ties: lowest GPU id). Then, per GPU, whole tables go to
HBM while they fit, in descending order of lookups per byte (the best use of HBM that a
table-wise planner can make without per-row statistics; a table either fits whole or lives in
the host tier, like TorchRec's fused vs fused-UVM kernels). No row statistics are used.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from nmp.errors import NmpError
from nmp.shard.placement import Placement, TablePlacement
from nmp.shard.registry import ShardProblem
from nmp.shard.stats import TableStats


def greedy_place(
    name: str, problem: ShardProblem, key: Callable[[list[TableStats]], np.ndarray]
) -> Placement:
    problem.check_capacity()
    t0 = time.perf_counter()
    tables = list(problem.stats.tables)
    keys = np.asarray(key(tables), dtype=float)
    order = np.argsort(-keys, kind="stable")
    load = np.zeros(problem.gpus)
    owner = np.zeros(len(tables), dtype=np.int64)
    for t in order:
        g = int(np.argmin(load))
        owner[t] = g
        load[g] += keys[t]
    in_hbm = np.zeros(len(tables), dtype=bool)
    for g in range(problem.gpus):
        mine = [t for t in range(len(tables)) if owner[t] == g]
        mine.sort(key=lambda t: (-tables[t].lookups_per_batch / tables[t].bytes_, t))
        free = problem.hbm_bytes_per_gpu
        for t in mine:
            if tables[t].bytes_ <= free:
                in_hbm[t] = True
                free -= tables[t].bytes_
    host = sum(t.bytes_ for t, h in zip(tables, in_hbm, strict=True) if not h)
    if host > problem.host_bytes:
        raise NmpError(
            f"sharder '{name}': the tables left out of HBM need {host / 2**30:.2f} GiB of host "
            f"memory, the topology has {problem.host_bytes / 2**30:.2f} GiB"
        )
    placed = tuple(
        TablePlacement(
            int(owner[t]),
            tables[t].num_rows,
            None if in_hbm[t] else np.empty(0, dtype=np.int64),
        )
        for t in range(len(tables))
    )
    return Placement(name, problem.gpus, placed, time.perf_counter() - t0)
