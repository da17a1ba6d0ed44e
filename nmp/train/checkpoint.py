"""Checkpoints to real files, and the checkpoint interval (Young, Daly).

A checkpoint is one ``.npz`` of the embedding records (rows with optimizer state), the dense
parameters and the step, written to a temporary name and renamed, so a crash never leaves a
half-written checkpoint. Partial (CPR) checkpoints hold a subset of rows with their indices.

Interval (PAPERS.md, "Checkpoint interval"; δ = time to write one checkpoint, M = MTBF):
Young ``τ = sqrt(2 δ M)``; Daly ``τ = sqrt(2 δ M)·[1 + ⅓·sqrt(δ/2M) + (δ/2M)/9] − δ`` for
δ < 2M, else ``τ = M``.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np

from nmp.errors import NmpError
from nmp.fileio import atomic_file


def young_interval(delta: float, mtbf: float) -> float:
    return math.sqrt(2.0 * delta * mtbf)


def daly_interval(delta: float, mtbf: float) -> float:
    if delta >= 2.0 * mtbf:
        return mtbf
    x = delta / (2.0 * mtbf)
    return math.sqrt(2.0 * delta * mtbf) * (1.0 + math.sqrt(x) / 3.0 + x / 9.0) - delta


def save_npz(path: Path, **arrays: np.ndarray) -> float:
    """Write ``arrays`` to ``path`` atomically; returns the measured wall time in seconds."""
    t0 = time.perf_counter()
    try:
        # a fresh temporary name, synced and renamed; a link or device at ``path`` refused
        with atomic_file(path) as fh:
            np.savez(fh, **arrays)  # type: ignore[arg-type]  # numpy's stub: allow_pickle
    except OSError as exc:
        raise NmpError(f"cannot write checkpoint: {exc.strerror}", file=str(path)) from None
    return time.perf_counter() - t0


def load_npz(path: Path) -> dict[str, np.ndarray]:
    try:
        with np.load(path) as z:
            return {k: z[k] for k in z.files}
    except OSError as exc:
        raise NmpError(f"cannot read checkpoint: {exc}", file=str(path)) from None
