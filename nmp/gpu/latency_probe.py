"""Loaded latency against loads in flight: a pointer-chase probe for a real GPU, and what the GPU
model predicts for the same probe.

Each warp chases ``chains`` independent random pointer chains (one random permutation cycle over
the buffer, seeded), ``warps_per_sm`` warps on every SM: ``SMs x warps_per_sm x chains`` loads in
flight. A step reads one row of ``row_bytes`` (32 B: one sector; up to 128 B: one line) with
``ld.global.cg`` (cached in the L2 only); the next node is the word lane 0 read. Over a buffer far
larger than the L2 every step goes to HBM (``level = "hbm"``); over one of a quarter of the L2,
warmed, every step hits in the L2 (``level = "l2"``). The mean latency of a step is the elapsed
time over the steps (every step of a chain waits for the one before).

The model's prediction (:func:`predict`) is the stage path itself: :func:`nmp.gpu.timing.
kernel_timing`, the function that times every EmbeddingBag kernel, run on the probe as a kernel
whose warps each hold ``chains x steps`` loads at one level with ``chains`` in flight (bounded by
the L1's miss entries as for the stage, :meth:`nmp.gpu.kernel.KernelConfig.mlp_for`), the same
unloaded latencies (:func:`nmp.gpu.model.latencies`), HBM queue (the calibration with the
preset's probe, :func:`nmp.gpu.hbm.with_probe`) and L2 slices' queue
(:func:`nmp.gpu.model.slice_queue`). A pointer chase has no index load (the address is the value
just loaded), so the prices carry none.

``benchmarks/gpu_latency.py`` runs it; ``--record`` writes ``nmp/gpu/data/latency-probe-*.json``,
which ``nmp validate`` (check ``gpu.latency``, group real-gpu) compares point by point with the
current model (:func:`compare_record`, :data:`LATENCY_REL`).
"""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from nmp.errors import NmpError
from nmp.fileio import atomic_write_text
from nmp.gpu.hbm import hbm_calibration, with_probe
from nmp.gpu.kernel import kernel_config
from nmp.gpu.model import latencies
from nmp.gpu.queues import memory_queues
from nmp.gpu.spec import GpuSpec
from nmp.gpu.timing import LoadPrices, kernel_timing

DATA_DIR = Path(__file__).resolve().parent / "data"
RECORD_KIND = "nmp.gpu.latency_probe/1"
RECORD_GLOB = "latency-probe-*.json"
LEVELS = ("hbm", "l2")
WARPS_PER_SM = (1, 2, 4, 8, 16, 32, 48, 64)
CHAINS = (1, 2, 4)
ROW_BYTES = (32, 128)  # one sector; one line (what a warp of the stock kernel reads per row)
NODE_BYTES = 128  # one node per L2 line: a step touches one line whatever its row size
MAX_WARPS_PER_BLOCK = 8  # blocks of up to 8 warps (torch's EmbeddingBag block is 8 warps)
HBM_BUFFER_BYTES = 1 << 30  # 1 GiB: 17 x the H200's L2, every step a miss
# Chosen: the L2 buffer is a quarter of the L2, so a line's reuse distance (the whole buffer) is a
# quarter of its set's ways and the model's recency rule (nmp.gpu.cache: older than the most
# recent half of the set is far) prices every hit near; the real GPU's hash decides for itself,
# and the measurement shows whether its near/far mix is what the model assumes.
L2_BUFFER_FRACTION = 0.25
# Chosen: a point agrees when the modeled latency is within 15 % of the measured one: the stock
# kernel is latency-bound, so its stage time moves about 1:1 with the latency of its loads, and
# issue #37's stage-time bound is +-15 %. A latency curve outside that cannot give stage times
# inside it.
LATENCY_REL = 0.15


@dataclass(frozen=True)
class ProbePoint:
    level: str  # "hbm" or "l2"
    warps_per_sm: int
    chains: int  # independent chains per warp: its loads in flight
    row_bytes: int

    @property
    def key(self) -> str:
        return f"{self.level}.w{self.warps_per_sm}.k{self.chains}.b{self.row_bytes}"


def points(
    levels=LEVELS, warps=WARPS_PER_SM, chains=CHAINS, row_bytes=ROW_BYTES
) -> list[ProbePoint]:
    """Every configuration, checked: a bad value names itself."""
    out = []
    for lv in levels:
        if lv not in LEVELS:
            raise NmpError(f"unknown level '{lv}' (known: {', '.join(LEVELS)})")
        for b in row_bytes:
            if b not in (32, 64, 128):
                raise NmpError(f"row_bytes {b}: must be 32, 64 or 128 (one sector to one line)")
            for w in warps:
                if not 1 <= w <= 64:
                    raise NmpError(f"warps_per_sm {w}: must be 1..64")
                for k in chains:
                    if not 1 <= k <= 8:
                        raise NmpError(f"chains {k}: must be 1..8")
                    out.append(ProbePoint(lv, w, k, b))
    return out


