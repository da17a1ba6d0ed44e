/* The DRAM engine (engine.c): the bank table, one int64 per bank (lane) of a channel in blocks
 * of 8 lanes, and bit masks over lanes. */
#ifndef NMP_ENGINE_LANES_H
#define NMP_ENGINE_LANES_H

#include "engine_defs.h"

/* ---- the bank table: t[lane] over the lanes (banks) of one channel, for one command ---- */

/* lanes [lo, lo + n) */
FORCE_INLINE uint64_t lanes(int64_t lo, int64_t n)
{
    return (n >= 64 ? ~0ull : (1ull << n) - 1) << lo;
}

/* the lanes l of m where t[l] <= clk (m's lanes lie in the first nblk blocks of 8) */
FORCE_INLINE uint64_t le_bits(const int64_t *restrict t, uint64_t m, int64_t clk, int64_t nblk)
{
    uint64_t r = 0;
#ifdef __AVX512F__
    const __m512i vc = _mm512_set1_epi64(clk);
    for (int64_t b = 0; b < nblk; b++)
        r |= (uint64_t)_mm512_cmple_epi64_mask(_mm512_load_si512((const void *)(t + 8 * b)), vc)
             << (8 * b);
#elif defined(__AVX2__)
    /* the lanes above clk, then the others */
    const __m256i vc = _mm256_set1_epi64x(clk);
    for (int64_t l = 0; l < 8 * nblk; l += 4) {
        const __m256i gt = _mm256_cmpgt_epi64(_mm256_load_si256((const void *)(t + l)), vc);
        r |= (uint64_t)_mm256_movemask_pd(_mm256_castsi256_pd(gt)) << l;
    }
    return ~r & m;
#else
    for (int64_t l = 0; l < 8 * nblk; l++) r |= (uint64_t)(t[l] <= clk) << l;
#endif
    return r & m;
}

/* min of t over the lanes of m (INF if none) */
FORCE_INLINE int64_t lanes_min(const int64_t *restrict t, int64_t nblk, uint64_t m)
{
#ifdef __AVX512F__
    __m512i f = _mm512_set1_epi64(INF);
    for (int64_t b = 0; b < nblk; b++)
        f = _mm512_mask_min_epi64(f, (__mmask8)(m >> (8 * b)), f,
                                  _mm512_load_si512((const void *)(t + 8 * b)));
    return _mm512_reduce_min_epi64(f);
#else
    (void)nblk;
    int64_t f = INF;
    for (; m; m &= m - 1) f = mn(f, t[__builtin_ctzll(m)]);
    return f;
#endif
}

/* t[l] = max(t[l], v) over the lanes of m (full-block stores: a scan loads whole blocks, which
 * a masked or narrower store cannot forward to) */
FORCE_INLINE void raise_lanes(int64_t *restrict t, uint64_t m, int64_t v)
{
    while (m) {
        const int64_t b = __builtin_ctzll(m) >> 3;
#ifdef __AVX512F__
        const __m512i x = _mm512_load_si512((const void *)(t + 8 * b));
        _mm512_store_si512((void *)(t + 8 * b),
                           _mm512_mask_max_epi64(x, (__mmask8)(m >> (8 * b)), x,
                                                 _mm512_set1_epi64(v)));
#else
        for (int64_t l = 8 * b; l < 8 * b + 8; l++)
            if ((m >> l) & 1) t[l] = mx(t[l], v);
#endif
        m &= ~(0xFFull << (8 * b));
    }
}


/* ---- the bank table in 32 bits: 16 lanes per vector (AVX-512 only) ----------------------
 * An instantiation whose bank table has 16 or more lanes keeps it as int32 clocks relative
 * to its Sim's tbase (engine_state.h: T32_OF): the vector work of a scan, a minimum and a
 * raise halves. Exact because a stored clock matters only through "t <= clk" at the current
 * cycle or a later one and through max(t, ready clock above the bank group) that the wake
 * time then raises to at least clk + 1: every value at or below the current cycle acts as
 * any other, so chan_tick's rebase may move old ones up to a floor (T32_FLOOR) and a rule
 * that is not there (NEG) raises to a value below the cycle. */
#ifdef __AVX512F__
#define T32_AVAIL 1
#else
#define T32_AVAIL 0
#endif
/* chan_tick rebases when the cycle is T32_REBASE past tbase; a rebased clock is at least
 * T32_FLOOR; a latency below T32_NEG (NEG) counts as T32_NEG; a run takes these
 * instantiations only where every latency of its table is below T32_LAT_MAX. Then a stored
 * clock lies in [T32_FLOOR, T32_REBASE + T32_LAT_MAX), and a raise's clk + lat in
 * [T32_NEG, T32_REBASE + T32_LAT_MAX): int32. */
#define T32_REBASE ((int64_t)1 << 29)
#define T32_FLOOR (-((int64_t)1 << 29))
#define T32_NEG (-((int64_t)1 << 30))
#define T32_LAT_MAX ((int64_t)1 << 28)

/* the lanes l of m where t[l] <= clk, t in nb blocks of 16 int32 */
FORCE_INLINE uint64_t le_bits32(const int32_t *restrict t, uint64_t m, int32_t clk, int64_t nb)
{
    uint64_t r = 0;
#ifdef __AVX512F__
    const __m512i vc = _mm512_set1_epi32(clk);
    for (int64_t b = 0; b < nb; b++)
        r |= (uint64_t)_mm512_cmple_epi32_mask(_mm512_load_si512((const void *)(t + 16 * b)), vc)
             << (16 * b);
#else
    for (int64_t l = 0; l < 16 * nb; l++) r |= (uint64_t)(t[l] <= clk) << l;
#endif
    return r & m;
}

/* t[l] = max(t[l], v) over the lanes of m, t in blocks of 16 int32 (full-block stores, as
 * raise_lanes) */
FORCE_INLINE void raise_lanes32(int32_t *restrict t, uint64_t m, int32_t v)
{
    while (m) {
        const int64_t b = __builtin_ctzll(m) >> 4;
#ifdef __AVX512F__
        const __m512i x = _mm512_load_si512((const void *)(t + 16 * b));
        _mm512_store_si512((void *)(t + 16 * b),
                           _mm512_mask_max_epi32(x, (__mmask16)(m >> (16 * b)), x,
                                                 _mm512_set1_epi32(v)));
#else
        for (int64_t l = 16 * b; l < 16 * b + 16; l++)
            if ((m >> l) & 1) t[l] = t[l] > v ? t[l] : v;
#endif
        m &= ~(0xFFFFull << (16 * b));
    }
}

#endif
