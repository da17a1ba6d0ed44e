"""The EmbeddingBag kernel's memory access stream, run through the sectored L1s and the L2.

How the stock kernel maps work (``EmbeddingBag_updateOutputKernel_sum_mean`` in PyTorch's
aten/src/ATen/native/cuda/EmbeddingBag.cu, block (32, 8), grid 1024): a *chunk* is one bag x 32
features; chunk ``c`` goes to warp ``y = c % 8`` of block ``(c // 8) % grid``, which processes its
chunks in order (grid stride ``grid * 8``). For every lookup of the bag the warp loads the
32-feature slice of the row (128 B at fp32: one line, four sectors), so a row of ``dim`` elements
is read by ``ceil(dim / 32)`` warps. One (warp, lookup) pair is a *unit*; its load may touch one
or two lines (two when a slice straddles a line boundary).

Order of the stream (stated approximation; the real interleaving is cycle-level): blocks are
dispatched in waves of ``SMs x blocks_per_SM`` (block ``b`` on SM ``b % SMs``); within a wave
the resident warps advance in lock step, so the stream is lookup-step major: step 0 of every
warp of the wave (in block, warp order), then step 1, ... Each SM's L1 sees its own warps'
requests in that order; the L2 sees the L1 misses of all SMs in the same global order. (Empty
bags are skipped; a warp that runs out of chunks drops out of the step loop.)

Line sampling (``sample = k > 1``): only lines whose L2 set index is a multiple of k go through
the caches; the others are counted (requests, sectors) but their level is unknown (unit level
``LEVEL_UNSAMPLED``, filled in by the caller from the sampled mix).

Everything here runs in one numba-compiled pass per kernel, with no per-access Python.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nmp.gpu.cache import (
    POPCOUNT8,
    access_set,
    access_way,
    find_way,
    prefetch_set,
    rank_of_way,
    set_of,
)
from nmp.jit import njit

# Level at which a unit's load was served.
LEVEL_L1, LEVEL_L2, LEVEL_HBM, LEVEL_UNSAMPLED = 0, 1, 2, 3


@dataclass(frozen=True)
class KernelLayout:
    """Geometry of one EmbeddingBag launch on one table."""

    row_bytes: int
    elem_bytes: int
    dim: int
    base_bytes: int
    block_y: int
    grid_blocks: int
    sms: int
    blocks_per_sm: int
    line_bytes: int
    sector_bytes: int

    @property
    def chunks_per_bag(self) -> int:
        return -(-self.dim // 32)


@dataclass(frozen=True)
class L2Policy:
    """How the L2 is driven during one kernel: ``parts`` caches (the SM's partition serves it:
    SM ``sm`` uses cache ``sm * parts // sms``; 1 = one shared pool), the access-policy window
    [``window_lo``, ``window_hi``) in line addresses whose lines persist with ``hit_ratio``, and
    the set-aside ``carve`` (persisting ways per set)."""

    parts: int = 1
    window_lo: int = 0
    window_hi: int = 0
    hit_ratio: float = 0.0
    carve: int = 0


@dataclass
class KernelStream:
    """What one kernel's stream did in the caches.

    ``warp_levels[w, level]``: per warp (``grid_blocks * block_y``) the units (loads) served
    by L1, L2, HBM, and ``LEVEL_UNSAMPLED`` (units whose L2 outcome was not simulated under line
    sampling: the caller draws their levels from the sampled mix). The timing prices the levels
    afterwards (:mod:`nmp.gpu.timing`), so one stream serves every memory-load operating point.
    ``counts`` holds sector and line totals per level; ``level_units`` units per serving level.
    """

    warp_levels: np.ndarray
    counts: dict[str, int]
    level_units: np.ndarray


# Indices of the counters array filled by the compiled pass. "_all" counts every request;
# the others only the sampled lines (all of them when line_sample = 1).
_COUNTER_NAMES = (
    "l1_sectors",  # sectors requested from L1 (sampled lines)
    "l1_sector_hits",
    "l1_lines",  # line requests to L1 (sampled)
    "l1_line_hits",  # line requests whose every sector hit
    "l2_sectors",  # sectors requested from L2 (the L1 misses)
    "l2_sector_hits",
    "l2_lines",
    "l2_line_hits",
    "l1_sectors_all",  # every request, sampled or not
    "l1_lines_all",
    "l2_far_line_hits",  # L2 line hits older than the most recent half of their set (sampled)
)


@njit(cache=True)
def _log2_exact(d):
    """log2(d) when d is a power of two (a divide becomes a shift), else -1."""
    k = 0
    while (np.int64(1) << k) < d:
        k += 1
    return k if (np.int64(1) << k) == d else -1


@njit(cache=True, error_model="numpy")
def _div(x, d, shift):
    """``x // d`` (floor, as Python's), by an arithmetic shift when ``shift`` >= 0."""
    return x >> shift if shift >= 0 else x // d


@njit(cache=True, error_model="numpy")
def _mod(x, d, shift):
    """``x % d`` (floor, as Python's), by a mask when ``shift`` >= 0."""
    return x & (d - 1) if shift >= 0 else x % d


@njit(cache=True, error_model="numpy")
def _mod_by_recip(x, d, inv_d):
    """``x % d`` for ``d`` > 0 (floor, as Python's) without a 64-bit divide: the quotient from a
    float multiply by ``inv_d`` = 1 / d, corrected until the remainder lies in [0, d)."""
    r = x - np.int64(np.float64(x) * inv_d) * d
    while r < 0:
        r += d
    while r >= d:
        r -= d
    return r


@njit(cache=True, error_model="numpy")
def _next_chunk(c, emb, stop, w, offsets, cpb, n_chunks, stride):
    """Advance warp ``w`` to its next non-empty chunk at or after ``c[w]``; -1 when done."""
    chunk = c[w]
    while chunk < n_chunks:
        bag = chunk // cpb
        if offsets[bag + 1] > offsets[bag]:
            c[w] = chunk
            emb[w] = offsets[bag]
            stop[w] = offsets[bag + 1]
            return True
        chunk += stride
    c[w] = -1
    return False


@njit(cache=True)
def _flush(g_w, g_lv, g_n, warp_levels, level_units):
    """Record the units of one lookup group (see :func:`_run`)."""
    known = -1
    for i in range(g_n):
        known = max(known, g_lv[i])
    for i in range(g_n):
        level = g_lv[i] if g_lv[i] >= 0 else known
        if level < 0:
            level = LEVEL_UNSAMPLED
        level_units[level] += 1
        warp_levels[g_w[i], level] += 1


@njit(cache=True)
def _window_persists(line, lo, hi, threshold):
    """Access-policy window: a line in [lo, hi) gets the persisting property when its hash falls
    under ``threshold`` (hitRatio x 2^16): a fixed pseudo-random share of the window's lines, as
    the CUDA guide describes hitRatio (which accesses persist is random, ~hitRatio of them)."""
    if line < lo or line >= hi:
        return False
    h = (np.uint64(line) * np.uint64(0xD6E8FEB86659FD93)) >> np.uint64(48)
    return np.int64(h) < threshold


@njit(cache=True, error_model="numpy")
def _run(
    indices,
    offsets,
    row_bytes,
    elem_bytes,
    dim,
    base_bytes,
    block_y,
    grid_blocks,
    sms,
    blocks_per_sm,
    line_bytes,
    sector_bytes,
    l1_ent,
    l2_ent,
    sample,
    l2_parts,
    win_lo,
    win_hi,
    win_threshold,
    carve,
    t0,
    emit,
    out_lines,
    out_masks,
    out_sms,
):
    n_warps = grid_blocks * block_y
    cpb = (dim + 31) // 32
    n_chunks = (offsets.shape[0] - 1) * cpb
    warp_levels = np.zeros((n_warps, 4), dtype=np.int64)
    counters = np.zeros(len(_COUNTER_NAMES), dtype=np.int64)
    level_units = np.zeros(4, dtype=np.int64)
    # Per warp: current chunk (-1: finished), next lookup position, end of the chunk's bag.
    cur = np.arange(n_warps, dtype=np.int64)
    emb = np.zeros(n_warps, dtype=np.int64)
    stop = np.zeros(n_warps, dtype=np.int64)
    resident = sms * blocks_per_sm
    t = t0
    n_emit = 0
    l2_sets = l2_ent.shape[1]
    l1_sets = l1_ent.shape[1]
    ahead = 8
    # Power-of-two divisors (the usual case) become shifts and masks; same values either way.
    ls = _log2_exact(line_bytes)
    ss = _log2_exact(sector_bytes)
    ks = _log2_exact(sample)
    cs = _log2_exact(cpb)
    inv_l1_sets = 1.0 / l1_sets
    g_w = np.empty(cpb, dtype=np.int64)
    g_lv = np.empty(cpb, dtype=np.int64)
    g_n = 0
    g_e = -1
    for wave_start in range(0, grid_blocks, resident):
        wave_end = min(wave_start + resident, grid_blocks)
        w_end = wave_end * block_y
        active = 0
        for w in range(wave_start * block_y, wave_end * block_y):
            if _next_chunk(cur, emb, stop, w, offsets, cpb, n_chunks, n_warps):
                active += 1
        while active > 0:
            for b in range(wave_start, wave_end):
                sm = b % sms
                part = (sm * l2_parts) // sms  # the SM's L2 partition (1 = one pool)
                for w in range(b * block_y, (b + 1) * block_y):
                    # Warp w + ahead is served a few units later: start loading its first
                    # line's cache sets now (a host-cache hint; no effect on any result).
                    wp = w + ahead
                    if wp < w_end and cur[wp] >= 0:
                        p_start = (
                            base_bytes
                            + indices[emb[wp]] * row_bytes
                            + _mod(cur[wp], cpb, cs) * 32 * elem_bytes
                        )
                        p_line = _div(p_start, line_bytes, ls)
                        p_s2 = set_of(p_line, l2_sets, True)
                        if _mod(p_s2, sample, ks) == 0:
                            prefetch_set(
                                l1_ent,
                                (wp // block_y) % sms,
                                _mod_by_recip(p_line, l1_sets, inv_l1_sets),
                            )
                            prefetch_set(l2_ent, (((wp // block_y) % sms) * l2_parts) // sms, p_s2)
                    chunk = cur[w]
                    if chunk < 0:
                        continue
                    first_el = _mod(chunk, cpb, cs) * 32
                    n_el = min(32, dim - first_el)
                    e_cur = emb[w]
                    start = base_bytes + indices[e_cur] * row_bytes + first_el * elem_bytes
                    end = start + n_el * elem_bytes
                    emb[w] += 1
                    if emb[w] == stop[w]:
                        cur[w] = chunk + n_warps
                        if not _next_chunk(cur, emb, stop, w, offsets, cpb, n_chunks, n_warps):
                            active -= 1
                    level = -1
                    line = _div(start, line_bytes, ls)
                    while line * line_bytes < end:
                        lo = max(start, line * line_bytes) - line * line_bytes
                        hi = min(end, (line + 1) * line_bytes) - line * line_bytes
                        first_sec = _div(lo, sector_bytes, ss)
                        last_sec = _div(hi - 1, sector_bytes, ss)
                        nreq = last_sec - first_sec + 1
                        mask = ((np.int64(1) << (last_sec + 1)) - 1) ^ (
                            (np.int64(1) << first_sec) - 1
                        )
                        if emit:
                            out_lines[n_emit] = line
                            out_masks[n_emit] = mask
                            out_sms[n_emit] = sm
                            n_emit += 1
                        t += 1
                        counters[8] += nreq
                        counters[9] += 1
                        s2 = set_of(line, l2_sets, True)
                        if sample > 1 and _mod(s2, sample, ks) != 0:
                            line += 1
                            continue
                        hit1 = np.int64(
                            access_set(
                                l1_ent, sm, _mod_by_recip(line, l1_sets, inv_l1_sets), line, mask, t
                            )
                        )
                        nhit1 = POPCOUNT8[hit1]
                        counters[0] += nreq
                        counters[1] += nhit1
                        counters[2] += 1
                        this = LEVEL_L1
                        if nhit1 == nreq:
                            counters[3] += 1
                        else:
                            miss1 = mask & ~hit1
                            nmiss1 = nreq - nhit1
                            per = _window_persists(line, win_lo, win_hi, win_threshold)
                            way2 = find_way(l2_ent, part, s2, line)
                            rank2 = rank_of_way(l2_ent, part, s2, way2)
                            hit2 = np.int64(
                                access_way(l2_ent, part, s2, way2, line, miss1, t, per, carve)
                            )
                            nhit2 = POPCOUNT8[hit2]
                            counters[4] += nmiss1
                            counters[5] += nhit2
                            counters[6] += 1
                            if nhit2 == nmiss1:
                                counters[7] += 1
                                if 2 * rank2 >= l2_ent.shape[3]:
                                    counters[10] += 1
                                this = LEVEL_L2
                            else:
                                this = LEVEL_HBM
                        level = max(level, this)
                        line += 1
                    # The slices of one lookup (the same row, loaded at the same step by
                    # the cpb warps of its bag) share their fate: an unsampled slice takes
                    # the level of a sampled sibling (resolved when the lookup's group ends).
                    if e_cur != g_e:
                        _flush(g_w, g_lv, g_n, warp_levels, level_units)
                        g_e = e_cur
                        g_n = 0
                    g_w[g_n] = w
                    g_lv[g_n] = level
                    g_n += 1
    _flush(g_w, g_lv, g_n, warp_levels, level_units)
    return warp_levels, counters, level_units, t, n_emit


def line_requests_upper_bound(n_units: int, layout: KernelLayout) -> int:
    """Most line requests ``n_units`` loads can make (a slice touches at most this many)."""
    slice_bytes = 32 * layout.elem_bytes
    per_unit = -(-slice_bytes // layout.line_bytes) + 1
    return n_units * per_unit


def run_kernel_stream(
    indices: np.ndarray,
    offsets: np.ndarray,
    layout: KernelLayout,
    l1,
    l2,
    *,
    sample: int,
    clock,
    policy: L2Policy | None = None,
    emit: bool = False,
) -> tuple[KernelStream, tuple[np.ndarray, np.ndarray, np.ndarray] | None]:
    """Run one kernel's stream through the L1 bank ``l1`` (one cache per SM) and ``l2``.

    ``sample`` = k simulates only the lines whose L2 set index is a multiple of k (line
    sampling; 1 = every line). For the L2 that is exact set sampling; each L1 must then have
    1/k of the real sets (the caller sizes it) so that its sets see the real per-set traffic.

    ``clock`` is the LRU time shared with other kernels; ``policy`` the L2's partitions,
    access-policy window and set-aside (default: one pool, no window). With ``emit`` the line
    stream (lines, masks, SM) is returned too, in stream order (tests replay it through
    :func:`nmp.gpu.cache.simulate_trace`).
    """
    indices = np.ascontiguousarray(indices, dtype=np.int64)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    n_units = indices.shape[0] * layout.chunks_per_bag
    n_out = line_requests_upper_bound(n_units, layout) if emit else 0
    out_lines = np.empty(n_out, dtype=np.int64)
    out_masks = np.empty(n_out, dtype=np.uint8)
    out_sms = np.empty(n_out, dtype=np.int64)
    policy = policy or L2Policy()
    warp_levels, counters, level_units, t_end, n_emit = _run(
        indices,
        offsets,
        layout.row_bytes,
        layout.elem_bytes,
        layout.dim,
        layout.base_bytes,
        layout.block_y,
        layout.grid_blocks,
        layout.sms,
        layout.blocks_per_sm,
        layout.line_bytes,
        layout.sector_bytes,
        l1.ent,
        l2.ent,
        sample,
        policy.parts,
        policy.window_lo,
        policy.window_hi,
        int(round(policy.hit_ratio * 65536)),
        policy.carve,
        clock.t,
        emit,
        out_lines,
        out_masks,
        out_sms,
    )
    clock.t = int(t_end)
    stream = KernelStream(
        warp_levels=warp_levels,
        counts={name: int(v) for name, v in zip(_COUNTER_NAMES, counters, strict=True)},
        level_units=level_units,
    )
    emitted = (out_lines[:n_emit], out_masks[:n_emit], out_sms[:n_emit]) if emit else None
    return stream, emitted