def geometry(warps_per_sm: int, sms: int) -> tuple[int, int, int]:
    """(grid blocks, warps per block, blocks per SM): ``warps_per_sm`` warps on each of ``sms``
    SMs in one wave, in blocks of up to :data:`MAX_WARPS_PER_BLOCK` warps."""
    wpb = min(warps_per_sm, MAX_WARPS_PER_BLOCK)
    if warps_per_sm % wpb:
        raise NmpError(f"warps_per_sm {warps_per_sm}: not a multiple of {wpb} warps per block")
    per_sm = warps_per_sm // wpb
    return sms * per_sm, wpb, per_sm


def buffer_bytes(gpu: GpuSpec, level: str, hbm_bytes: int = HBM_BUFFER_BYTES) -> int:
    """The chased buffer: far beyond the L2 for ``hbm``, a quarter of it for ``l2``."""
    if level == "hbm":
        # A line comes back only after the whole buffer (chain_starts), so 4 x the L2 keeps
        # every step a miss; 256 MiB (a gpu-micro24 table) against 1 GiB tells the TLB's reach.
        if hbm_bytes < 4 * gpu.l2.size_bytes:
            raise NmpError(f"HBM buffer {hbm_bytes:,} B: must be >= 4 x the L2 (cold every step)")
        return hbm_bytes
    return int(gpu.l2.size_bytes * L2_BUFFER_FRACTION) // NODE_BYTES * NODE_BYTES


def chain(nodes: int, seed: int) -> np.ndarray:
    """``next[i]``: the node after ``i`` on one random cycle through all ``nodes`` nodes (a
    seeded permutation, each node followed by the next in permutation order)."""
    if not 2 <= nodes < 2**32:
        raise NmpError(f"a chain needs 2 .. 2**32 - 1 nodes, not {nodes}")
    perm = np.random.default_rng(seed).permutation(nodes).astype(np.uint32)
    nxt = np.empty(nodes, dtype=np.uint32)
    nxt[perm] = np.roll(perm, -1)
    return nxt


