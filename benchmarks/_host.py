"""The machine a benchmark ran on, printed beside its figures."""

from __future__ import annotations

import os
import platform
from pathlib import Path


def machine() -> str:
    """CPU model (with its x86 family and model, and the vector extensions the engine's and the
    gather's code paths depend on), core count and Python version. A VM often names its CPU
    only "AMD EPYC": the family tells a Zen 3 (25, no AVX-512) from a Zen 4 or 5."""
    model = platform.processor() or platform.machine()
    fields: dict[str, str] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, sep, value = line.partition(":")
            if not sep:
                if fields:
                    break  # the first CPU's block is enough
                continue
            fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    model = fields.get("model name", model)
    if "cpu family" in fields and "model" in fields:
        core = amd_core(fields.get("vendor_id", ""), fields["cpu family"], fields["model"])
        model += f" (family {fields['cpu family']} model {fields['model']}{core})"
    flags = set(fields.get("flags", "").split())
    if flags:
        vec = (
            "AVX-512"
            if "avx512f" in flags
            else "AVX2, no AVX-512"
            if "avx2" in flags
            else "no AVX2"
        )
        model += f", {vec}, {'GFNI' if 'gfni' in flags else 'no GFNI'}"
    return f"{model}, {os.cpu_count()} cores, Python {platform.python_version()}"


def amd_core(vendor: str, family: str, model: str) -> str:
    """ ", Zen N" for an AMD family and model, or "" where not known here. The ranges are the
    kernel's and AMD's revision guides': family 25 (0x19) models 0x10-0x1f, 0x60-0x7f and
    0xa0-0xaf are Zen 4 (Genoa, Raphael, Phoenix, Bergamo), the rest Zen 3; 26 (0x1a) Zen 5;
    23 (0x17) Zen to Zen 2."""
    if vendor != "AuthenticAMD" or not (family.isdigit() and model.isdigit()):
        return ""
    fam, mod = int(family), int(model)
    if fam == 25:
        zen4 = 0x10 <= mod <= 0x1F or 0x60 <= mod <= 0x7F or 0xA0 <= mod <= 0xAF
        return ", Zen 4" if zen4 else ", Zen 3"
    return {26: ", Zen 5", 23: ", Zen to Zen 2"}.get(fam, "")


def load() -> str:
    """The load average (1 / 5 / 15 min), or '-' where the OS has none."""
    return " / ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "-"


def _schedstat(path: str) -> tuple[float, float]:
    """(seconds on a CPU, seconds runnable but waiting for one) of ``/proc/.../schedstat``."""
    with open(path) as fh:
        on_cpu_ns, wait_ns = fh.read().split()[:2]
    return int(on_cpu_ns) / 1e9, int(wait_ns) / 1e9


def queue_wait_s(pid: int | None = None) -> float | None:
    """Seconds the main thread of process ``pid`` (alive, or a zombie not yet reaped; None:
    the calling thread) spent runnable but waiting for a CPU (Linux's ``run_delay``): on a
    shared machine, the part of its wall time that other processes took; None where the kernel
    keeps no scheduler statistics. One thread's, the one whose wall time is measured: an idle
    helper thread (a BLAS pool) waits without delaying it, and a thread it waits for counts as
    its being blocked (the larger figure: wall less this wait is not understated).

    A wall time less this wait is what the thread took while it had a core (or was blocked on
    I/O, a lock, a sleep): on a machine with a free core, the wall time (caches and memory
    bandwidth still shared)."""
    path = "/proc/thread-self/schedstat" if pid is None else f"/proc/{pid}/schedstat"
    try:
        return _schedstat(path)[1]
    except (OSError, ValueError, IndexError):
        return None


def wait_and_reap(pid: int) -> tuple[int, float, float | None]:
    """Wait for child ``pid`` to exit; (its exit status, CPU seconds of all its threads, its
    main thread's queue wait: :func:`queue_wait_s` read before it is reaped, or None)."""
    wait = None
    if hasattr(os, "waitid"):
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)  # a zombie: /proc/pid still there
        wait = queue_wait_s(pid)
    _, status, usage = os.wait4(pid, 0)
    return status, usage.ru_utime + usage.ru_stime, wait
