"""What a distributed run ended with: the state's fingerprint, parity consistency, traffic.

The servers' final records are put back in global row order and hashed with worker 0's MLP
replica by :func:`nmp.train.trainer.state_digest`, the single-process trainer's fingerprint:
equal hashes mean bit-identical state. Under a coded strategy every server's parity is checked
against a fresh XOR of the final data (``parity_consistent``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from nmp.train.checkpoint import load_npz


def final_state(run_dir: Path, servers: int, width: int, total_rows: int):
    """(records float32 [rows, width] in row order, {role: parity arrays})."""
    records = np.zeros((total_rows, width), dtype=np.float32)
    parity = {}
    for n in range(servers):
        z = load_npz(Path(run_dir) / "final" / f"server-{n}.npz")
        records[z["rows"]] = z["records"]
        parity[n] = (z["pstripes"], z["parity"])
    return records, parity


def parity_consistent(records: np.ndarray, parity: dict, k: int) -> bool:
    """Whether every server's parity is the XOR of its stripes' data rows, bit for bit."""
    total, width = records.shape
    raw = records.view(np.uint8).reshape(total, 4 * width)
    for stripes, par in parity.values():
        want = np.zeros_like(par)
        for j in range(k):
            rows = stripes * k + j
            real = rows < total
            want[real] ^= raw[rows[real]]
        if not np.array_equal(want, par):
            return False
    return True


def digest(run_dir: Path, ctx) -> dict[str, Any]:
    """The fingerprint of the run's final state and, under a coded strategy, parity's check."""
    from nmp.train.trainer import state_digest

    records, parity = final_state(run_dir, ctx.spec.servers, ctx.width, ctx.shard.total_rows)
    dense = load_npz(Path(run_dir) / "final" / "worker-0.npz")
    for w in range(1, ctx.spec.workers):  # every replica of the MLP ended the same
        other = load_npz(Path(run_dir) / "final" / f"worker-{w}.npz")
        if any(not np.array_equal(dense[k], other[k]) for k in dense):
            raise AssertionError(f"worker {w}'s MLP replica differs from worker 0's")
    out: dict[str, Any] = {"final_state_sha256": state_digest(records, dense)}
    if ctx.coded:
        out["parity_consistent"] = parity_consistent(records, parity, ctx.shard.k)
    return out
