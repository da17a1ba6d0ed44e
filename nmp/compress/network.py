"""The network under the embedding all-to-all: a link per node and an all-to-all algorithm.

A node injects at ``link_gbps`` (one direction, line rate: achieved bandwidth = line rate is
the named assumption; protocol overheads would lower every uncompressed and compressed time
alike) and pays ``latency_us`` per message (start-up cost alpha). The all-to-all of ``N``
nodes, each sending ``bytes_per_peer`` to every other node, takes (alpha-beta model):

- ``pairwise``: ``N - 1`` rounds, one message to one peer per round:
  ``(N - 1) * (alpha + m / B)`` (what NCCL/MPI do for large messages);
- ``bruck``: ``ceil(log2 N)`` rounds, each forwarding ``N/2`` blocks:
  ``ceil(log2 N) * (alpha + (N / 2) * m / B)`` (fewer start-ups, more bytes; small messages).

Presets in ``models/network/*.toml`` carry their sources.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from nmp.config import KeyedValueError, find_preset, from_mapping, load_toml
from nmp.errors import NmpError
from nmp.registry import Registry


def _pairwise(nodes: int, bytes_per_peer: float, alpha_s: float, bw_bps: float) -> float:
    """N - 1 rounds, one message to one peer per round (NCCL/MPI for large messages)."""
    return (nodes - 1) * (alpha_s + bytes_per_peer / bw_bps)


def _bruck(nodes: int, bytes_per_peer: float, alpha_s: float, bw_bps: float) -> float:
    """ceil(log2 N) rounds, each forwarding N/2 blocks (fewer start-ups, more bytes)."""
    rounds = math.ceil(math.log2(nodes))
    return rounds * (alpha_s + (nodes / 2) * bytes_per_peer / bw_bps)


#: All-to-all algorithms: (nodes, bytes per peer, latency s, bytes/s) -> seconds, by name.
ALGORITHMS: Registry[Callable[[int, float, float, float], float]] = Registry("all-to-all algorithm")
ALGORITHMS.register(_pairwise, name="pairwise")
ALGORITHMS.register(_bruck, name="bruck")


@dataclass(frozen=True)
class NetworkSpec:
    name: str
    description: str
    link_gbps: float  # per node, one direction, Gb/s
    latency_us: float  # per message
    algorithm: str = "pairwise"  # a name of ALGORITHMS
    source: str = ""

    def validate(self) -> None:
        if not self.link_gbps > 0:
            raise KeyedValueError("link_gbps", "must be > 0")
        if self.latency_us < 0:
            raise KeyedValueError("latency_us", "must be >= 0")
        if self.algorithm not in ALGORITHMS:
            raise KeyedValueError("algorithm", ALGORITHMS.unknown_message(self.algorithm))

    @property
    def bytes_per_s(self) -> float:
        return self.link_gbps * 1e9 / 8.0

    def alltoall_ns(self, nodes: int, bytes_per_peer: float) -> float:
        """Time of one all-to-all in which every node sends ``bytes_per_peer`` to each peer."""
        if nodes < 1:
            raise NmpError(f"all-to-all needs >= 1 node, got {nodes}")
        if nodes == 1 or bytes_per_peer <= 0:
            return 0.0
        fn = ALGORITHMS.get(self.algorithm)
        return 1e9 * fn(nodes, bytes_per_peer, self.latency_us * 1e-6, self.bytes_per_s)


def load_network(name: str) -> NetworkSpec:
    """A preset of ``models/network`` by name, or a TOML file."""
    path = find_preset("network", name)
    data = load_toml(path)
    data.setdefault("name", Path(path).stem)
    return from_mapping(NetworkSpec, data, file=str(path))
