"""The compressed all-to-all's figures: a run's summary, its AUC against the same run
uncompressed, the comparison's compressed row, and their text."""

from __future__ import annotations

from typing import Any

import numpy as np

SUMMARY_KEYS = (
    "compression_ratio",
    "alltoall_bytes",
    "step_time_ns_uncompressed",
    "step_time_ns_compressed",
    "speedup_modeled",
)


def compression_summary(res: Any) -> dict[str, Any]:
    """The compressed all-to-all's figures of a finished run (empty without compression)."""
    tr = res.trainer
    if tr is None or tr.alltoall is None:
        return {}
    return tr.alltoall.summary(tr.geo, tr.cfg.codec_gbps)


def compression_report(cfg: Any, strategy: str, failures: list, res: Any) -> dict[str, Any]:
    """Summary of ``res`` plus its AUC against the same run uncompressed (with the noise band
    of :func:`nmp.train.rows.auc_change`)."""
    from dataclasses import replace

    from nmp.train.rows import auc_change
    from nmp.train.trainer import run

    base = run(replace(cfg, compress="none"), strategy, failures)
    change, noise = auc_change(res, base)
    return {
        **compression_summary(res),
        "auc_uncompressed": base.metrics["auc"],
        "auc_change_vs_uncompressed": change,
        "auc_change_noise95": noise,
        "auc_change_within_noise": (
            None if change is None or noise is None else bool(abs(change) <= noise)
        ),
    }


def compressed_row(cfg: Any, strategy: str, failures: list, base: Any) -> dict[str, Any] | None:
    """``nmp train --compare``'s row for ``strategy`` (the comparison's strategy that keeps
    parity) with the all-to-all compressed; the parity deltas stay uncompressed (see
    :mod:`nmp.train.alltoall.exchange`). None without ``train.compress``."""
    if not cfg.compresses:
        return None
    from nmp.train.rows import result_row
    from nmp.train.trainer import run

    res = run(cfg, strategy, failures)
    row = result_row(res, base)
    row["strategy"] = f"{strategy}+{cfg.compress}"
    summary = compression_summary(res)
    row.update({k: summary[k] for k in SUMMARY_KEYS})
    row["parity_compressed"] = "no: lossy parity deltas would break XOR recovery"
    row["parity_delta_zstd_ratio"] = parity_delta_ratio(res.trainer)
    return row


def parity_delta_ratio(trainer: Any) -> float:
    """Lossless (zstd) ratio of the parity deltas ``old XOR new`` of one more step of a
    finished run: what compressing ECRec's parity traffic exactly would gain. The step runs
    on the finished trainer (after its result was taken)."""
    from nmp.compress.stages import zstd_compress

    seen: list[Any] = []
    trainer.train_step(between_hook=seen.append)
    p = seen[0]
    delta = np.ascontiguousarray(p.old).view(np.uint32) ^ np.ascontiguousarray(p.new).view(
        np.uint32
    )
    return delta.nbytes / max(1, len(zstd_compress(delta.tobytes())))


def print_compression(row: dict[str, Any]) -> None:
    ch, noise = row.get("auc_change_vs_uncompressed"), row.get("auc_change_noise95")
    verdict = "" if ch is None else f" ({ch:+.4f} ±{noise:.4f} vs uncompressed)"
    print(
        f"  all-to-all: {row['compress']} eb {row['eb']} ({row['eb_schedule']}, "
        f"{row['eb_tables']} tables): ratio {row['compression_ratio']:.2f}, "
        f"{row['alltoall_bytes_uncompressed']} -> {row['alltoall_bytes']} bytes{verdict}"
    )
    print(
        f"  step time on {row['network']}: {row['step_time_ns_uncompressed'] / 1e3:.1f} us -> "
        f"{row['step_time_ns_compressed'] / 1e3:.1f} us, speedup {row['speedup_modeled']:.3f} "
        f"(codec {row['codec_compress_gbps']:.2f}/{row['codec_decompress_gbps']:.2f} GB/s, "
        f"{row['codec_gbps_source']})"
    )
