"""The GPU's HBM, through the nmp.memory DRAM engine.

The A100's HBM2e (3.186 Gb/s), the A100-40GB's HBM2 (2.43 Gb/s) and the H100's HBM3
(5.2375 Gb/s) are not memory presets. :func:`gpu_memory_spec` derives them from the presets
``hbm2-2000`` / ``hbm3-6400`` (``hbm.memory_preset``) at the part's pin rate: the clock scales
with the data rate, the burst and column-to-column spacings (nBL, nCCDS, nCCDL: counted in clocks
by JESD235/JESD238) stay in cycles, every other timing keeps its time in ns (rounded up to whole
cycles, JEDEC style). The spec is one stack (the presets' channel count, which must match
``hbm.channels_per_stack``); the GPU has ``hbm.stacks`` of them.

What the GPU model takes from the DRAM engine (:func:`hbm_calibration`):

* ``efficiency[bytes]``: achieved / peak bandwidth of *random* fetches of 32, 64 and 128 B (one
  to four consecutive 32-B sectors of one L2 line, the L2's miss granularity), measured by
  replaying a saturating random trace (seeded) on one stack of the derived spec. For this
  replay each trace address is one 32-B request (``controller.line_bytes = 32``), channels
  interleave on ``hbm.channel_interleave_bytes`` (128 B: an L2 line stays in one
  pseudo-channel row, as the L2 slices own whole lines; NVIDIA's hash is not public) and the
  controller's read queue is ``hbm.read_queue`` deep (128: a GPU keeps ~1 MB in flight to its
  HBM, far more than a CPU controller's 32 entries; with 32 entries random 128-B fetches reach
  only ~30 % of peak on the engine, with 128 ~72 %, with 256 ~78 % on HBM2e-3186);
* ``pj_per_sector``: dynamic DRAM energy (ACT + RD + I/O) per 32-B sector of those fetches, and
  ``background_w_per_channel`` (refresh + background) from the same replay;
* ``dram_latency_ns``: unloaded closed-row read latency (tRCD + CL + BL) of the derived spec;
* the latency under load: random 128-B fetches offered at Poisson arrivals (seeded) at
  ``LOAD_POINTS`` x the saturated 128-B efficiency; for each, the achieved utilization (of peak)
  and the mean time from a fetch's offer to its last sector's data (``load_latency_ns``). The GPU
  model adds ``queueing_ns(u)`` (that latency minus the lightest load's) to its unloaded miss
  latency: this is how a busy HBM lengthens every miss (:mod:`nmp.gpu.timing`).

The calibration is computed once per (preset, pin rate, queue, interleave). The GPU presets'
entries ship in ``nmp/gpu/data/hbm_calibration.json``, which a run only reads; a test replays
one entry again and compares, and ``python -m nmp.gpu.hbm`` regenerates the file after a change
to nmp.memory or a preset. A part no preset has (a ``--set`` of its queue or interleave) is
calibrated once and kept in the user cache (``$NMP_CACHE_DIR``, else ``$XDG_CACHE_HOME/nmp``,
else ``~/.cache/nmp``, subfolder ``hbm``), under the rule of every entry the kit keeps there
(:func:`nmp.toml_cache.read_own_json`): the package folder may be shared or read-only, and a
run that wrote into it left the checkout changed.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

import nmp.memory as memory
from nmp.errors import NmpError
from nmp.fileio import atomic_write_bytes
from nmp.gpu.spec import gpu_names, load_gpu
from nmp.memory.spec import load_memory, trcd_cycles

FETCH_BYTES = (32, 64, 128)
# Timing parameters counted in clocks, not ns (they do not scale with the data rate).
CYCLE_PARAMS = frozenset({"nBL", "nCCDS", "nCCDL"})
CALIBRATION_FILE = Path(__file__).resolve().parent / "data" / "hbm_calibration.json"
CALIBRATION_FETCHES = 16_000  # random fetches per size: enough for a steady state on one stack
CALIBRATION_SEED = 2024
# Offered loads of the latency-under-load replays, as fractions of the saturated 128-B efficiency.
LOAD_POINTS = (0.05, 0.25, 0.5, 0.7, 0.8, 0.9, 0.95)
CALIBRATION_VERSION = 2  # in the cache key: entries of an older layout are recomputed


@dataclass(frozen=True)
class HbmCalibration:
    """What the DRAM engine says about random sector fetches on one HBM part."""

    preset: str
    rate_mtps: int
    tck_ps: int
    efficiency: dict[str, float]
    pj_per_sector: dict[str, float]
    background_w_per_channel: float
    dram_latency_ns: float
    calibrated_against: str
    load_utilization: tuple[float, ...] = ()
    load_latency_ns: tuple[float, ...] = ()

    def efficiency_for(self, bytes_per_fetch: float) -> float:
        """Efficiency at a mean fetch size, interpolated between the calibrated sizes (those of
        a measured probe where one is given, up to its largest)."""
        sizes = sorted(int(b) for b in self.efficiency)
        xs = np.array(sizes, dtype=float)
        ys = np.array([self.efficiency[str(b)] for b in sizes])
        return float(np.interp(bytes_per_fetch, xs, ys))

    @property
    def saturation(self) -> float:
        """Highest utilization (of peak) random 128-B fetches reach: the queue's asymptote."""
        return self.efficiency["128"]

    def queueing_ns(self, utilization: float) -> float:
        """Mean extra latency of a 128-B fetch at ``utilization`` (achieved / peak) over the
        lightest calibrated load: interpolated between the replays, and beyond the last one
        growing as 1 / (saturation - u) (an open queue's divergence); infinite at saturation."""
        us = np.asarray(self.load_utilization, dtype=float)
        lat = np.asarray(self.load_latency_ns, dtype=float)
        if us.size == 0:
            return 0.0
        extra = lat - lat[0]
        if utilization <= us[-1]:
            return float(np.interp(utilization, us, extra))
        sat = self.saturation
        if utilization >= sat or us[-1] >= sat:
            return math.inf
        return float(extra[-1] * (sat - us[-1]) / (sat - utilization))

    def pj_per_sector_for(self, bytes_per_fetch: float) -> float:
        xs = np.array(FETCH_BYTES, dtype=float)
        ys = np.array([self.pj_per_sector[str(b)] for b in FETCH_BYTES])
        return float(np.interp(bytes_per_fetch, xs, ys))


