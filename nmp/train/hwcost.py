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

import hashlib

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

    def read_records(self, rows: np.ndarray) -> tuple[float, float]:
        """Reading the records ``rows`` (int64 [bags, per bag]) to the decoding unit."""
        return rows.size * self.rec_bytes / (self.nodes * self.node_gbps), 0.0

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
    """Costs from ``nmp.arch``.

    Gathers: the design holds the capped tables (``dim`` wide) and times ``gather_reduce`` on
    the step's lookups. Updates: a second instance holds the records (all tables as one table
    of ``total_rows`` x record width, rows striped globally as in the store) with its parity
    stripes set to the store's ``k`` and ``r``, and times ``parity_update`` on the touched rows.
    A store without parity pays the data side only: the old record's read and the new record's
    write on the data node, no parity read-modify-write, no delta transfer, no XOR. The read is
    timed by the DRAM model as a gather of the touched records (one record per bag, the same
    path :meth:`read_records` takes); the write moves the same bursts to the same rows and is
    charged as much (chosen: a DDR write burst takes the read's tBL; the write-to-read
    turnaround is left out, so the plain update is slightly optimistic and the parity's extra
    work slightly pessimistic). What ECRec adds is then what ``parity_update`` times beyond
    that: the parity node's read-modify-write, the delta's trip and the XORs.
    """

    name = "arch"

    def __init__(self, cfg: TrainConfig, geo, store) -> None:
        from nmp.arch.point import load_arch
        from nmp.parity_codes import unit_code_for
        from nmp.workload.spec import TableSpec

        k, r = (store.k, store.r) if store.r else (max(1, min(4, cfg.nodes - 1)), 1)
        code = unit_code_for(r).name
        mem = cfg.memory or None
        self.coded = bool(store.r)
        self.key = (cfg.arch, cfg.memory, k, r, geo.dim, store.record_bytes)
        self.gather_arch = load_arch(cfg.arch, mem, data_seed=cfg.seed)
        self.update_arch = load_arch(
            cfg.arch, mem, {"parity.k": k, "parity.r": r, "parity.code": code}, data_seed=cfg.seed
        )
        self.r = r
        self.geo = geo
        self.width = store.record_bytes // 4
        self.tables = [TableSpec(rows=n, dim=geo.dim) for n in geo.table_rows]
        self.update_arch.bind([TableSpec(rows=int(sum(geo.table_rows)), dim=self.width)])

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
        key = ("gather", self.key, hashlib.sha1(batch.ids.tobytes()).digest())
        hit = _COST_CACHE.get(key)
        if hit is None:
            _, res = self.gather_arch.gather_reduce(
                self.lookup_batch(batch), self.tables, functional=False
            )
            hit = (float(res.t_ns), float(res.total_energy_pj))
            _COST_CACHE[key] = hit
        return hit

    def read_records(self, rows: np.ndarray) -> tuple[float, float]:
        """Reading the records ``rows`` (int64 [bags, per bag]) and combining each bag in the
        units: a gather-reduce over the records table (XOR and sum cost the same adder pass)."""
        from nmp.workload.batch import LookupBatch, TableLookups

        rows = np.asarray(rows, dtype=np.int64)
        key = ("records", self.key, hashlib.sha1(rows.tobytes()).digest())
        hit = _COST_CACHE.get(key)
        if hit is None:
            bags, per = rows.shape
            lookups = TableLookups(
                indices=np.ascontiguousarray(rows.reshape(-1)),
                offsets=np.arange(0, bags * per + 1, per, dtype=np.int64),
                weights=None,
                num_rows=self.update_arch.tables[0].rows,
                dim=self.width,
            )
            _, res = self.update_arch.gather_reduce(LookupBatch((lookups,)), functional=False)
            hit = (float(res.t_ns), float(res.total_energy_pj))
            _COST_CACHE[key] = hit
        return hit

    def update(self, rows: np.ndarray) -> tuple[float, float]:
        rows = np.asarray(rows, dtype=np.int64)
        if not self.coded:  # read the old record, write the new one (see the class docstring)
            t_ns, e_pj = self.read_records(rows[:, None])
            return 2.0 * t_ns, 2.0 * e_pj
        key = ("update", self.key, hashlib.sha1(rows.tobytes()).digest())
        hit = _COST_CACHE.get(key)
        if hit is None:
            zeros = np.zeros((len(rows), self.width), dtype=np.float32)
            res = self.update_arch.parity_update(rows, zeros)
            hit = (float(res.t_ns), float(res.total_energy_pj))
            _COST_CACHE[key] = hit
        return hit


# Costs depend only on the batch's ids (or touched rows) and the design, so the runs of one
# process (the strategies of ``nmp train --compare``) share them.
_COST_CACHE: dict = {}
