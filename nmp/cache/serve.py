"""One cache configuration end to end: requests -> layers -> hit rates, latency, memory,
backend measurement and accuracy. What ``nmp cache`` and the EVStore study run.

Definitions (the measured requests only; the warm-up requests before them fill the cache and
profile the keys for L3's candidates):

* ``hit_rate``: lookups served from memory (L1 + L2 + L3) / lookups ("per-key hit rate");
  ``l1_hit_rate``, ``l2_hit_rate``, ``l3_hit_rate`` per layer.
* ``perfect_hit_rate``: requests whose every lookup hit / requests. A request of k lookups with
  independent per-key hit rate h is perfect with probability h^k: 0.9^26 = 6 %, which is why the
  two differ so much on Criteo's 26 tables (EVStore's observation), and why a policy that
  prefers keys of nearly-perfect groups (groupScore) can raise the perfect rate at the same or
  a lower per-key rate. ``perfect_if_independent`` is that product with each table's measured
  per-key hit rate: where the measured perfect rate exceeds it, a request's keys hit together.
* ``memory_bytes``: the bytes the three layers are given; ``table_bytes`` the full table.
"""

from __future__ import annotations

import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

import nmp.guard as guard
from nmp.cache import engine, quant
from nmp.cache import policy as policies
from nmp.cache.accuracy import auc_change
from nmp.cache.kvstore import BACKENDS, measure_reads, open_store
from nmp.cache.neighbors import substitute_map
from nmp.cache.request_models import REQUEST_MODELS
from nmp.cache.requestfile import load_request_file, save_request_file
from nmp.cache.requests import RequestStream, stream_from_batches
from nmp.cache.table import init_rows
from nmp.cache.tiers import SSD_READ_US, TierLatency
from nmp.cache.users import UserModel
from nmp.errors import NmpError
from nmp.identity_cache import KeyedCache
from nmp.units import MIB
from nmp.workload import load_index_file, load_workload

L3_ENTRY_BYTES = 16  # an int64 key and an int64 substitute key
# chosen: 10^7 steps is far beyond any accuracy study of the kit (--train-steps 1e12 ran on)
MAX_TRAIN_STEPS = 10_000_000


# The largest cache layer: 1 TiB, hundreds of times the largest workload's tables
MAX_LAYER_MB = 2**20


@dataclass(frozen=True)
class CacheConfig:
    workload: str = "criteo-kaggle"
    # Access pattern overrides of the workload (nmp.workload): a reuse level (hot set) or a
    # Zipf exponent; empty / 0 keep the preset's. The accuracy experiment's stream is the
    # trainer's Zipf teacher whatever is set here (alpha is passed on, reuse is not).
    reuse: str = ""
    alpha: float = 0.0
    policy: str = "evstore"
    l1_mb: float = 1.0  # chosen default: 1/2000 of criteo-kaggle's 2.16 GB of tables
    l2_mb: float | None = None  # None: the policy's default (EVStore: as much as L1, else 0)
    l2_dtype: str = "int8"
    l3_mb: float | None = None  # None: the policy's default (EVStore: L1 / 4, else 0)
    l3_bound: float = 0.5  # relative distance bound of a substitute (nmp.cache.neighbors)
    # L3 candidates per table: as many rows as L1 + L2 hold per table, at most this many
    # (chosen: bounds the offline neighbour search to seconds on 2 cores).
    l3_candidates: int = 1024
    requests: int = 40_000  # measured requests (40K x 26 = 1.04M lookups on criteo-kaggle)
    warmup: int = 20_000  # chosen: half as many requests again fill the cache first
    seed: int = 0
    memory: str = "ddr4-3200aa"  # host DRAM preset for the tiers' latency
    ssd_read_us: float = SSD_READ_US  # one constant, sourced in nmp.cache.tiers
    backend: str = "lmdb"  # "lmdb", "sqlite" or "" (no real backend measurement)
    backend_requests: int = 2000  # requests whose misses are read from the backend and timed
    accuracy: bool = True  # train the DLRM and measure the AUC change
    train_steps: int = 300  # chosen: AUC ~0.68 on the synthetic teacher, ~5 s on one core
    index_file: str = ""  # a user's .npz index file instead of the generator
    # A user request file (nmp.cache.requestfile: text, one request per line) instead of the
    # generator; or the generator's law (nmp.cache.request_models): "independent" (every table's
    # key drawn on its own, the workload generator) or "users" (nmp.cache.users: users whose
    # histories draw related rows across tables, with the four parameters below; every default
    # chosen, swept in the study).
    request_file: str = ""
    request_model: str = "independent"
    users: int = UserModel.users
    user_history: int = UserModel.history
    user_locality: float = UserModel.locality
    user_alpha: float = UserModel.user_alpha

    def check(self) -> None:
        for key in ("l1_mb", "l2_mb", "l3_mb", "l3_bound", "ssd_read_us"):
            v = getattr(self, key)
            if v is not None and not v >= 0:
                raise NmpError(f"cache: {key} must be >= 0, got {v}")
        for key in ("l1_mb", "l2_mb", "l3_mb"):
            v = getattr(self, key)
            if v is not None and v > MAX_LAYER_MB:
                raise NmpError(f"cache: {key} must be at most 2^20 MiB (1 TiB), got {v:g}")
        if self.requests < 1:
            raise NmpError(f"cache: requests must be >= 1, got {self.requests}")
        if self.warmup < 0:
            raise NmpError(f"cache: warmup must be >= 0, got {self.warmup}")
        if self.accuracy and not 1 <= self.train_steps <= MAX_TRAIN_STEPS:
            raise NmpError(
                f"--train-steps must be in 1..{MAX_TRAIN_STEPS:,}, got {self.train_steps:,}"
            )
        quant.check_dtype(self.l2_dtype)
        policies.get(self.policy)
        if self.request_model not in REQUEST_MODELS:
            raise NmpError(
                f"cache: request_model: {REQUEST_MODELS.unknown_message(self.request_model)}"
            )
        if self.request_file and self.index_file:
            raise NmpError("cache: give a request file or an index file, not both")
        if self.backend and self.backend not in BACKENDS:
            raise NmpError(f"cache: {BACKENDS.unknown_message(self.backend)}")
        self.user_model().check()
        # a preset that is no memory (or none, "") is refused now, not after the simulation
        from nmp.memory import load_memory

        load_memory(self.memory)

    def user_model(self) -> UserModel:
        return UserModel(self.users, self.user_history, self.user_locality, self.user_alpha)


