"""The memory system's queues as the stage and the latency probe see them: modeled, or measured.

One place (:func:`memory_queues`) says how a load's latency rises with load, for both the
stage path (:func:`nmp.gpu.model.embedding_stage`) and the probe's prediction
(:func:`nmp.gpu.latency_probe.predict`):

* modeled (``hbm.loaded_latency_record = ""``, the default): the HBM queue is
  :meth:`nmp.gpu.hbm.HbmCalibration.queueing_ns` (the DRAM engine's open-queue replays, stretched
  to the measured random-read probe) and the L2 slices are M/D/1 (:class:`nmp.gpu.timing.
  SliceQueue`);
* measured (``hbm.loaded_latency_record`` names a ``benchmarks/gpu_latency.py --record`` file):
  the recorded pointer-chase latencies replace both shapes.

From a record to the queues. Per level (``hbm``: every step a miss; ``l2``: every step a hit),
the points of 128-B rows (a line: what a warp of the stock kernel loads per row; chosen, and the
size the HBM queue's replays fetch) give, per loads in flight per SM ``N = W x K`` (points of
equal ``N`` averaged: the model treats 16 warps x 2 chains as 32 x 1):

* the latency of one load: the step's latency x ``m / K`` (a warp holds ``K`` chains but the
  L1's miss entries may let only ``m = mlp_for(...)`` loads fly, as :func:`predict` prices it;
  ``m = K`` on every preset at the probe's loads), less what waiting for the slowest of ``m``
  added (``sm.waits_for_slowest_load``: the level's ``latency_spread_ns`` x (H_m - 1)), so that
  the curve is a mean load's latency, as the stage prices it before its own waits;
* the utilization that load puts on the queue, by Little's law from the record's own
  throughput: ``X = requests_per_s`` (= loads in flight / latency, checked against ``SMs x W x
  K`` within 5 %), HBM utilization ``X x 128 B / peak``, slice utilization the busier of ``X x
  128 B / (L2 bytes per ns)`` and ``X / l2.requests_per_ns``, as the model computes them.

The ``l2`` curve gives the slice wait ``latency - l2.hit_cycles`` against slice utilization
(:attr:`SliceQueue.wait_curve`). The ``hbm`` curve gives the HBM queueing ``latency - unloaded
miss latency - slice wait at that point's slice utilization`` against HBM utilization, so that a
miss priced by the stage (unloaded + queueing + slice wait) is the recorded latency at the
probe's loads. Both interpolate linearly; below the lightest point its value holds, beyond the
highest throughput the record reached the latency is infinite (the time's fixed point then stops
at that throughput: the measured ceiling). Points past the throughput's peak (more loads in
flight, no more throughput) are left out, and counted in the source. A level the record lacks
keeps its modeled queue.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from nmp.errors import NmpError
from nmp.gpu.hbm import HbmCalibration
from nmp.gpu.kernel import kernel_config
from nmp.gpu.slowest import max_excess
from nmp.gpu.spec import GpuSpec
from nmp.gpu.timing import SliceQueue
from nmp.units import is_finite_number

DATA_DIR = Path(__file__).resolve().parent / "data"
CURVE_ROW_BYTES = 128  # chosen: see the module docstring
# Chosen: a recorded latency may dip this much below a lighter load's (the median of 5 launches
# moves a few percent); more is not a queue (e.g. an hbm buffer that hits in the L2).
MONOTONE_SLACK = 0.05
# Chosen: Little's law holds by construction in a record (both figures come from one elapsed
# time), so a larger gap means an edited or corrupted file.
LITTLE_SLACK = 0.05
POINT_KEYS = ("level", "warps_per_sm", "chains", "row_bytes", "latency_ns", "requests_per_s")
RECORD_KEYS = ("gpu_name", "date", "points")
MODELED = {"source": "modeled"}
# The largest record read (chosen: benchmarks/gpu_latency.py writes about 40 KB; a larger file
# is not a record, e.g. a trace or a device named by mistake)
MAX_RECORD_BYTES = 16 * 1024**2


def slice_queue(gpu: GpuSpec, *, bytes: float, requests: float) -> SliceQueue:
    """The L2 slices' queue (:class:`nmp.gpu.timing.SliceQueue`) for a kernel that requests
    ``bytes`` and ``requests`` line requests from the L2: the stage's kernels and the
    loaded-latency probe (:mod:`nmp.gpu.latency_probe`) queue at the same slices."""
    l2c, sm = gpu.l2, gpu.sm
    return SliceQueue(
        bytes=bytes,
        peak_bytes_per_ns=l2c.bytes_per_cycle * (sm.clock_mhz / 1000.0),
        # One line request at one slice: a slice serves bytes_per_cycle / slices.
        service_cycles=l2c.line_bytes * l2c.slices / l2c.bytes_per_cycle,
        requests=requests,
        requests_per_ns=l2c.requests_per_ns or math.inf,
        # One request at one slice: the slices share the rate.
        request_service_cycles=l2c.slices / l2c.requests_per_ns / sm.cycle_ns
        if l2c.requests_per_ns
        else 0.0,
    )


@dataclass(frozen=True)
class MemoryQueues:
    """How loads queue on ``gpu``: the HBM queue (``queueing_ns`` of HBM utilization; None: no
    queueing, a hard bandwidth bound) and the slices' wait curve (empty: M/D/1)."""

    gpu: GpuSpec
    queueing_ns: Callable[[float], float] | None
    slice_wait_curve: tuple[tuple[float, ...], tuple[float, ...]] = ((), ())
    source: dict[str, Any] | None = None

    def slices(self, *, bytes: float, requests: float) -> SliceQueue:
        return replace(
            slice_queue(self.gpu, bytes=bytes, requests=requests),
            wait_curve=self.slice_wait_curve,
        )


