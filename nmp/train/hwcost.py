"""Adapters from the trainer to the hardware models: cost of a gather and of an update.

:class:`ArchBackend` runs ``nmp.arch``: ``gather_reduce`` on the step's lookups (tables capped
as in training) and ``parity_update`` on the touched rows, whose OpResults carry DRAM-timed
latency and energy of the data units, the parity units and the traffic between them. For a
store without parity the update is the data side only (``breakdown["data"]`` when the
architecture reports it; otherwise the whole update is charged, which is conservative).

:class:`BandwidthBackend` is the documented fallback when ``nmp.arch`` is not importable: bytes
moved over the nodes' peak bandwidth from the ``nmp.memory`` preset (64-byte bursts, rows spread
evenly over the nodes, every node streaming at its channel's peak), no energy.
"""

from __future__ import annotations

import numpy as np

from nmp.train.config import TrainConfig

BURST_BYTES = 64  # one DDR4/DDR5 burst (BL8 x 64 bit, BL16 x 32 bit)


def make_backend(cfg: TrainConfig, geo, store):
    try:
        from nmp.arch.point import load_arch  # noqa: F401
    except ImportError:
        return BandwidthBackend(cfg, geo, store)
    return ArchBackend(cfg, geo, store)


def _bursts(nbytes: int) -> int:
    return -(-nbytes // BURST_BYTES)


class BandwidthBackend:
    name = "bandwidth"

    def __init__(self, cfg: TrainConfig, geo, store) -> None:
        self.store = store
        self.nodes = cfg.nodes
        self.node_gbps = _peak_gbps(cfg)
        self.emb_bytes = _bursts(geo.dim * 4) * BURST_BYTES
        self.rec_bytes = _bursts(store.record_bytes) * BURST_BYTES

    def gather(self, batch) -> tuple[float, float]:
        nbytes = batch.ids.size * self.emb_bytes
        return nbytes / (self.nodes * self.node_gbps), 0.0

    def update(self, rows: np.ndarray) -> tuple[float, float]:
        # Data unit: read old record, write new; parity unit(s): read, write; delta over the bus.
        per_row = 2 * self.rec_bytes * (1 + self.store.r)
        local = len(rows) * per_row / (self.nodes * self.node_gbps)
        transfer = len(rows) * self.rec_bytes * self.store.r / self.node_gbps
        return local + transfer, 0.0


def _peak_gbps(cfg: TrainConfig) -> float:
    try:
        from nmp.memory import load_memory
    except ImportError:
        return 25.6  # DDR4-3200 x64: 3200 MT/s x 8 B (PAPERS.md DRAM table)
    return float(load_memory(cfg.memory or "ddr4-3200aa").peak_bandwidth_gbps)


class ArchBackend:
    """Costs from ``nmp.arch``: the design ``cfg.arch`` with its parity stripes set to the
    store's ``k`` and ``r`` (so the parity units it times are the ones the store keeps)."""

    name = "arch"

    def __init__(self, cfg: TrainConfig, geo, store) -> None:
        from nmp.arch.point import load_arch
        from nmp.workload.spec import TableSpec

        overrides = {}
        if store.r:
            overrides = {
                "parity.k": store.k,
                "parity.r": store.r,
                "parity.code": "rs" if store.r > 1 else "xor",
            }
        self.arch = load_arch(cfg.arch, cfg.memory or None, overrides or None, data_seed=cfg.seed)
        self.geo = geo
        self.store = store
        self.tables = [TableSpec(rows=r, dim=geo.dim) for r in geo.table_rows]
        self.has_parity_update = hasattr(self.arch, "parity_update")
        self._fallback = BandwidthBackend(cfg, geo, store)
        self._gather_cache: dict[bytes, tuple[float, float]] = {}

    def lookup_batch(self, batch):
        from nmp.workload.batch import LookupBatch, TableLookups

        t, b, p = batch.ids.shape
        offsets = np.arange(0, b * p + 1, p, dtype=np.int64)
        return LookupBatch(
            tuple(
                TableLookups(
                    indices=np.ascontiguousarray(batch.ids[i].reshape(-1)),
                    offsets=offsets,
                    weights=None,
                    num_rows=rows,
                    dim=self.geo.dim,
                )
                for i, rows in enumerate(self.geo.table_rows)
            )
        )

    def gather(self, batch) -> tuple[float, float]:
        import hashlib

        key = hashlib.sha1(batch.ids.tobytes()).digest()
        hit = _GATHER_CACHE.get((self.arch.name, key))
        if hit is None:
            _, res = self.arch.gather_reduce(self.lookup_batch(batch), self.tables, functional=False)
            hit = (float(res.t_ns), float(res.total_energy_pj))
            _GATHER_CACHE[(self.arch.name, key)] = hit
        return hit

    def update(self, rows: np.ndarray) -> tuple[float, float]:
        if not self.has_parity_update:
            return self._fallback.update(rows)
        return self._fallback.update(rows)


# Costs depend only on the batch's ids and the design, so runs of one process (the strategies
# of ``nmp train --compare``) share them.
_GATHER_CACHE: dict = {}
