"""Topologies as data: the GPUs that hold embeddings, their HBM budget, the host tier, the link.

A topology preset (``models/topology/<name>.toml``) becomes a frozen :class:`TopologySpec`:

* ``gpu``: a preset of ``models/gpu/`` (its HBM and caches time the fast-tier rows through
  :mod:`nmp.gpu`), ``gpus`` of them, each reserving ``hbm_gib`` of HBM for embedding rows (the
  rest holds dense layers, activations, optimizer state and buffers);
* ``[host]``: the slow tier, host DRAM (an ``nmp.memory`` preset with ``channels`` channels
  shared by all GPUs, and ``capacity_gib``), reached through unified memory;
* ``[link]``: each GPU's own link to the host (PCIe 4/5 x16 or NVLink-C2C): raw bandwidth per
  direction, the payload and per-packet overhead of a read completion (so the efficiency of a
  row fetch is derived, not assumed), a round-trip latency and the reads one GPU keeps in flight.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nmp.config import (
    KeyedValueError,
    apply_overrides,
    find_preset,
    from_mapping,
    load_toml,
    preset_names,
)
from nmp.errors import SpecError
from nmp.units import GIB

DEFAULT_TOPOLOGY = "a100x8-pcie4"
# A tier's capacity beyond this is a slip (an H200 holds 141 GB): the placement's sizes, in
# bytes, must stay within 64-bit integers
MAX_GIB = 2**20
# The link's range (chosen: far beyond any real link, far within what the MILP solves): row data
# at 1e-3 GB/s (1 MB/s; a PCIe 1.0 x1 lane carries 250 MB/s), a read's round trip at most a second
# (PCIe's is about a microsecond), a packet of at most 1 MiB (PCIe's largest payload is 4 KiB).
# Beyond them a slow-tier access costs 10^12 times an HBM one or more, and HiGHS failed with
# "Model error" (raw_gbps = 1e-300, overhead_bytes = 1e18), "Solve error" (raw_gbps = 1e-9), or
# spent the whole --time-limit (latency_ns = 1e18), none of which named the key.
MIN_LINK_DATA_GBPS = 1e-3
MAX_LINK_LATENCY_NS = 1e9
MAX_PACKET_BYTES = 2**20


@dataclass(frozen=True)
class HostSpec:
    """The slow tier: host DRAM behind the link, shared by every GPU of the topology."""

    memory_preset: str
    channels: int
    capacity_gib: float

    def validate(self) -> None:
        if self.channels < 1:
            raise KeyedValueError("channels", "must be >= 1")
        if self.capacity_gib <= 0:
            raise KeyedValueError("capacity_gib", "must be > 0")
        if self.capacity_gib > MAX_GIB:
            raise KeyedValueError(
                "capacity_gib", f"at most 2^20 (1 PiB), got {self.capacity_gib:g}"
            )


@dataclass(frozen=True)
class LinkSpec:
    """One GPU's link to the host tier (one per GPU, not shared)."""

    kind: str
    raw_gbps: float  # GB/s per direction, after line coding
    payload_bytes: int  # data bytes per read-completion packet
    overhead_bytes: int  # header, sequence number, CRC and framing per packet
    latency_ns: float  # round trip of one read, GPU to host memory and back
    reads_in_flight: int  # outstanding reads one GPU sustains

    def validate(self) -> None:
        if self.raw_gbps <= 0:
            raise KeyedValueError("raw_gbps", "must be > 0")
        for key in ("payload_bytes", "overhead_bytes"):
            low = 1 if key == "payload_bytes" else 0
            if not low <= getattr(self, key) <= MAX_PACKET_BYTES:
                raise KeyedValueError(
                    key, f"must be in [{low}, 2^20] bytes, got {getattr(self, key):,}"
                )
        if self.data_gbps < MIN_LINK_DATA_GBPS:
            raise KeyedValueError(
                "raw_gbps",
                f"carries {self.data_gbps:.3g} GB/s of row data (raw_gbps x payload_bytes / "
                f"(payload_bytes + overhead_bytes)): at least {MIN_LINK_DATA_GBPS:g} GB/s",
                also=("payload_bytes", "overhead_bytes"),
            )
        if not 0 <= self.latency_ns <= MAX_LINK_LATENCY_NS:
            raise KeyedValueError(
                "latency_ns", f"must be in [0, 1e9] ns (a second), got {self.latency_ns:g}"
            )
        if self.reads_in_flight < 1:
            raise KeyedValueError("reads_in_flight", "must be >= 1")

    @property
    def efficiency(self) -> float:
        """Fraction of the raw bandwidth that carries row data."""
        return self.payload_bytes / (self.payload_bytes + self.overhead_bytes)

    @property
    def data_gbps(self) -> float:
        return self.raw_gbps * self.efficiency


@dataclass(frozen=True)
class TopologySpec:
    name: str
    gpu: str
    gpus: int
    hbm_gib: float
    host: HostSpec
    link: LinkSpec
    description: str = ""

    def validate(self) -> None:
        if self.gpus < 1:
            raise KeyedValueError("gpus", "must be >= 1")
        if self.hbm_gib < 0:
            raise KeyedValueError("hbm_gib", "must be >= 0")
        if self.hbm_gib > MAX_GIB:
            raise KeyedValueError("hbm_gib", f"at most 2^20 (1 PiB), got {self.hbm_gib:g}")

    @property
    def hbm_bytes_per_gpu(self) -> int:
        return int(self.hbm_gib * GIB)

    @property
    def host_bytes(self) -> int:
        return int(self.host.capacity_gib * GIB)


def load_topology(
    name_or_path: str | Path, overrides: dict[str, Any] | None = None
) -> TopologySpec:
    """Load topology ``name`` (``models/topology/<name>.toml``) or a TOML path, apply
    ``overrides`` (dotted paths: ``{"gpus": 16, "hbm_gib": 2}``), and check that the GPU and the
    host memory presets exist (errors name the file and the key)."""
    path = find_preset("topology", str(name_or_path))
    data = load_toml(path)
    data.setdefault("name", path.stem)
    spec = from_mapping(TopologySpec, data, file=str(path))
    spec = apply_overrides(spec, overrides or {}, root="topology")
    # loaded when the command runs, not for `nmp --help`
    from nmp.gpu import gpu_names

    def where(key: str) -> dict[str, Any]:
        # a key an override gave is named as given (topology.gpu), else at the file
        if key in (overrides or {}):
            return {"key": f"topology.{key}"}
        return {"key": key, "file": str(path)}

    if spec.gpu not in gpu_names():
        raise SpecError(
            f"unknown GPU '{spec.gpu}' (known: {', '.join(gpu_names())})", **where("gpu")
        )
    if spec.host.memory_preset.lower() not in preset_names("memory"):
        raise SpecError(
            f"unknown memory preset '{spec.host.memory_preset}' "
            f"(known: {', '.join(preset_names('memory'))})",
            **where("host.memory_preset"),
        )
    # the host memory with the topology's channels, checked now (a count the memory refuses
    # was named as its own 'org.channels', by the cost model, after the profile had run)
    from nmp.memory import load_memory

    try:
        load_memory(spec.host.memory_preset, channels=spec.host.channels)
    except SpecError as exc:
        if exc.key != "org.channels":
            raise
        raise SpecError(exc.message, **where("host.channels")) from None
    return spec


def topology_names() -> list[str]:
    return preset_names("topology")