def _curve(xs: tuple[float, ...], ys: tuple[float, ...]) -> Callable[[float], float]:
    """A piecewise-linear measured curve (see the module docstring's extrapolation rule)."""

    def at(x: float) -> float:
        return math.inf if x > xs[-1] else float(np.interp(x, xs, ys))

    return at


def memory_queues(
    gpu: GpuSpec, cal: HbmCalibration, *, hbm_unloaded_ns: float, l2_hit_cycles: float
) -> MemoryQueues:
    """The queues of ``gpu`` (see the module docstring); ``hbm_unloaded_ns`` and
    ``l2_hit_cycles`` are the unloaded latencies the stage prices (:func:`nmp.gpu.model.
    latencies`, near hits), from which a record's latencies become queueing."""
    modeled: Callable[[float], float] | None = cal.queueing_ns if gpu.hbm.queueing else None
    name = gpu.hbm.loaded_latency_record
    if not name:
        return MemoryQueues(gpu, modeled, source=dict(MODELED))
    path = record_path(name)
    if not gpu.hbm.queueing:
        raise NmpError(
            f"{path}: key 'hbm.loaded_latency_record' needs hbm.queueing = true (the record "
            "replaces the queue's shape)"
        )
    rec = read_record(path)
    check_gpu(rec, gpu, path)
    source = {
        "source": "record",
        "file": str(path),
        "gpu_name": rec["gpu_name"],
        "date": rec["date"],
        "row_bytes": CURVE_ROW_BYTES,
    }
    sector = gpu.l2.sector_bytes
    sectors = -(-CURVE_ROW_BYTES // sector)
    req_bytes = sectors * sector

    def slices_at(rps: float, curve: tuple) -> SliceQueue:
        per_ns = rps * 1e-9
        q = slice_queue(gpu, bytes=per_ns * req_bytes, requests=per_ns)
        return replace(q, wait_curve=curve)

    wait_curve: tuple[tuple[float, ...], tuple[float, ...]] = ((), ())
    l2 = level_curve(rec, path, gpu, "l2", source)
    if l2:
        xs = [slices_at(rps, ((), ())).utilization(1.0) for rps, _ in l2]
        ys = [lat / gpu.sm.cycle_ns - l2_hit_cycles for _, lat in l2]
        xs, ys = _rising(xs, ys, source, "l2")
        wait_curve = (tuple(xs), tuple(ys))
    queueing: Callable[[float], float] | None = modeled
    hbm = level_curve(rec, path, gpu, "hbm", source)
    if not (l2 or hbm):
        raise NmpError(
            f"{path}: key 'points': no point of {CURVE_ROW_BYTES}-B rows (record with "
            f"benchmarks/gpu_latency.py --row-bytes {CURVE_ROW_BYTES})"
        )
    if hbm:
        us, extra = [], []
        for rps, lat in hbm:
            w2 = slices_at(rps, wait_curve).wait_cycles(1.0)
            if math.isinf(w2):
                raise NmpError(
                    f"{path}: points: an hbm point at {rps / 1e9:.2f} G requests/s is beyond the "
                    "l2 curve's highest throughput (its slice wait is unknown)"
                )
            us.append(rps * 1e-9 * req_bytes / gpu.hbm.peak_bandwidth_gbps)
            extra.append(lat - hbm_unloaded_ns - w2 * gpu.sm.cycle_ns)
        us, extra = _rising(us, extra, source, "hbm")
        queueing = _curve(tuple(us), tuple(extra))
    return MemoryQueues(gpu, queueing, wait_curve, source)


def _rising(
    xs: list[float], ys: list[float], source: dict[str, Any], level: str
) -> tuple[list[float], list[float]]:
    """The points up to the throughput's peak (utilization rising with the loads in flight)."""
    keep = 1
    while keep < len(xs) and xs[keep] > xs[keep - 1]:
        keep += 1
    source.setdefault("past_peak", {})[level] = len(xs) - keep
    return xs[:keep], ys[:keep]


def record_path(name: str) -> Path:
    """A bare file name that exists in ``nmp/gpu/data/`` is that file; anything else a path."""
    p = Path(name)
    if p.parent == Path(".") and (DATA_DIR / p).is_file():
        return DATA_DIR / p
    return p


_READ: dict[tuple[str, int], dict[str, Any]] = {}


def read_record(path: Path) -> dict[str, Any]:
    """The record's JSON, checked (one-line errors naming the file and key)."""
    from nmp.fileio import read_regular

    try:
        key = (str(path.resolve()), path.stat().st_mtime_ns)
        if key in _READ:
            return _READ[key]
        # a regular file, bounded: a named pipe hung the read, /dev/zero filled the memory
        raw = read_regular(path, MAX_RECORD_BYTES)
    except NmpError as exc:
        raise NmpError(
            f"{path}: key 'hbm.loaded_latency_record': cannot read the record ({exc.message})"
        ) from None
    except OSError as exc:
        raise NmpError(
            f"{path}: key 'hbm.loaded_latency_record': cannot read the record "
            f"({exc.strerror or exc})"
        ) from None
    if len(raw) > MAX_RECORD_BYTES:
        raise NmpError(
            f"{path}: larger than {MAX_RECORD_BYTES >> 20} MiB: not a latency-probe record"
        )
    try:
        rec = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as exc:  # (JSON, UTF-8; nested past the parser's depth)
        why = "nested too deeply" if isinstance(exc, RecursionError) else exc
        raise NmpError(f"{path}: not a JSON latency-probe record ({why})") from None
    if not isinstance(rec, dict):
        raise NmpError(f"{path}: a latency-probe record is a JSON object")
    for k in RECORD_KEYS:
        if k not in rec:
            raise NmpError(f"{path}: key '{k}' missing (a benchmarks/gpu_latency.py record)")
    if not isinstance(rec["points"], list) or not rec["points"]:
        raise NmpError(f"{path}: key 'points' must be a non-empty list")
    for i, pt in enumerate(rec["points"]):
        _check_point(path, i, pt)
    _READ[key] = rec
    return rec


def _check_point(path: Path, i: int, pt: Any) -> None:
    if not isinstance(pt, dict):
        raise NmpError(f"{path}: key 'points[{i}]' must be an object")
    for k in POINT_KEYS:
        if k not in pt:
            raise NmpError(f"{path}: key 'points[{i}].{k}' missing")
    if pt["level"] not in ("hbm", "l2"):
        raise NmpError(f"{path}: key 'points[{i}].level' is {pt['level']!r}, not hbm or l2")
    for k in POINT_KEYS[1:]:
        v = pt[k]
        if not is_finite_number(v) or v <= 0:
            raise NmpError(f"{path}: key 'points[{i}].{k}' must be a finite number > 0, not {v!r}")


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def check_gpu(rec: dict[str, Any], gpu: GpuSpec, path: Path) -> None:
    """A record of another GPU is refused by name (the preset's first name part, e.g. ``h200``,
    in the record's ``gpu_name``) unless ``hbm.loaded_latency_any_gpu``."""
    part = _norm(gpu.name.split("-")[0])
    if part in _norm(str(rec["gpu_name"])) or gpu.hbm.loaded_latency_any_gpu:
        return
    raise NmpError(
        f"{path}: key 'gpu_name': recorded on {rec['gpu_name']!r}, not the preset's "
        f"{gpu.name} (set hbm.loaded_latency_any_gpu = true to use it anyway)"
    )


def level_curve(
    rec: dict[str, Any], path: Path, gpu: GpuSpec, level: str, source: dict[str, Any]
) -> list[tuple[float, float]]:
    """(requests/s, latency of one load in ns) per loads in flight per SM, rising, for the
    record's ``level`` points of :data:`CURVE_ROW_BYTES` rows (empty: none recorded)."""
    sector = gpu.l2.sector_bytes
    sectors = -(-CURVE_ROW_BYTES // sector)
    groups: dict[int, list[tuple[float, float]]] = {}
    for i, pt in enumerate(rec["points"]):
        if pt["level"] != level or int(pt["row_bytes"]) != CURVE_ROW_BYTES:
            continue
        w, k = int(pt["warps_per_sm"]), int(pt["chains"])
        rps, step_ns = float(pt["requests_per_s"]), float(pt["latency_ns"])
        sms = int(pt.get("sms_used", gpu.sm.count))
        in_flight = rps * step_ns * 1e-9
        if abs(in_flight / (sms * w * k) - 1.0) > LITTLE_SLACK:
            raise NmpError(
                f"{path}: key 'points[{i}].requests_per_s': x latency_ns gives {in_flight:,.0f} "
                f"loads in flight, not {sms} SMs x {w} warps x {k} chains (Little's law)"
            )
        cfg = replace(kernel_config(gpu), loads_in_flight=k)
        m = cfg.mlp_for(sectors, w)
        per_load = step_ns * m / k
        if gpu.sm.waits_for_slowest_load:  # the step waited for the slowest of m: its mean is less
            spread = (gpu.l2 if level == "l2" else gpu.hbm).latency_spread_ns
            per_load -= max_excess(np.array([per_load]), (spread,), np.ones(1), m)
        groups.setdefault(w * k, []).append((rps, per_load))
    out: list[tuple[float, float]] = []
    for n in sorted(groups):
        rps = float(np.mean([g[0] for g in groups[n]]))
        lat = float(np.mean([g[1] for g in groups[n]]))
        top = max((p[1] for p in out), default=0.0)
        if lat < (1.0 - MONOTONE_SLACK) * top:
            raise NmpError(
                f"{path}: key 'points': non-monotone {level} curve: {lat:,.1f} ns at {n} loads in "
                f"flight per SM, below {top:,.1f} ns at fewer (more than {MONOTONE_SLACK:.0%})"
            )
        out.append((rps, lat))
    source.setdefault("points", {})[level] = len(out)
    return out
