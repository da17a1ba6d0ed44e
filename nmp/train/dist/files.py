"""Checkpoint files of a distributed run: one file per process per save, in the run folder.

``ckpt/step-<S>/server:<n>.npz`` holds a server's rows and records at the start of step ``S``
(all its rows for a full save, CPR's chosen rows for a partial one); ``dense.npz`` worker 0's
MLP replica (weights and optimizer state). Files are written atomically
(:func:`nmp.train.checkpoint.save_npz`). A save is *complete* when every part is on disk: each
writer adds one to ``ckpt/<S>`` in the store; the launcher and a replacement only use complete
saves. Full recovery rolls every process back to the newest complete full save; partial
recovery (CPR) rebuilds a replacement's rows from the newest complete full save, overridden by
every newer complete partial save, oldest first.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from nmp.train.checkpoint import load_npz, save_npz


def part_name(role: str) -> str:
    """The file of ``role``'s part of a save (``server:1`` -> ``server-1.npz``)."""
    return role.replace(":", "-") + ".npz"


# what this process's restores did (their model's counts, nmp.train.dist.runphases): bytes
# and files read from saves, round trips to the rendezvous store
LOADED_BYTES = [0]
LOADED_FILES = [0]
STORE_OPS = [0]


def load(path: Path) -> dict[str, np.ndarray]:
    got = load_npz(Path(path))
    LOADED_BYTES[0] += sum(a.nbytes for a in got.values())
    LOADED_FILES[0] += 1
    return got


def save(ctx, step: int, name: str, parts: int, full: bool, **arrays: np.ndarray) -> float:
    """Write this process's part of the save of ``step``; returns the write's wall seconds."""
    folder = ctx.ckpt_dir(step)
    folder.mkdir(parents=True, exist_ok=True)
    seconds = save_npz(folder / part_name(name), **arrays)
    store = ctx.store
    store.set(f"ckpt/kind/{step}", "full" if full else "partial")
    # (every part counts itself in; the last part of a full save names it the latest)
    complete = int(store.add(f"ckpt/{step}", 1)) == parts
    if complete and full:
        store.set("ckpt/latest_full", str(step))
    return seconds


def complete(ctx, step: int, parts: int) -> bool:
    store = ctx.store
    STORE_OPS[0] += 1
    if not store.check([f"ckpt/{step}"]):
        return False
    STORE_OPS[0] += 1
    return int(store.add(f"ckpt/{step}", 0)) >= parts


def latest_full(ctx) -> int | None:
    store = ctx.store
    STORE_OPS[0] += 1
    if not store.check(["ckpt/latest_full"]):
        return None
    STORE_OPS[0] += 1
    return int(store.get("ckpt/latest_full"))


def partial_restore(ctx, role: str, rows: np.ndarray, before: int) -> np.ndarray:
    """``role``'s records rebuilt from the newest complete full save and the complete partial
    saves after it (steps below ``before``), newer values overriding older ones."""
    full = latest_full(ctx)
    z = load(ctx.ckpt_dir(full) / part_name(role))
    recs = z["records"].copy()
    every = ctx.spec.ckpt_every
    parts = ctx.spec.servers + 1
    for step in range(full + every, before, every):
        if not complete(ctx, step, parts):
            continue
        STORE_OPS[0] += 1
        if ctx.store.get(f"ckpt/kind/{step}") != b"partial":
            continue
        p = load(ctx.ckpt_dir(step) / part_name(role))
        recs[np.searchsorted(rows, p["rows"])] = p["records"]
    return recs


class Saver:
    """When and what a process saves, from the strategy's kind: ``rollback`` saves everything
    every ``ckpt_every`` steps; ``partial`` (CPR) saves every ``ckpt_every`` steps, every
    ``cpr_full_every``-th save in full and the others the rows its tracker chose."""

    def __init__(self, ctx, role: str) -> None:
        self.ctx, self.role = ctx, role
        self.write_s: list[float] = []
        self.bytes = 0
        self.writes: list[tuple[int, float, int]] = []  # (step, seconds, bytes) per save

    def due(self, step: int) -> bool:
        every = self.ctx.spec.ckpt_every
        return self.ctx.strategy.writes_checkpoints and every > 0 and step % every == 0

    def is_full(self, step: int) -> bool:
        if self.ctx.strategy.every_save_full:
            return True
        return (step // self.ctx.spec.ckpt_every) % self.ctx.cfg.cpr_full_every == 0

    def save(self, step: int, *, full: bool, **arrays: Any) -> None:
        parts = self.ctx.spec.servers + 1
        if complete(self.ctx, step, parts):
            return  # re-executing after a rollback: this save exists
        t0 = time.perf_counter()
        save(self.ctx, step, self.role, parts, full, **arrays)
        seconds = time.perf_counter() - t0
        nbytes = sum(np.asarray(a).nbytes for a in arrays.values())
        self.write_s.append(seconds)
        self.bytes += nbytes
        self.writes.append((step, seconds, nbytes))