def chain_starts(nxt: np.ndarray, count: int, seed: int) -> np.ndarray:
    """Start nodes of ``count`` chains spread evenly around the cycle, so that a node's next
    visit comes a whole buffer of other nodes later (no chain reuses another's lines in the L2).
    Rebuilt from the same seed's permutation, the cycle order."""
    perm = np.random.default_rng(seed).permutation(nxt.shape[0]).astype(np.uint32)
    return perm[(np.arange(count, dtype=np.int64) * nxt.shape[0]) // count]


def predict(gpu: GpuSpec, point: ProbePoint, steps: int = 1024) -> dict[str, Any]:
    """The model's mean latency per step (ns), useful GB/s and requests/s for ``point``, from
    the stage path's own timing (see the module docstring), and what bound it."""
    cal = with_probe(hbm_calibration(gpu.hbm), gpu.hbm)
    lat = latencies(gpu, cal)
    queues = memory_queues(
        gpu, cal, hbm_unloaded_ns=lat.hbm_cycles * gpu.sm.cycle_ns, l2_hit_cycles=lat.l2_cycles
    )
    sm = gpu.sm
    _, wpb, per_sm = geometry(point.warps_per_sm, sm.count)
    sector = gpu.l2.sector_bytes
    sectors = -(-point.row_bytes // sector)
    cfg = replace(kernel_config(gpu), loads_in_flight=point.chains)
    column = {"l2": 1, "hbm": 2}[point.level]
    warps = sm.count * point.warps_per_sm
    levels = np.zeros((warps, 3))
    levels[:, column] = point.chains * steps
    loads = float(levels.sum())
    req_bytes = loads * sectors * sector
    hbm_bytes = req_bytes if point.level == "hbm" else 0.0
    clk_ghz = sm.clock_mhz / 1000.0
    kt = kernel_timing(
        warp_levels=levels,
        prices=LoadPrices(
            l1_cycles=lat.l1_cycles,
            l2_cycles=lat.l2_cycles,  # near: see L2_BUFFER_FRACTION
            hbm_unloaded_cycles=lat.hbm_cycles,
            spread_cycles=lat.spread_cycles,
            waits_for_slowest=gpu.sm.waits_for_slowest_load,
            index_hbm_share=0.0,
            spill_cycles=0.0,
        ),
        mlp=cfg.mlp_for(sectors, point.warps_per_sm),
        mlp_at=lambda w: cfg.mlp_for(sectors, w),
        sms=sm.count,
        warps_per_block=wpb,
        slots=sm.count * per_sm,
        cycle_ns=sm.cycle_ns,
        hbm_bytes=hbm_bytes,
        peak_gbps=gpu.hbm.peak_bandwidth_gbps,
        saturation=cal.saturation,
        queueing_ns=queues.queueing_ns,
        bounds_ns={
            "hbm_bandwidth": hbm_bytes
            / (gpu.hbm.peak_bandwidth_gbps * cal.efficiency_for(sectors * sector)),
            "l2_bandwidth": req_bytes / (gpu.l2.bytes_per_cycle * clk_ghz),
            "l1_bandwidth": req_bytes / (gpu.l1.bytes_per_cycle * sm.count * clk_ghz),
        },
        slices=queues.slices(bytes=req_bytes, requests=loads),
    )
    return {
        "latency_ns": kt.t_ns / steps,
        "gbps": loads * point.row_bytes / kt.t_ns,
        "requests_per_s": loads / kt.t_ns * 1e9,
        "bound": kt.bound,
        "hbm_utilization": kt.hbm_utilization,
        "loaded_hbm_ns": kt.hbm_latency_cycles * sm.cycle_ns,
        "mlp": kt.mlp,
    }


def model_lines(gpu: GpuSpec, pts: list[ProbePoint], steps: int) -> list[str]:
    """The model's curve as printed lines (the probe's output without a GPU)."""
    out = [
        f"{'level':<5} {'warps/SM':>8} {'chains':>6} {'row B':>5} {'model ns':>9} "
        f"{'model GB/s':>10} {'model Greq/s':>12}  bound"
    ]
    for p in pts:
        m = predict(gpu, p, steps)
        out.append(
            f"{p.level:<5} {p.warps_per_sm:>8} {p.chains:>6} {p.row_bytes:>5} "
            f"{m['latency_ns']:>9.1f} {m['gbps']:>10.1f} {m['requests_per_s'] / 1e9:>12.2f}  "
            f"{m['bound']}"
        )
    return out


# --- records and their comparison (nmp validate, check gpu.latency) ------------------------


def record(rec: dict[str, Any], data_dir: Path | str | None = None) -> Path:
    """Write a measured curve (with device facts and the date) into ``data_dir`` (default
    ``nmp/gpu/data/``); returns the path."""
    data_dir = Path(data_dir or DATA_DIR)
    data_dir.mkdir(parents=True, exist_ok=True)
    day = datetime.date.today().isoformat()
    gpu_tag = "".join(c if c.isalnum() else "-" for c in rec.get("gpu_name", "gpu")).strip("-")
    path = data_dir / f"latency-probe-{rec['arch_preset']}-{gpu_tag}-{day}.json"
    entry = dict(rec, kind=RECORD_KIND, date=day)
    atomic_write_text(path, json.dumps(entry, indent=2, sort_keys=True) + "\n")
    return path


def load_records(data_dir: Path | str | None = None) -> list[tuple[str, dict[str, Any]]]:
    """Every recorded curve as (file stem, record)."""
    out = []
    for path in sorted(Path(data_dir or DATA_DIR).glob(RECORD_GLOB)):
        try:
            rec = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise NmpError(f"{path}: unreadable latency-probe record ({exc})") from None
        for key in ("arch_preset", "steps", "points"):
            if key not in rec:
                raise NmpError(f"{path}: a latency-probe record needs '{key}'")
        out.append((path.stem, rec))
    return out


def compare_record(rec: dict[str, Any], gpu: GpuSpec | None = None) -> list[dict[str, Any]]:
    """Modeled against measured latency per recorded point (bound :data:`LATENCY_REL`)."""
    from nmp.gpu.spec import load_gpu

    gpu = gpu or load_gpu(rec["arch_preset"])
    # The modeled curve, always: a preset calibrated by a record would only reproduce it.
    gpu = replace(gpu, hbm=replace(gpu.hbm, loaded_latency_record=""))
    rows = []
    for entry in rec["points"]:
        p = ProbePoint(
            entry["level"],
            int(entry["warps_per_sm"]),
            int(entry["chains"]),
            int(entry["row_bytes"]),
        )
        measured = float(entry["latency_ns"])
        modeled = predict(gpu, p, int(rec["steps"]))["latency_ns"]
        off = modeled / measured - 1.0
        rows.append(
            {
                "key": p.key,
                "measured_ns": measured,
                "modeled_ns": modeled,
                "verdict": "agrees" if abs(off) <= LATENCY_REL else "disagrees",
                "detail": f"{p.key}: measured {measured:,.1f} ns, modeled {modeled:,.1f} ns "
                f"({off:+.1%}, bound {LATENCY_REL:.0%})",
            }
        )
    return rows
