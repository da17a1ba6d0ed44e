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
the memory the kernel reports available now (``MemAvailable``, or what the process's memory
cgroup still allows, if less): a run that would push the machine into swap or the OOM killer is
refused before it starts, not minutes later.
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
# nmp cache (no accuracy run): 408 MiB peak for 1,000 requests of criteo-kaggle; from 200,000
# to 800,000 requests (26 lookups each, dim 16) 636 -> 1,885 MiB: 80 B per lookup. Chosen: 96 B
# per lookup, and the touched keys' vectors (4 B x dim per lookup at most) on top.
CACHE_BASE_BYTES = 420 * 1024**2
CACHE_LOOKUP_BYTES = 96
# nmp shard (criteo-kaggle, size sharder): 219 MiB peak; profiling 33M lookups (64 batches of
# 20,000) 1,008 MiB, timing 8.3M lookups 388 MiB: 24 and 20 B per lookup; 100,000 GPUs 276 MiB:
# 600 B per GPU. Chosen: 32 B per lookup, 1 KiB per GPU.
SHARD_BASE_BYTES = 220 * 1024**2
SHARD_LOOKUP_BYTES = 32
SHARD_GPU_BYTES = 1024
# nmp train (criteo-kaggle, 5 steps): 438 MiB peak. Records: max_rows 200,000 -> 1,000,000 ->
# 4,000,000 (1.48 -> 5.57 -> 18.8 million rows of dim 16, row-wise Adagrad, ecrec) 905 -> 2,184
# -> 6,468 MiB: 313-324 B per row of 68 B of record (the records, their copies in the stores,
# parity and the optimizer; 290 B without ecrec); chosen: 6x the record. Samples: batch 128 ->
# 20,000 (33 batches held: a step's and 32 held-out) +632 MiB: 960 B per sample (chosen: 1.5
# KiB). Nodes: each memory node is a design of its own (nmp.arch) over its shard of the rows:
# 5 -> 100 -> 400 nodes (strategy none, 1 step) 520 -> 573 -> 655 MiB peak, about 350 KiB per
# node (chosen: 512 KiB; the 77 B per node measured before each node had its design).
# --extrapolate: 22 B per Monte-Carlo draw (2 x 10^6 draws) and
# 51 B per failure drawn (6.7 x 10^6 failures) (chosen: 32 and 80 B).
TRAIN_BASE_BYTES = 440 * 1024**2
TRAIN_RECORD_FACTOR = 6
TRAIN_SAMPLE_BYTES = 1536
# An MLP weight's bytes: itself, its gradient and two optimizer words, fp32 (chosen: Adam's
# count, the most any dense optimizer of the trainer keeps)
TRAIN_MLP_BYTES_PER_PARAM = 16
TRAIN_NODE_BYTES = 512 * 1024
TRIAL_BYTES = 32
FAILURE_BYTES = 80
# --extrapolate's one costed step: 605 B per lookup measured above its fixed part (the ecrec
# setup, criteo-terabyte, batch 20,000 -> 200,000: 0.52 M -> 5.2 M lookups, peak RSS 0.78 ->
# 3.49 GB; the backends' replay of every lookup's bursts); chosen 640
STEP_LOOKUP_BYTES = 640
# nmp rtl export: 1,000 -> 1,000,000 stimulus entries of 64 bits, 180 -> 715 MiB peak: 535 B
# per entry, 8.4 B per bit (chosen: 12 B per bit).
TESTBENCH_BYTES_PER_BIT = 12
AVAILABLE_FRACTION = 0.9  # chosen: leave the kernel and the other processes a tenth
MAX_SIZE_BYTES = 2**60  # the largest size a flag may give: beyond it, a typing slip
_UNITS = {"": 1, "b": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
# compiled on first use (re's cache), not at import: 1.1 M instructions of every start (issue 43)
_SIZE = r"^\s*(\d+(?:\.\d*)?)\s*([kmgt]?)i?b?\s*$"


@dataclass(frozen=True)
class Estimate:
    """``bytes_`` a run will allocate; ``key`` the input that makes it large; ``detail`` how."""

    bytes_: float
    key: str
    detail: str
    file: str | None = None  # the file that makes it large (an input file), if any


def parse_size(text: str, *, what: str = "--max-memory") -> int:
    """``"8G"``, ``"512MiB"``, ``"1.5g"``, ``"1000000"`` (bytes) -> bytes."""
    m = re.match(_SIZE, str(text), re.IGNORECASE)
    if not m:
        raise NmpError(f"{what} {text!r}: expected a size such as 8G, 512M or a byte count")
    value = float(m.group(1)) * _UNITS[m.group(2).lower()]
    if value < 1:  # (0.5 read as a limit of 0 bytes)
        raise NmpError(f"{what} {text!r}: must be at least 1 byte")
    if not value <= MAX_SIZE_BYTES:  # (a number of 400 digits reads as inf)
        raise NmpError(f"{what} {text!r}: above 2^60 bytes (1 EiB), more than any machine has")
    return int(value)


def format_bytes(n: float) -> str:
    for unit, size in (("TiB", 1024**4), ("GiB", 1024**3), ("MiB", 1024**2)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n / 1024:.3g} KiB"


def _cgroup_room(proc: str = "/proc/self/cgroup", root: str = "/sys/fs/cgroup") -> int | None:
    """What this process's memory cgroup (a container's limit) still allows: its limit less its
    use (cgroup v2 ``memory.max``/``memory.current``, else v1's ``memory.limit_in_bytes``/
    ``memory.usage_in_bytes``); None where there is no limit. A container sees the host's
    MemAvailable, and would be killed long before that is reached."""
    try:
        with open(proc) as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":
            files = (f"{root}{path}/memory.max", f"{root}{path}/memory.current")
        elif "memory" in controllers.split(","):
            folder = f"{root}/memory{path}"
            files = (f"{folder}/memory.limit_in_bytes", f"{folder}/memory.usage_in_bytes")
        else:
            continue
        try:
            with open(files[0]) as fh:
                limit = fh.read().strip()
            with open(files[1]) as fh:
                used = int(fh.read().strip())
        except (OSError, ValueError):
            continue
        if limit.isdigit() and int(limit) < 2**60:  # "max" or a huge number: no limit
            return max(0, int(limit) - used)
    return None


def _address_space_room(status: str = "/proc/self/status") -> int | None:
    """What this process's address-space limit (``ulimit -v``, RLIMIT_AS) still allows: the
    soft limit less the address space in use (VmSize); None where there is no limit. Past it
    an allocation fails late, with a MemoryError that names no input."""
    try:
        import resource
    except ImportError:  # (not on Windows)
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY or soft < 0:
        return None
    used = 0
    try:
        with open(status) as fh:
            for line in fh:
                if line.startswith("VmSize:"):
                    used = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    return max(0, soft - used)


def available_bytes() -> int | None:
    """The memory that can be allocated without swapping (the kernel's MemAvailable), within
    this process's memory cgroup and its address-space limit, or None where unknown."""
    known = [
        v for v in (_meminfo_available(), _cgroup_room(), _address_space_room()) if v is not None
    ]
    return min(known) if known else None


def _meminfo_available() -> int | None:
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
        key=estimate.key or None,
        file=estimate.file,
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


# The shortest trace line (``LD 0x40`` and its newline: 8 B; chosen, 6 B, so that the bound
# below errs high): a trace text of N bytes holds at most N / 6 requests.
MIN_TRACE_LINE_BYTES = 6


def trace_text_bound(spec: Any, max_memory: str | None = None) -> int | None:
    """The most bytes of trace text (gunzipped) a replay on ``spec`` may read within the limit:
    a gzip trace can inflate far beyond what :func:`replay_estimate` assumed from its size, so
    the reader stops there (None: no limit known)."""
    limit, _ = limit_bytes(max_memory)
    if limit is None:
        return None
    state = memory_estimate(spec, 0, key_of_requests="trace").bytes_
    requests = max(0.0, limit - state) / REQUEST_BYTES
    return int(requests * MIN_TRACE_LINE_BYTES)


def add_argument(parser) -> None:
    """The ``--max-memory`` flag of a command that runs a model."""
    parser.add_argument(
        "--max-memory",
        metavar="SIZE",
        help="refuse a run whose estimated memory exceeds SIZE (8G, 512M; default: 90%% of "
        "the available memory, or $NMP_MAX_MEMORY)",
    )


def cache_estimate(lookups: float, dim: float, key: str) -> Estimate:
    """``nmp cache``: the request stream of ``lookups`` lookups (keys, offsets, codes, the
    per-key state) and a vector of ``dim`` floats per touched key."""
    per_lookup = CACHE_LOOKUP_BYTES + 4 * dim
    return Estimate(CACHE_BASE_BYTES + lookups * per_lookup, key, f"{lookups:,.0f} lookups")


def shard_estimate(
    lookups: float, gpus: int, tables: int, per_gpu_table_bytes: float, lookups_key: str
) -> Estimate:
    """``nmp shard``: the profiled and evaluated batches (``lookups``), per-GPU state, and the
    sharder's own per-GPU-and-table memory (a MILP's model)."""
    terms = {
        lookups_key: lookups * SHARD_LOOKUP_BYTES,
        "topology.gpus": gpus * (SHARD_GPU_BYTES + tables * per_gpu_table_bytes),
    }
    key = max(terms, key=terms.__getitem__)
    return Estimate(
        SHARD_BASE_BYTES + sum(terms.values()),
        key,
        f"{lookups:,.0f} lookups profiled and timed, {gpus:,} GPUs x {tables} tables",
    )


def train_estimate(
    rows: float,
    dim: int,
    state_floats_per_row: float,
    samples: float,
    nodes: int,
    records_key: str = "train.max_rows",
    mlp_params: dict[str, float] | None = None,
) -> Estimate:
    """``nmp train``: the embedding records (``rows`` of ``dim`` floats and their optimizer
    state), the samples a run holds (a step's batch and the held-out batches), the per-node
    state of ``nodes`` memory nodes and the MLPs' parameters (``mlp_params``: per key, e.g.
    ``train.bottom``, its weights)."""
    terms = {
        records_key: rows * (TRAIN_RECORD_FACTOR * 4 * (dim + state_floats_per_row)),
        "train.batch": samples * TRAIN_SAMPLE_BYTES,
        "train.nodes": nodes * TRAIN_NODE_BYTES,
    }
    for key, params in (mlp_params or {}).items():
        terms[key] = params * TRAIN_MLP_BYTES_PER_PARAM
    key = max(terms, key=terms.__getitem__)
    mlps = sum((mlp_params or {}).values())
    return Estimate(
        TRAIN_BASE_BYTES + sum(terms.values()),
        key,
        f"{rows:,.0f} embedding rows of {dim} floats, {samples:,.0f} samples held, {nodes:,} "
        f"nodes, {mlps:,.0f} MLP weights",
    )


def _count(value: float) -> str:
    """A count for a message: in full up to a trillion, else in three figures (1.2e+305)."""
    return f"{value:,.0f}" if value < 1e12 else f"{value:.3g}"


def extrapolation_estimate(
    trials: int,
    failures: float,
    failures_key: str = "--servers",
    *,
    step_lookups: float = 0.0,
    step_key: str = "values.batch",
) -> Estimate:
    """``nmp train --extrapolate``: the Monte-Carlo draws and the failures drawn in them
    (``failures_key``: the flag that makes them many, the servers or their MTBF), and the one
    batch of ``step_lookups`` lookups whose step is costed on the hardware model (``step_key``:
    the input that sets its size)."""
    terms = {
        "--trials": trials * TRIAL_BYTES,
        failures_key: failures * FAILURE_BYTES,
        step_key: step_lookups * STEP_LOOKUP_BYTES,
    }
    key = max(terms, key=terms.__getitem__)
    return Estimate(
        TRAIN_BASE_BYTES + sum(terms.values()),
        key,
        f"{trials:,} draws of {_count(failures)} failures in all, a step of "
        f"{_count(step_lookups)} lookups costed",
    )


def text_file_estimate(size: float, file: str) -> Estimate:
    """Reading a text data file of ``size`` bytes whole (a Criteo TSV): its text, the split
    fields and the parsed columns (chosen: 12 bytes per byte of text, Python strings of the
    fields included)."""
    return Estimate(REPLAY_BASE_BYTES + 12 * size, "", f"{format_bytes(size)} of text", file=file)


def testbench_estimate(entries: int, width_bits: int) -> Estimate:
    """``nmp rtl export``: the testbench's stimulus and expected values, as text, in memory."""
    return Estimate(
        REPLAY_BASE_BYTES + entries * TESTBENCH_BYTES_PER_BIT * width_bits,
        "--entries",
        f"{entries:,} stimulus entries of {width_bits} bits",
    )


def array_file_estimate(declared_bytes: float, file: str) -> Estimate:
    """Reading an array file (``.npz``) whose arrays declare ``declared_bytes``: the arrays, and
    a converted copy of each (int64 / float32) while they are checked (chosen: x2)."""
    return Estimate(
        REPLAY_BASE_BYTES + 2 * declared_bytes,
        "",
        f"{format_bytes(declared_bytes)} of arrays declared in the file",
        file=file,
    )