def layer_bytes(cfg: CacheConfig) -> tuple[int, int, int]:
    pol = policies.get(cfg.policy)
    l1 = cfg.l1_mb * MIB
    l2 = pol.l2_per_l1 * l1 if cfg.l2_mb is None else cfg.l2_mb * MIB
    l3 = pol.l3_per_l1 * l1 if cfg.l3_mb is None else cfg.l3_mb * MIB
    return int(l1), int(l2), int(l3)


def workload_spec(cfg: CacheConfig):
    overrides: dict = {}
    if cfg.reuse:
        overrides["reuse"] = cfg.reuse
    if cfg.alpha:
        overrides["alpha"] = cfg.alpha
    return load_workload(cfg.workload, overrides)


def build_stream(cfg: CacheConfig) -> tuple[RequestStream, int, str]:
    """(requests, how many of them are warm-up, where they came from)."""
    spec = workload_spec(cfg)
    elem = spec.tables[0].element.bytes
    if cfg.index_file or cfg.request_file:
        if cfg.request_file:
            batch, users = load_request_file(cfg.request_file, spec)
            source = f"request file {cfg.request_file} ({len(set(users))} users)"
        else:
            batch, source = load_index_file(cfg.index_file, spec), f"index file {cfg.index_file}"
        stream = stream_from_batches([batch], elem)
        warm = min(cfg.warmup, stream.requests // 2)
        return stream.head(warm + cfg.requests), warm, source
    how = spec.distribution + (f" {spec.reuse}" if spec.reuse else "")
    if spec.skew_alpha is not None:
        how += f" alpha {spec.skew_alpha:g}"
    n = cfg.warmup + cfg.requests
    model = REQUEST_MODELS.get(cfg.request_model)
    stream = _generated(
        (model.name, spec, n, model.parameters(cfg), cfg.seed),
        lambda: model.stream(cfg, spec, n, elem),
    )
    return stream, cfg.warmup, model.describe(cfg, spec, how)


# The streams generated last, by what defines them: a validation or a sweep serves several
# caches from one stream (the full EVStore claims generated the same two streams 14 times each:
# 15.8 s of a 49 s run). At most two (chosen), each of at most _STREAM_KEPT_BYTES (a larger one
# is the memory guard's to bound, not this cache's to double); their arrays are made read-only,
# so no consumer can change a stream another one is served.
_STREAMS: KeyedCache[tuple, RequestStream] = KeyedCache(2)
_STREAM_KEPT_BYTES = 256 << 20


def _generated(key: tuple, make) -> RequestStream:
    """The stream ``make()`` gives for ``key``, generated once while it stays kept (two
    threads that ask at once may both generate it: the same stream)."""
    kept = _STREAMS.get(key)
    if kept is not None:
        return kept
    stream = make()
    arrays = (stream.keys, stream.req_off, stream.table_offsets, stream.dims, stream.row_bytes)
    if sum(a.nbytes for a in arrays) <= _STREAM_KEPT_BYTES:
        for a in arrays:
            a.flags.writeable = False
        _STREAMS.put(key, stream)
    return stream


def save_requests(cfg: CacheConfig, path: str) -> None:
    """Write the requests ``cfg`` serves (warm-up and measured) as a user request file."""
    cfg.check()
    spec = workload_spec(cfg)
    n = cfg.warmup + cfg.requests
    drawn = None
    if not (cfg.request_file or cfg.index_file):
        drawn = REQUEST_MODELS.get(cfg.request_model).requests_and_users(cfg, spec, n)
    if drawn is None:
        with_users = [name for name, m in REQUEST_MODELS.items() if m.has_users]
        raise NmpError(
            "--save-requests writes generated requests with their users: use it with "
            f"--request-model {' or '.join(with_users)}"
        )
    batch, users = drawn
    save_request_file(path, batch, [f"u{u}" for u in users])


def _vectors(uniq: np.ndarray, stream: RequestStream, seed: int) -> np.ndarray | list:
    """DLRM-initialized rows of the touched keys: an [n, dim] array, or one array per key where
    the tables differ in dim."""
    if np.unique(stream.dims).size == 1:
        return init_rows(uniq, stream.table_offsets, int(stream.dims[0]), seed)
    tables = stream.tables_of(uniq)
    out: list = [None] * uniq.size
    for d in np.unique(stream.dims):
        sel = np.flatnonzero(stream.dims[tables] == d)
        rows = init_rows(uniq[sel], stream.table_offsets, int(d), seed)
        for j, i in enumerate(sel):
            out[i] = rows[j]
    return out


def run_cache(
    cfg: CacheConfig, *, tiers: TierLatency | None = None, max_memory: str | None = None
) -> dict:
    """Simulate ``cfg``; returns the flat result row (see the module docstring for terms).
    A stream that cannot fit the memory limit (:mod:`nmp.guard`) is refused before it is
    generated."""
    cfg.check()
    _guard_generated(cfg, max_memory)
    pol = policies.get(cfg.policy)
    stream, warm, source = build_stream(cfg)
    _guard_read(cfg, stream, max_memory)
    run = _simulate(cfg, pol, stream, warm)
    tiers = tiers or TierLatency.model(cfg.memory, cfg.ssd_read_us)
    per_code = tiers.per_code_ns(int(round(run.row1)), int(round(run.row2)))
    lat = tiers.request_ns(run.mcodes, run.moff, per_code)
    spec = workload_spec(cfg)
    table_bytes = spec.bytes_
    all_dram = tiers.request_ns(np.ones_like(run.mcodes), run.moff, per_code)
    b1, b2, b3 = run.layer_bytes
    caps, held, mcodes = run.caps, run.held, run.mcodes
    row = {
        "policy": cfg.policy,
        "workload": cfg.workload,
        "source": source,
        "request_model": "file" if cfg.request_file or cfg.index_file else cfg.request_model,
        "requests": int(run.moff.size - 1),
        "lookups": int(mcodes.size),
        "l1_mb": b1 / MIB,
        "l2_mb": b2 / MIB,
        "l2_dtype": cfg.l2_dtype,
        "l3_mb": b3 / MIB,
        "l1_entries": caps[0],
        "l2_entries": caps[1],
        "l3_entries": caps[2],
        **_hit_figures(run),
        "avg_latency_us": float(lat.mean()) / 1000.0,
        "p90_latency_us": float(np.percentile(lat, 90)) / 1000.0,
        "all_dram_avg_latency_us": float(all_dram.mean()) / 1000.0,
        "memory_bytes": int(b1 + b2 + b3),
        "memory_used_bytes": int(
            held[0] * run.row1 + held[1] * run.row2 + held[2] * L3_ENTRY_BYTES
        ),
        "table_bytes": table_bytes,
        "memory_reduction": 1.0 - (b1 + b2 + b3) / table_bytes,
        "l3_keys_with_substitute": int(np.count_nonzero(run.subst >= 0)),
        "tier_l1_ns": float(per_code[engine.L1_HIT]),
        "tier_l2_ns": float(per_code[engine.L2_HIT]),
        "tier_l3_ns": float(per_code[engine.L3_VIA_L1]),
        "tier_ssd_us": tiers.ssd_read_ns / 1000.0,
    }
    if cfg.backend:
        row.update(
            _measure_backend(cfg, run.uniq, run.vectors, run.inv, mcodes, run.moff, run.warm)
        )
    row["auc_change"] = None
    if cfg.accuracy:
        total_rows = sum(t.rows for t in spec.tables)
        acc = auc_change(
            workload=cfg.workload,
            policy=pol,
            entries_per_row=tuple(c / total_rows for c in caps),
            l2_dtype=cfg.l2_dtype,
            l3_bound=cfg.l3_bound,
            l3_candidates=cfg.l3_candidates,
            steps=cfg.train_steps,
            alpha=cfg.alpha,
            seed=cfg.seed,
        )
        row.update(acc)
    row["config"] = asdict(cfg)
    return row


def _guard_generated(cfg: CacheConfig, max_memory: str | None) -> None:
    """A generated stream's arrays against the memory limit, before it is drawn (an index
    file is bounded as it is read)."""
    if cfg.index_file:
        return
    spec = workload_spec(cfg)
    per_request = spec.lookups_per_sample
    dim = max(t.dim for t in spec.tables)
    key = "requests" if cfg.requests >= cfg.warmup else "warmup"
    lookups = (cfg.requests + cfg.warmup) * per_request
    guard.check(guard.cache_estimate(lookups, dim, key), max_memory)


def _guard_read(cfg: CacheConfig, stream, max_memory: str | None) -> None:
    """A file's stream against the memory limit, by its real lookups: a request file's rows
    per request are its own (multi-hot fields), not the workload's that the estimate before it
    counted, and an index file's (not guarded before: a 583 KB npz held 75 M lookups) are
    known only now."""
    source_file = cfg.request_file or cfg.index_file
    if not source_file:
        return
    if stream.keys.size == 0:  # (every figure is a mean over lookups)
        raise NmpError("no lookups in any request", file=source_file)
    flag = "--request-file" if cfg.request_file else "--index-file"
    est = guard.cache_estimate(float(stream.keys.size), float(stream.dims.max()), flag)
    guard.check(est, max_memory)


@dataclass(frozen=True)
class _CacheRun:
    """The layers simulated over a stream: each distinct key (``uniq``) and every lookup's
    index into it (``inv``), the lookups' table, the rows' mean bytes in L1 and L2, the layers'
    bytes and entries, the L3's substitutes, the lookups before the measured requests
    (``warm``), the measured lookups' codes and request offsets, the entries held at the end,
    and the keys' vectors (drawn for an L3 or a backend)."""

    uniq: np.ndarray
    inv: np.ndarray
    key_tables: np.ndarray
    tables: int
    row1: float
    row2: float
    layer_bytes: tuple[int, int, int]
    caps: tuple[int, int, int]
    subst: np.ndarray
    warm: int
    mcodes: np.ndarray
    moff: np.ndarray
    held: Any
    vectors: Any


def _simulate(cfg: CacheConfig, pol, stream, warm: int) -> _CacheRun:
    """The stream through the layers (``warm`` requests first, unmeasured)."""
    uniq, inv = np.unique(stream.keys, return_inverse=True)
    inv = inv.astype(np.int64)
    warm_lookups = int(stream.req_off[warm])
    tables = stream.tables_of(uniq)
    key_tables = tables[inv]  # the table of every lookup
    # bytes per row as the lookups see them (tables may differ in dim)
    dim = float(stream.dims[key_tables].mean())
    row1 = float(stream.row_bytes[key_tables].mean())
    row2 = float(quant.row_bytes(int(round(dim)), cfg.l2_dtype))
    b1, b2, b3 = layer_bytes(cfg)
    caps = (int(b1 // row1), int(b2 // row2), int(b3 // L3_ENTRY_BYTES))
    subst = np.full(uniq.size, -1, dtype=np.int64)
    vectors = None
    if caps[2] > 0 or cfg.backend:
        vectors = _vectors(uniq, stream, cfg.seed)
    if caps[2] > 0:
        counts = np.bincount(inv[:warm_lookups], minlength=uniq.size)
        cands = min(cfg.l3_candidates, max(1, (caps[0] + caps[1]) // len(stream.dims)))
        assert vectors is not None  # (drawn above for an L3)
        subst, _ = substitute_map(tables, vectors, counts, candidates=cands, bound=cfg.l3_bound)
    codes, _, held = engine.simulate(
        inv, stream.req_off, subst, caps, pol.insert_rule, pol.hit_rule
    )
    return _CacheRun(
        uniq=uniq,
        inv=inv,
        key_tables=key_tables,
        tables=len(stream.dims),
        row1=row1,
        row2=row2,
        layer_bytes=(b1, b2, b3),
        caps=caps,
        subst=subst,
        warm=warm_lookups,
        mcodes=codes[warm_lookups:],
        moff=stream.req_off[warm:] - warm_lookups,
        held=held,
        vectors=vectors,
    )


def _hit_figures(run: _CacheRun) -> dict[str, float]:
    """The measured lookups' hit rates by layer, the share of requests whose every lookup hit,
    and that share were the lookups to hit independently: prod_t h_t^(lookups of table t per
    request), each at its table's per-key hit rate. Beside the measured one it shows whether
    requests' keys hit together more (or less) than by chance."""
    mcodes, moff = run.mcodes, run.moff
    share = np.bincount(mcodes, minlength=5) / max(1, mcodes.size)
    hit = mcodes != engine.MISS
    misses = np.concatenate([[0], np.cumsum(~hit)])
    perfect = (misses[moff[1:]] - misses[moff[:-1]]) == 0
    mtables = run.key_tables[run.warm :]
    per_table = np.bincount(mtables, minlength=run.tables).astype(np.float64)
    hits_t = np.bincount(mtables, weights=hit, minlength=run.tables)
    used_t = per_table > 0
    h_t = hits_t[used_t] / per_table[used_t]
    with np.errstate(divide="ignore"):
        log_p = np.sum(np.log(h_t) * per_table[used_t] / max(1, moff.size - 1))
    return {
        "hit_rate": float(hit.mean()) if mcodes.size else 0.0,
        "l1_hit_rate": float(share[engine.L1_HIT]),
        "l2_hit_rate": float(share[engine.L2_HIT]),
        "l3_hit_rate": float(share[engine.L3_VIA_L1] + share[engine.L3_VIA_L2]),
        "perfect_hit_rate": float(perfect.mean()) if perfect.size else 0.0,
        "perfect_if_independent": float(np.exp(log_p)),
    }


def _measure_backend(cfg, uniq, vectors, inv, mcodes, moff, warm_lookups) -> dict:
    """Write the touched rows into the store, check they read back, and time the reads of the
    measured requests' misses (one read of all a request's misses per request)."""
    if not isinstance(vectors, np.ndarray):
        return {"backend": cfg.backend, "backend_note": "tables of several dims: not measured"}
    rows = vectors
    dim = int(rows.shape[1])
    with tempfile.TemporaryDirectory(prefix="nmp-cache-") as folder:
        store = open_store(cfg.backend, Path(folder), dim, len(uniq))
        try:
            store.put_rows(uniq, rows)
            miss = mcodes == engine.MISS
            keys = uniq[inv[warm_lookups:][miss]]
            cnt = np.concatenate([[0], np.cumsum(miss)])
            miss_off = cnt[moff]
            nz = np.flatnonzero(np.diff(miss_off) > 0)[: cfg.backend_requests]
            # requests that have misses, their miss keys back to back
            lens = (miss_off[nz + 1] - miss_off[nz]).astype(np.int64)
            take = (
                np.concatenate([np.arange(miss_off[i], miss_off[i + 1]) for i in nz])
                if nz.size
                else np.empty(0, np.int64)
            )
            got = store.get_rows(keys[take][:5000])
            if not np.array_equal(got, rows[np.searchsorted(uniq, keys[take][:5000])]):
                raise NmpError(f"backend {cfg.backend}: rows read back differ from those written")
            m = measure_reads(
                store, keys[take], np.concatenate([[0], np.cumsum(lens)]), cfg.backend_requests
            )
        finally:
            store.close()
    return {
        "backend": m["backend"],
        "backend_lookups_per_s": m["lookups_per_s"],
        "backend_lookup_us": m["lookup_us"],
        "backend_request_avg_us": m["request_avg_us"],
        "backend_request_p90_us": m["request_p90_us"],
    }
