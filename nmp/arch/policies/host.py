"""The host CPU (no near-memory units): every row crosses the channel and the CPU adds it.

The batch time is the replay of every read on the whole memory (the channel bound) or the CPU's
FP32 adds (``cores x simd_lanes x clock``), whichever is longer; they overlap."""

from __future__ import annotations

import numpy as np

from nmp.arch import memview as mv
from nmp.arch.functional import dedupe, gather_tree, gather_tree_basis
from nmp.arch.lowering import lower_host
from nmp.arch.placement import FlatLookups, Placement
from nmp.arch.policies import register
from nmp.arch.replay import dram_energy, hit_rate, replay_stream
from nmp.arch.spec import LEVELS
from nmp.arch.tree import TreeTraffic
from nmp.config import KeyedValueError
from nmp.results import OpResult


class Host:
    name = "host"
    near_memory = False

    def validate(self, spec) -> None:
        for lv in LEVELS:
            if spec.level(lv).units:
                raise KeyedValueError(f"{lv}.units", "policy 'host' has no NMP units")
        if spec.bandwidth_aware_partition:
            raise KeyedValueError(
                "bandwidth_aware_partition", "only a 'cross-level' design partitions by level"
            )

    def needs_profile(self, spec) -> bool:
        return spec.replicate_hot_rows > 0

    def partitions(self, spec) -> bool:
        return False

    def issue_order(self, spec, flat: FlatLookups) -> np.ndarray:
        return np.arange(flat.n, dtype=np.int64)  # host code walks table by table

    def place(self, arch, flat: FlatLookups, order: np.ndarray) -> Placement:
        n = flat.n
        return Placement(
            np.full(n, -1, dtype=np.int64),
            np.full(n, -1, dtype=np.int64),
            flat.grow.copy(),
            np.zeros(n, dtype=bool),
            np.zeros(n, dtype=bool),
            {},
        )

    def tree_traffic(self, arch, flat: FlatLookups, plc: Placement) -> TreeTraffic:
        return TreeTraffic({}, {}, np.zeros(mv.org(arch.mem, "channels"), dtype=np.int64))

    def execute(self, arch, flat: FlatLookups, plc: Placement) -> list[np.ndarray]:
        """The CPU adds every row of a bag (one node: the host)."""
        assert arch.store is not None
        base = np.zeros(len(LEVELS) + 1, dtype=np.int64)
        parent = np.full(1, -1, np.int64)
        level, node = np.full(flat.n, len(LEVELS), np.int64), np.zeros(flat.n, np.int64)
        starts = np.searchsorted(flat.table, np.arange(flat.num_tables + 1))
        no_w = np.empty(0, dtype=np.float32)
        pooled = []
        for t in range(flat.num_tables):
            a, b = int(starts[t]), int(starts[t + 1])
            rows = np.ascontiguousarray(flat.row[a:b])
            bag = np.ascontiguousarray(flat.bag[a:b])
            w = no_w if flat.weight is None else np.ascontiguousarray(flat.weight[a:b])
            basis = arch.store.basis(t)
            if basis is not None:
                pooled.append(
                    gather_tree_basis(
                        level[a:b], node[a:b], base, bag, rows, w, *basis, parent, flat.batch
                    )
                )
                continue
            uniq, uinv = dedupe(rows, arch.tables[t].rows)
            values = arch.store.read(t, uniq)
            pooled.append(
                gather_tree(
                    base[level[a:b]] + node[a:b], bag, uinv, w, values, parent, 1, flat.batch
                )
            )
        return pooled

    def time_batch(self, arch, flat, plc, order, traffic) -> OpResult:
        spec, mem = arch.spec, arch.mem
        tck, tx = mv.tck_ns(mem), mv.tx_bytes(mem)
        dims = np.asarray([t.dim for t in arch.tables], dtype=np.int64)
        weighted = flat.weight is not None
        io_pj_bit = float(mem.energy.io_pj_per_bit) if mem.energy is not None else 0.0
        dim_l = dims[flat.table]
        addr = lower_host(mem, flat, order, arch.table_rows, arch.table_row_bytes)
        st = replay_stream(addr, mem, max_requests=spec.replay_sample_requests)
        t_mem = float(st.cycles_drained) * tck
        h = spec.host
        flops = float((dim_l * (2 if weighted else 1)).sum())
        t_cpu = flops / (h.cores * h.simd_lanes * h.clock_ghz)
        latency = max(t_mem, t_cpu)
        e = dram_energy(mem, [st], latency / tck)
        energy = {
            "dram_core": sum(v for k, v in e.items() if k != "io"),
            "dram_io": addr.size * tx * 8 * io_pj_bit,
            "units": flops * h.pj_per_flop,
            "sram": 0.0,
        }
        bytes_by_level = {"channel": float(addr.size * tx)}
        bd = dict(
            bottleneck="channel" if t_mem >= t_cpu else "host_compute",
            bounds_ns={"channel": t_mem, "host_compute": t_cpu},
            dram_replay_ns=t_mem,
            host_compute_ns=t_cpu,
            channel={
                "time_ns": t_mem,
                "bytes": float(addr.size * tx),
                "achieved_gbps": addr.size * tx / latency,
                "peak_gbps": mv.channel_peak_gbps(mem) * mv.org(mem, "channels"),
                "row_hit_rate": hit_rate(st),
                "requests": int(addr.size),
            },
            load_imbalance=1.0,
        )
        return OpResult(latency / tck, latency, energy, bytes_by_level, bd, 1.0)


register(Host())
