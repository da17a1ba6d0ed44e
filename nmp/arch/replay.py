"""The replay stage: request streams timed by the DRAM engine (whole, or on an evenly spread
sample for long streams), one replay per node (the units run concurrently), and the DRAM energy
of the replays' commands.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from nmp.arch import memview as mv
from nmp.arch import threads
from nmp.arch.lowering import LevelStream
from nmp.arch.replay_cache import REPLAYS
from nmp.arch.threads import Pending
from nmp.memory import command_energy_pj, make_requests, replay_lines
from nmp.memory.driver import replay_lines_many

# A sampled replay times this many evenly spaced contiguous chunks of a long stream: contiguous
# so that each chunk keeps the stream's row locality and queue occupancy, spread so that every
# part of the batch (every table, in table-major order) is represented.
SAMPLE_CHUNKS = 16

_SCALED_FIELDS = (
    "cycles",
    "cycles_drained",
    "lines",
    "requests",
    "reads",
    "writes",
    "row_hits",
    "row_misses",
    "row_conflicts",
    "read_row_hits",
    "read_row_misses",
    "read_row_conflicts",
    "write_row_hits",
    "write_row_misses",
    "write_row_conflicts",
    "reads_forwarded",
    "writes_coalesced",
    "active_cycles",
    "bank_open_cycles",
)


def sample_index(n: int, max_requests: int, chunks: int = SAMPLE_CHUNKS) -> np.ndarray:
    """Indices of ``chunks`` contiguous runs, ``max_requests`` in all, spread evenly over ``n``."""
    chunks = max(1, min(chunks, max_requests))
    run = max_requests // chunks
    starts = np.linspace(0, n - run, chunks).astype(np.int64)
    return (starts[:, None] + np.arange(run, dtype=np.int64)[None, :]).ravel()


def scale_stats(st: Any, factor: float) -> Any:
    """Counts, cycles and energy of a sampled replay scaled to the whole stream.

    Rates (bandwidth, latency, hit rates) are those of the sample; the fixed drain tail is scaled
    with the rest, which overstates it by at most one queue's worth of requests.
    """
    changes: dict[str, Any] = {f: int(round(getattr(st, f) * factor)) for f in _SCALED_FIELDS}
    changes["t_ns"] = st.t_ns * factor
    changes["t_drained_ns"] = st.t_drained_ns * factor
    changes["cmd_counts"] = {k: int(round(v * factor)) for k, v in st.cmd_counts.items()}
    changes["energy_pj"] = st.energy_pj * factor
    changes["energy_breakdown_pj"] = {k: v * factor for k, v in st.energy_breakdown_pj.items()}
    changes["at_cycles"] = {}
    changes["timeline"] = None
    return dataclasses.replace(st, **changes)


def replay_stream(
    addr: np.ndarray, view: Any, write: np.ndarray | bool = False, max_requests: int = 0
):
    """Replay ``addr`` on ``view``; streams over ``max_requests`` (when > 0) are timed on a
    sample of that many requests (:func:`sample_index`) and scaled (:func:`scale_stats`).
    A replay the process has already run is taken from :data:`nmp.arch.replay_cache.REPLAYS`."""
    if addr.dtype != np.uint64:
        addr = make_requests(addr)["addr"]  # checks: non-negative integers
    if max_requests <= 0 or addr.size <= max_requests:
        return REPLAYS.replay(replay_lines, addr, view, write)
    idx = sample_index(addr.size, max_requests)
    sampled_write = write if isinstance(write, bool | np.bool_) else np.asarray(write)[idx]
    st = REPLAYS.replay(replay_lines, addr[idx], view, sampled_write)
    return scale_stats(st, addr.size / idx.size)


def dram_energy(mem: Any, stats_list: list, latency_cycles: float) -> dict[str, float]:
    """DRAM energy of the replays' commands, with background and refresh counted once for the
    whole memory over the batch (the replays overlap in time)."""
    counts: dict[str, float] = {}
    for st in stats_list:
        for k, v in st.cmd_counts.items():
            if k.upper().startswith("REF"):
                continue
            counts[k] = counts.get(k, 0) + v
    ranks = mv.org(mem, "channels") * mv.org(mem, "ranks")
    counts["REF"] = ranks * latency_cycles / mv.timing(mem, "nREFI")
    return command_energy_pj(mem, counts, latency_cycles)


def start_replays(stream: LevelStream, nodes: int, max_requests: int = 0) -> NodeReplays:
    """Start replaying each node's requests on its own (units run concurrently), on the design
    point's threads (:mod:`nmp.arch.threads`; on one thread a level's streams in one engine
    call: :meth:`nmp.arch.replay_cache.ReplayCache.replay_many`); ``.results()`` gives one
    MemStats per node, None for idle nodes. A node's stream longer than ``max_requests`` (when
    > 0) is timed on a sample. ``stream.addr`` must stay unchanged until the results are in."""
    if stream.node_lines is not None:
        # lower_level emits the requests grouped by node: each node's are then a slice
        counts, addr = stream.node_lines, stream.addr
    else:
        assert stream.node is not None  # (set where node_lines is not)
        counts = np.bincount(stream.node, minlength=nodes)
        grouped = bool((stream.node[1:] >= stream.node[:-1]).all())
        addr = stream.addr if grouped else stream.addr[np.argsort(stream.node, kind="stable")]
    starts = np.concatenate([[0], np.cumsum(counts)])
    busy = [k for k in range(nodes) if starts[k + 1] > starts[k]]
    # the longest streams first, so that the threads finish together
    busy.sort(key=lambda k: int(starts[k] - starts[k + 1]))
    streams = [addr[int(starts[k]) : int(starts[k + 1])] for k in busy]
    if threads.point_threads() <= 1 and _whole_reads(streams, max_requests):
        # one thread: the level's streams in one engine call (the same results, without the
        # Python of a call per stream)
        pending = Pending(values=REPLAYS.replay_many(replay_lines_many, streams, stream.view))
    else:
        pending = threads.start(
            [(replay_stream, (s, stream.view, False, max_requests)) for s in streams]
        )
    return NodeReplays(pending, busy, nodes)


def _whole_reads(streams: list[np.ndarray], max_requests: int) -> bool:
    """Whether :func:`replay_stream` would replay each of ``streams`` whole, as it is given."""
    return all(
        s.dtype == np.uint64 and (max_requests <= 0 or s.size <= max_requests) for s in streams
    )


class NodeReplays:
    """:class:`Pending` replays of some nodes, given back per node (None: idle)."""

    def __init__(self, pending: Pending, busy: list[int], nodes: int) -> None:
        self._pending, self._busy, self._nodes = pending, busy, nodes

    def results(self) -> list:
        out: list = [None] * self._nodes
        for k, st in zip(self._busy, self._pending.results(), strict=True):
            out[k] = st
        return out


def replay_nodes(stream: LevelStream, nodes: int, max_requests: int = 0) -> list:
    """Replay each node's requests on its own (units run concurrently); None for idle nodes.
    A node's stream longer than ``max_requests`` (when > 0) is timed on a sample."""
    return start_replays(stream, nodes, max_requests).results()


def hit_rate(st) -> float:
    """Row-buffer hit rate of one replay."""
    total = st.row_hits + st.row_misses + st.row_conflicts
    return float(st.row_hits / total) if total else 0.0


def hit_rate_many(stats: list) -> float:
    """Row-buffer hit rate over several replays."""
    hits = sum(s.row_hits for s in stats)
    total = sum(s.row_hits + s.row_misses + s.row_conflicts for s in stats)
    return float(hits / total) if total else 0.0


__all__ = [
    "NodeReplays",
    "SAMPLE_CHUNKS",
    "dram_energy",
    "hit_rate",
    "hit_rate_many",
    "replay_nodes",
    "replay_stream",
    "sample_index",
    "scale_stats",
    "start_replays",
]
