"""Resource guard: estimate the memory a command will allocate before it allocates, and refuse
a run that cannot fit with one line naming the key that makes it large.

The estimates are linear models of what the replay and the design-point models allocate, with
coefficients measured on this code (peak RSS and tracemalloc peaks, Zen 5 VM, November 2026):

- the DRAM engine keeps per-channel controller state: 2.5 KiB per DDR4 channel measured with
  65536 channels (native engine), 5 KiB per channel reported for 2^20 channels in issue 25:
  :data:`CHANNEL_BYTES` takes the larger;
- the numba engine (ranks > 8 or banks > 64 per channel) keeps a timing history per bank:
  about 1 KiB per bank measured with 1024 ranks (:data:`BANK_BYTES_NUMBA`);
- every request of a replay: 18 B per request measured in the engine (arrive/depart/done,
  forwarded), plus the parsed trace and its text: :data:`REQUEST_BYTES` = 64 (chosen: 3.5x the
  engine's figure, for the parse);
- every 64-B line a design point moves: 81 B measured for the host CPU on ``recross-eval``
  (batch 64 -> 512; indices, request streams, engine arrays), 41 B for ReCross and TRiM-B:
  :data:`LINE_BYTES` = 96 (chosen: the host CPU's figure with 1.2x headroom);
- the process itself (:data:`REPLAY_BASE_BYTES`, :data:`POINT_BASE_BYTES`).

Checked against the peak RSS (VmHWM) of fresh processes (tests/evaluate/test_guard.py): a replay on
32768 channels, 230 MB measured, 390 MB estimated; a host-CPU point of batch 256, 518 MB
measured, 561 MB estimated.

The limit is ``--max-memory`` (``8G``, ``512M``, bytes), else ``$NMP_MAX_MEMORY``, else 90% of
the memory the kernel reports available now (``MemAvailable``): a run that would push the
machine into swap or the OOM killer is refused before it starts, not minutes later.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from nmp.errors import NmpError

CHANNEL_BYTES = 5 * 1024
BANK_BYTES_NUMBA = 1024
REQUEST_BYTES = 64
LINE_BYTES = 96
# Each point of a sweep: 1.45 KiB measured for `nmp evaluate --check` of 262,144 points (peak
# RSS); a run also holds each point's result row and the summary (chosen: 4 KiB, 2.8x).
SWEEP_POINT_BYTES = 4096
# The process before the work: the interpreter and its libraries, peak RSS of a tiny run
# (measured: a 100-request replay 193 MiB; a batch-2 ReCross design point 335 MiB, with scipy's
# LP solver and the arch model's kernels).
REPLAY_BASE_BYTES = 200 * 1024**2
POINT_BASE_BYTES = 340 * 1024**2
AVAILABLE_FRACTION = 0.9  # chosen: leave the kernel and the other processes a tenth
_UNITS = {"": 1, "b": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d*)?)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class Estimate:
    """``bytes_`` a run will allocate; ``key`` the input that makes it large; ``detail`` how."""

    bytes_: float
    key: str
    detail: str


def parse_size(text: str, *, what: str = "--max-memory") -> int:
    """``"8G"``, ``"512MiB"``, ``"1.5g"``, ``"1000000"`` (bytes) -> bytes."""
    m = _SIZE.match(str(text))
    if not m:
        raise NmpError(f"{what} {text!r}: expected a size such as 8G, 512M or a byte count")
    value = float(m.group(1)) * _UNITS[m.group(2).lower()]
    if value <= 0:
        raise NmpError(f"{what} {text!r}: must be positive")
    return int(value)


def format_bytes(n: float) -> str:
    for unit, size in (("TiB", 1024**4), ("GiB", 1024**3), ("MiB", 1024**2)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n / 1024:.3g} KiB"


def available_bytes() -> int | None:
    """The memory the kernel says can be allocated without swapping, or None where unknown."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def limit_bytes(max_memory: str | None = None) -> tuple[int | None, str]:
    """(the limit in bytes or None for none, where it came from)."""
    if max_memory:
        return parse_size(max_memory), "--max-memory"
    env = os.environ.get("NMP_MAX_MEMORY", "").strip()
    if env:
        return parse_size(env, what="NMP_MAX_MEMORY"), "NMP_MAX_MEMORY"
    avail = available_bytes()
    if avail is None:
        return None, "unknown"
    return int(avail * AVAILABLE_FRACTION), "90% of the available memory; --max-memory to change"


def check(estimate: Estimate, max_memory: str | None = None) -> None:
    """Raise :class:`NmpError` when ``estimate`` exceeds the limit."""
    limit, source = limit_bytes(max_memory)
    if limit is None or estimate.bytes_ <= limit:
        return
    raise NmpError(
        f"this run needs about {format_bytes(estimate.bytes_)} of memory ({estimate.detail}), "
        f"above the limit of {format_bytes(limit)} ({source})",
        key=estimate.key,
    )


def memory_estimate(
    spec: Any, requests: float, *, key_of_requests: str, base: float = REPLAY_BASE_BYTES
) -> Estimate:
    """The peak memory of a process replaying ``requests`` on the DRAM system ``spec`` (a
    MemorySpec): ``base`` plus what the work allocates."""
    o = spec.org
    banks_per_channel = o.ranks * o.bankgroups * o.banks
    numba = o.ranks > 8 or banks_per_channel > 64  # the C engine's limits (nmp.memory.native)
    terms = {
        "channels": o.channels * CHANNEL_BYTES,
        "ranks": o.channels * banks_per_channel * (BANK_BYTES_NUMBA if numba else 0),
        key_of_requests: requests * REQUEST_BYTES,
    }
    key = max(terms, key=terms.__getitem__)
    detail = (
        f"{o.channels} channels x {o.ranks} ranks x {o.bankgroups * o.banks} banks, "
        f"{requests:,.0f} requests"
    )
    return Estimate(base + sum(terms.values()), key, detail)


def replay_estimate(spec: Any, trace_bytes: int, *, compressed: bool) -> Estimate:
    """``nmp replay``: the trace's requests from its file size (12 B per text line, 3 B per
    gzip line: chosen below the 14 and 3.5-3.8 measured on ``traces/``, so that the estimate
    errs high)."""
    requests = trace_bytes / (3 if compressed else 12)
    est = memory_estimate(spec, requests, key_of_requests="trace")
    key = {"channels": "--channels", "ranks": "--ranks"}.get(est.key, est.key)
    return Estimate(est.bytes_, key, est.detail)


def add_argument(parser) -> None:
    """The ``--max-memory`` flag of a command that runs a model."""
    parser.add_argument(
        "--max-memory",
        metavar="SIZE",
        help="refuse a run whose estimated memory exceeds SIZE (8G, 512M; default: 90%% of "
        "the available memory, or $NMP_MAX_MEMORY)",
    )