def scaled_timing(timing: dict[str, int], tck_old_ps: float, tck_new_ps: float) -> dict[str, int]:
    """Timings of one preset re-expressed at another clock (see the module docstring)."""
    out = {}
    for key, cycles in timing.items():
        if key in CYCLE_PARAMS:
            out[key] = int(cycles)
        else:
            out[key] = max(1, math.ceil(cycles * tck_old_ps / tck_new_ps - 1e-9))
    return out


def gpu_memory_spec(hbm, *, channels: int | None = None):
    """The nmp.memory spec of a GPU's HBM (``hbm``: :class:`nmp.gpu.memory_spec.HbmSpec`)."""
    base = load_memory(hbm.memory_preset)
    if base.org.channels != hbm.channels_per_stack:
        raise NmpError(
            f"{hbm.memory_preset} has {base.org.channels} channels per stack, the GPU's "
            f"hbm.channels_per_stack is {hbm.channels_per_stack}"
        )
    rate_mtps = int(round(hbm.data_rate_gbps * 1000))
    tck_ps = int(round(base.tck_ps * base.rate_mtps / rate_mtps))
    timing = scaled_timing(base.timing, base.tck_ps, tck_ps)
    overrides: dict[str, Any] = {"rate_mtps": rate_mtps, "tck_ps": tck_ps}
    overrides.update({f"timing.{k}": v for k, v in timing.items()})
    overrides["name"] = f"{hbm.standard}-{rate_mtps}"
    return load_memory(base, channels=channels, overrides=overrides)


def dram_latency_ns(spec) -> float:
    """Unloaded read to a closed row: ACT-to-RD (tRCD) + CAS latency + burst."""
    t = spec.timing
    return (trcd_cycles(t) + t["nCL"] + t["nBL"]) * spec.tck_ns


