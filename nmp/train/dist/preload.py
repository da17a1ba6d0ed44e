"""Imported once by the fork server of a distributed run: compile and load what every role
process would otherwise compile or load on its own (numba kernels of the gather-reduce and the
parity XOR, torch's modules and a forward pass), so that forked processes start in milliseconds.

What it must not do: run a backward pass or touch CUDA. On a CUDA build of torch the first
backward starts autograd's per-device threads, and a process forked after that refuses autograd
("Unable to handle autograd's threading in combination with fork-based multiprocessing"); an
initialised CUDA context does not survive a fork either. The forward below runs under
``torch.no_grad`` and on the CPU; ``tests/train/test_preload.py`` checks both.
"""

from __future__ import annotations


def _warm() -> None:
    import numpy as np

    from nmp.arch.parity import xor_into
    from nmp.train import dense as dense_step
    from nmp.train.config import TrainConfig
    from nmp.train.shard import NodeMemory, ShardMap, micro_row_grads, request_for
    from nmp.train.trainer import make_dense, resolve_geometry

    cfg = TrainConfig(max_tables=2, max_rows=64, batch=8, bottom=(4,), top=(4,), dim=4)
    geo = resolve_geometry(cfg)
    shard = ShardMap(geo.table_rows, 3, 1)
    g = shard.global_rows(np.zeros((len(geo.table_rows), 8, geo.pooling), dtype=np.int64))
    values = np.zeros((shard.total_rows, geo.dim), np.float32)
    for arch in ("recnmp",):
        mem = NodeMemory(arch, "", 0, shard, 0, geo.dim)
        mem.gather(request_for(shard, 0, g), lambda r: values[r], timed=True)
    xor_into(np.zeros((2, 8), np.uint8), np.array([0, 1]), np.ones((2, 8), np.uint8))
    model = make_dense(cfg, geo)
    pooled = np.zeros((8, len(geo.table_rows), geo.dim), np.float32)
    dense_step.predict(model, np.zeros((8, 13), np.float32), pooled)  # forward only, no_grad
    micro_row_grads(g, pooled)


WARM_ERROR: str | None = None  # why the warm-up failed, if it did (the tests read it)
try:
    _warm()
except Exception as exc:  # noqa: BLE001 - a warm-up only: the processes compile what is missing
    WARM_ERROR = f"{type(exc).__name__}: {exc}"
