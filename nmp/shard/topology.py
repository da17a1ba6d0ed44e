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
        if self.payload_bytes < 1:
            raise KeyedValueError("payload_bytes", "must be >= 1")
        if self.overhead_bytes < 0:
            raise KeyedValueError("overhead_bytes", "must be >= 0")
        if self.latency_ns < 0:
            raise KeyedValueError("latency_ns", "must be >= 0")
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

    if spec.gpu not in gpu_names():
        raise SpecError(
            f"unknown GPU '{spec.gpu}' (known: {', '.join(gpu_names())})", file=str(path), key="gpu"
        )
    if spec.host.memory_preset.lower() not in preset_names("memory"):
        raise SpecError(
            f"unknown memory preset '{spec.host.memory_preset}' "
            f"(known: {', '.join(preset_names('memory'))})",
            file=str(path),
            key="host.memory_preset",
        )
    return spec


def topology_names() -> list[str]:
    return preset_names("topology")
