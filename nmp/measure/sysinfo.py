"""What the operating system says about the machine: CPU model, cores, clock, SIMD width and the
caches (``/sys/devices/system/cpu/cpu0/cache``)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from nmp.errors import NmpError

CACHE_ROOT = Path("/sys/devices/system/cpu/cpu0/cache")


@dataclass(frozen=True)
class CacheInfo:
    level: int
    kib: float
    ways: int
    shared_cpus: int  # CPUs sharing this cache


def parse_size_kib(text: str) -> float:
    """sysfs cache sizes: '48K', '2048K', '300M' (KiB by default)."""
    t = text.strip().upper()
    mult = {"K": 1.0, "M": 1024.0, "G": 1024.0**2}
    try:
        if t and t[-1] in mult:
            return float(t[:-1]) * mult[t[-1]]
        return float(t) / 1024.0
    except ValueError:
        raise NmpError(f"cache size {text.strip()!r} is not a size (like 48K)") from None


def count_cpus(cpu_list: str) -> int:
    """'0-3,8' -> 5."""
    n = 0
    for part in cpu_list.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        n += int(hi or lo) - int(lo) + 1
    return n


def data_caches(root: Path = CACHE_ROOT) -> dict[int, CacheInfo]:
    """The data (or unified) caches of CPU 0 by level."""
    out: dict[int, CacheInfo] = {}
    if not root.is_dir():
        raise NmpError(f"{root}: no cache information (not Linux, or sysfs not mounted)")
    for index in sorted(root.glob("index*")):

        def read(name: str, index: Path = index) -> str:
            return (index / name).read_text().strip()

        if read("type") == "Instruction":
            continue
        level = int(read("level"))
        ways_file = index / "ways_of_associativity"
        ways = int(read("ways_of_associativity")) if ways_file.exists() else 16
        shared = index / "shared_cpu_list"
        cpus = count_cpus(read("shared_cpu_list")) if shared.exists() else 1
        out[level] = CacheInfo(level, parse_size_kib(read("size")), max(ways, 1), cpus)
    return out


def cpu_model(cpuinfo: str | None = None) -> str:
    text = cpuinfo if cpuinfo is not None else _read("/proc/cpuinfo")
    for line in text.splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return os.uname().machine


def clock_ghz(cpuinfo: str | None = None) -> float:
    """The nominal clock /proc/cpuinfo gives (its first 'cpu MHz'); 0 where it gives none."""
    text = cpuinfo if cpuinfo is not None else _read("/proc/cpuinfo")
    for line in text.splitlines():
        if line.startswith("cpu MHz"):
            return float(line.split(":", 1)[1]) / 1000.0
    return 0.0


def cpu_flags(cpuinfo: str | None = None) -> set[str]:
    """The first CPU's feature flags (x86 'flags', Arm 'Features'; empty where there are none)."""
    text = cpuinfo if cpuinfo is not None else _read("/proc/cpuinfo")
    for line in text.splitlines():
        if line.startswith(("flags", "Features")):
            return set(line.split(":", 1)[1].split())
    return set()


def simd_lanes(cpuinfo: str | None = None) -> int:
    """FP32 lanes of one vector add: 16 with AVX-512, 8 with AVX2, 4 otherwise (SSE, NEON)."""
    flags = cpu_flags(cpuinfo)
    return 16 if "avx512f" in flags else 8 if "avx2" in flags else 4


def usable_cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


__all__ = [
    "CacheInfo",
    "clock_ghz",
    "count_cpus",
    "cpu_model",
    "data_caches",
    "parse_size_kib",
    "simd_lanes",
    "usable_cpus",
]
