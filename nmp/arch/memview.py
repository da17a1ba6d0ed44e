"""A thin adapter over :mod:`nmp.memory` specs: the few figures the architectures read.

Kept in one place so the rest of ``nmp.arch`` does not depend on how ``MemorySpec`` stores its
organization and timing (attributes or mappings).
"""

from __future__ import annotations

from typing import Any

from nmp.memory.spec import trcd_cycles


def _get(obj: Any, name: str) -> Any:
    if isinstance(obj, dict):
        return obj[name]
    return getattr(obj, name)


def timing(spec: Any, name: str) -> int:
    """A timing parameter in DRAM cycles (``nBL``, ``nCCDL``, ``nRC`` ...)."""
    return int(_get(spec.timing, name))


def trcd(spec: Any) -> int:
    """ACT to RD in DRAM cycles: :func:`nmp.memory.spec.trcd_cycles` of the timing."""
    return trcd_cycles(spec.timing)


def org(spec: Any, name: str) -> int:
    return int(_get(spec.org, name))


def tck_ns(spec: Any) -> float:
    return float(spec.tck_ns)


def tx_bytes(spec: Any) -> int:
    return org(spec, "tx_bytes")


def lines_per_page(spec: Any) -> int:
    """Column addresses of ``tx_bytes`` in one DRAM row (page) of a rank."""
    return org(spec, "columns") // org(spec, "prefetch")


def chips_per_rank(spec: Any) -> int:
    try:
        return max(1, org(spec, "channel_width_bits") // org(spec, "device_width_bits"))
    except (AttributeError, KeyError):
        return 1


def banks_per_rank(spec: Any) -> int:
    return org(spec, "bankgroups") * org(spec, "banks")


def channel_peak_gbps(spec: Any) -> float:
    """One channel's data-bus peak: tx_bytes per nBL cycles (bytes/ns = GB/s)."""
    return tx_bytes(spec) / (timing(spec, "nBL") * tck_ns(spec))


def io_pj_per_bit(spec: Any) -> float:
    """Off-chip I/O energy per bit from the DRAM pins to the host (0 without energy figures)."""
    return float(spec.energy.io_pj_per_bit) if spec.energy is not None else 0.0


__all__ = [
    "banks_per_rank",
    "channel_peak_gbps",
    "chips_per_rank",
    "io_pj_per_bit",
    "lines_per_page",
    "org",
    "timing",
    "tck_ns",
    "tx_bytes",
]
