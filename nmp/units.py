"""Unit conversions in one place; names carry units (``t_ns``, ``cycles``, ``energy_pj``)."""

from __future__ import annotations

import math

KIB = 1024
MIB = 1024**2
GIB = 1024**3

PS_PER_NS = 1000.0
NS_PER_S = 1e9
PJ_PER_NJ = 1000.0
PJ_PER_J = 1e12


def cycles_to_ns(cycles: float, tck_ns: float) -> float:
    """Cycles of a clock with period ``tck_ns`` to nanoseconds."""
    return cycles * tck_ns


def ns_to_cycles(t_ns: float, tck_ns: float) -> int:
    """Nanoseconds to whole cycles of a clock with period ``tck_ns``, rounded up (JEDEC style)."""
    return math.ceil(t_ns / tck_ns - 1e-9)


def mhz_to_tck_ns(freq_mhz: float) -> float:
    return 1000.0 / freq_mhz


def bandwidth_gbps(bytes_: float, t_ns: float) -> float:
    """Bytes over nanoseconds in GB/s (10^9 bytes per second): bytes/ns is exactly GB/s."""
    return bytes_ / t_ns if t_ns > 0 else 0.0


def power_mw_to_energy_pj(power_mw: float, t_ns: float) -> float:
    """mW x ns = pJ."""
    return power_mw * t_ns


def vi_energy_pj(vdd_v: float, current_ma: float, t_ns: float) -> float:
    """Energy of a current drawn at a voltage for a time: V x mA x ns = pJ."""
    return vdd_v * current_ma * t_ns


def is_power_of_two(n: int) -> bool:
    return n > 0 and (n & (n - 1)) == 0


def log2_exact(n: int) -> int:
    """log2 of a power of two; raises ValueError otherwise."""
    if not is_power_of_two(n):
        raise ValueError(f"{n} is not a power of two")
    return n.bit_length() - 1