def random_fetch_requests(spec, fetch_bytes: int, n: int, seed: int) -> np.ndarray:
    """Addresses of ``n`` random fetches of ``fetch_bytes`` (consecutive 32-B requests at the
    start of random 128-B lines), as the L2 misses of random embedding rows produce them."""
    tx = spec.org.tx_bytes
    rng = np.random.default_rng(seed)
    lines = rng.integers(0, spec.capacity_bytes // 128, size=n, dtype=np.int64)
    per = fetch_bytes // tx
    return (lines[:, None] * 128 + np.arange(per, dtype=np.int64)[None, :] * tx).reshape(-1)


def check_request_granularity(spec, n_addrs: int, stats) -> None:
    if stats.requests != n_addrs:
        raise NmpError(
            f"HBM calibration expected one {spec.org.tx_bytes}-B request per address, the "
            f"engine made {stats.requests} of {n_addrs}"
        )


def calibrate(hbm, *, fetches: int = CALIBRATION_FETCHES, seed: int = CALIBRATION_SEED):
    """Replay random fetches of each size on one stack of the derived spec (uncached)."""
    spec = load_memory(
        gpu_memory_spec(hbm),
        overrides={
            "controller.line_bytes": 32,
            "controller.channel_interleave_bits": int(math.log2(hbm.channel_interleave_bytes)) - 5,
            "controller.read_queue": hbm.read_queue,
        },
    )
    efficiency: dict[str, float] = {}
    pj: dict[str, float] = {}
    background = []
    for size in FETCH_BYTES:
        addrs = random_fetch_requests(spec, size, fetches, seed + size)
        stats = memory.replay(memory.make_requests(addrs.astype(np.uint64)), spec)
        check_request_granularity(spec, addrs.shape[0], stats)
        achieved = stats.bandwidth_gbps
        efficiency[str(size)] = min(1.0, achieved / spec.peak_bandwidth_gbps)
        e = stats.energy_breakdown_pj
        sectors = addrs.shape[0]
        pj[str(size)] = (e.get("act", 0.0) + e.get("rd", 0.0) + e.get("io", 0.0)) / sectors
        background.append(
            (e.get("background", 0.0) + e.get("ref", 0.0))
            / stats.t_drained_ns
            / spec.org.channels
            / 1e3
        )
    load_u, load_ns = loaded_latency(spec, efficiency["128"], fetches=fetches, seed=seed)
    return HbmCalibration(
        preset=hbm.memory_preset,
        rate_mtps=spec.rate_mtps,
        tck_ps=spec.tck_ps,
        efficiency=efficiency,
        pj_per_sector=pj,
        background_w_per_channel=float(np.mean(background)),
        dram_latency_ns=dram_latency_ns(spec),
        calibrated_against=(
            f"nmp.memory.replay of {fetches} random 32/64/128-B fetches (seed {seed}) on "
            f"{hbm.memory_preset} re-timed to {spec.rate_mtps} MT/s, {spec.org.channels} channels, "
            f"read queue {hbm.read_queue}, {hbm.channel_interleave_bytes}-B channel interleave; "
            f"latency under load: Poisson 128-B fetches at {', '.join(map(str, LOAD_POINTS))} "
            "x saturation"
        ),
        load_utilization=load_u,
        load_latency_ns=load_ns,
    )


def loaded_latency(spec, saturation: float, *, fetches: int, seed: int):
    """(achieved utilization, mean fetch latency ns) of random 128-B fetches offered with
    exponential inter-arrival times at each of ``LOAD_POINTS`` x ``saturation`` (one stack)."""
    tx = spec.org.tx_bytes
    per = 128 // tx
    addrs = random_fetch_requests(spec, 128, fetches, seed + 1).astype(np.uint64)
    peak = spec.peak_bandwidth_gbps  # bytes per ns
    out_u, out_ns = [], []
    for i, f in enumerate(LOAD_POINTS):
        rate = f * saturation * peak / 128.0  # fetches per ns
        rng = np.random.default_rng(seed + 100 + i)
        offer_ns = np.cumsum(rng.exponential(1.0 / rate, fetches))
        arrival = np.repeat(np.floor(offer_ns / spec.tck_ns).astype(np.uint64), per)
        stats = memory.replay(memory.make_requests(addrs, arrival=arrival), spec, timeline=True)
        check_request_granularity(spec, addrs.shape[0], stats)
        assert stats.timeline is not None  # asked for (timeline=True)
        done = stats.timeline["done"].astype(float)
        lat = (done - arrival.astype(float)).reshape(-1, per).max(axis=1) * spec.tck_ns
        out_u.append(round(float(stats.bandwidth_gbps / peak), 6))
        out_ns.append(round(float(lat.mean()), 3))
    return tuple(out_u), tuple(out_ns)


def _key(hbm) -> str:
    return (
        f"{hbm.memory_preset}@{int(round(hbm.data_rate_gbps * 1000))}"
        f"/q{hbm.read_queue}/i{hbm.channel_interleave_bytes}/v{CALIBRATION_VERSION}"
    )


def _read_cache() -> dict[str, Any]:
    try:
        return json.loads(CALIBRATION_FILE.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return {}


def _user_entry(key: str) -> Path:
    """The user-cache entry of a part no preset has (the kit's version in its name: another
    version's engine may time it otherwise)."""
    import hashlib

    from nmp.memory.native_build import cache_dir
    from nmp.version import __version__

    digest = hashlib.sha256(f"{__version__}\0{key}".encode()).hexdigest()[:32]
    return cache_dir() / "hbm" / f"{digest}.json"


def _read_user_entry(key: str) -> dict[str, Any] | None:
    from nmp.toml_cache import read_own_json

    doc = read_own_json(_user_entry(key))
    if not isinstance(doc, dict) or doc.get("key") != key or not isinstance(doc.get("data"), dict):
        return None
    return doc["data"]


def _write_user_entry(key: str, data: dict[str, Any]) -> None:
    from nmp.toml_cache import write_own

    write_own(_user_entry(key), json.dumps({"key": key, "data": data}, allow_nan=False))


def _write_cache(data: dict[str, Any]) -> None:
    atomic_write_bytes(
        CALIBRATION_FILE, (json.dumps(data, indent=2, sort_keys=True) + "\n").encode()
    )


_MEMO: dict[str, HbmCalibration] = {}


def hbm_calibration(hbm) -> HbmCalibration:
    """Cached :func:`calibrate` for this HBM part (memory, then the JSON file, then replay)."""
    key = _key(hbm)
    if key in _MEMO:
        return _MEMO[key]
    found = _read_cache().get(key) or _read_user_entry(key)
    cal = _from_entry(found) if found else None
    if cal is None:
        try:
            cal = calibrate(hbm)
        except ImportError as exc:  # pragma: no cover - nmp.memory is part of the kit
            raise NmpError(f"HBM calibration needs nmp.memory: {exc}") from None
        # (a home without a cache folder still works: it recalibrates in the next process)
        _write_user_entry(key, asdict(cal))
    _MEMO[key] = cal
    return cal


def _from_entry(found: dict[str, Any]) -> HbmCalibration | None:
    """The calibration an entry holds (None: an entry of another layout, recomputed)."""
    entry = dict(found)
    for name in ("load_utilization", "load_latency_ns"):
        entry[name] = tuple(entry.get(name, ()))
    try:
        return HbmCalibration(**entry)
    except TypeError:
        return None


def with_probe(cal: HbmCalibration, hbm) -> HbmCalibration:
    """``cal`` with the efficiencies of ``hbm``'s measured random-read probe (none: ``cal``).

    The probe's throughput at each size becomes the efficiency of fetches of that size (32-128 B:
    L2 misses; larger: whole rows of consecutive lines, as a pinning pre-kernel reads them), and the
    engine's latency-under-load curve is stretched along utilization so that it diverges at the
    probe's 128-B throughput instead of the engine's (its latencies are kept)."""
    if not hbm.probe_fetch_bytes:
        return cal
    probe = dict(zip(hbm.probe_fetch_bytes, hbm.probe_random_gbps, strict=True))
    eff = {str(b): g / hbm.peak_bandwidth_gbps for b, g in probe.items()}
    stretch = eff["128"] / cal.efficiency["128"]
    return replace(
        cal,
        efficiency=eff,
        load_utilization=tuple(u * stretch for u in cal.load_utilization),
        calibrated_against=cal.calibrated_against
        + "; efficiencies and the queue's asymptote from the preset's measured random-read probe "
        + ", ".join(f"{b} B {g:g} GB/s" for b, g in probe.items()),
    )


def recalibrate_all() -> dict[str, Any]:
    """Recompute the calibration of every GPU preset's HBM and rewrite the cache file."""
    _MEMO.clear()
    data = {}
    for name in gpu_names():
        hbm = load_gpu(name).hbm
        data[_key(hbm)] = asdict(calibrate(hbm))
    _write_cache(data)
    return data


if __name__ == "__main__":  # python -m nmp.gpu.hbm: after a change to nmp.memory or a preset
    for key, entry in recalibrate_all().items():
        print(key, {k: round(v, 3) for k, v in entry["efficiency"].items()})
