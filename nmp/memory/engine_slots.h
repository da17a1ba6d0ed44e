/* The DRAM engine (engine.c): a buffer of requests as slot words, and the scans over it. */
#ifndef NMP_ENGINE_SLOTS_H
#define NMP_ENGINE_SLOTS_H

#include "engine_defs.h"

/* ---- queues --------------------------------------------------------------------------- */

/* A queued request's slot word: its index | its row << qbits | counted << 55 | class << 56,
 * with qbits the bits of the largest index (a run's row and index fit in 55 bits together:
 * the engine refuses a run where they do not). The class is its bank's lane, plus HS (32, or
 * 64 with more than 32 banks) when it hits the bank's open row, kept up to date when the bank
 * opens or closes. Padding has class 0xFF, which no class mask holds; its bit 0x80 is above
 * every lane, so no lane compares equal to it. */
#define WSH 56
#define WCOUNTED (1ull << 55) /* its row hit, miss or conflict is counted */
#define WBITS 55              /* index and row */
#define WORD(lane, hit, q, row, qbits, hsb)                                          \
    ((int64_t)((((uint64_t)(lane) + ((uint64_t)(hit) << (hsb))) << WSH) |              \
               ((uint64_t)(row) << (qbits)) | (uint64_t)(q)))
#define WPAD ((int64_t)(0xFFull << WSH))
#define WCLS(v) ((uint64_t)(v) >> WSH)
#define WQ(v, qbits) ((int64_t)((uint64_t)(v) & ((1ull << (qbits)) - 1)))
#define WROW(v, qbits) ((int64_t)(((uint64_t)(v) & ((1ull << WBITS) - 1)) >> (qbits)))

/* Bound on the slots scanned at once (the masks are 64-bit). */
#define WIN 64

/* Ready slots among q[0 .. nx) (nx a multiple of 8, at most WIN): bit x set when the class of
 * slot x is set in the class masks (cm0: classes 0-63, cm1: classes 64-127). */
FORCE_INLINE uint64_t ready_slots(const int64_t *restrict q, int64_t nx, uint64_t cm0,
                                  uint64_t cm1, int two)
{
    uint64_t r = 0;
#ifdef __AVX512F__
    const __m512i v0 = _mm512_set1_epi64(cm0), v1 = _mm512_set1_epi64(cm1),
                  one = _mm512_set1_epi64(1), k64 = _mm512_set1_epi64(64);
    for (int64_t x = 0; x < nx; x += 8) {
        const __m512i cls = _mm512_srli_epi64(_mm512_load_si512((const void *)(q + x)), WSH);
        /* a shift by 64 or more gives 0: padding (0xFF) and the other word's classes */
        __m512i b = _mm512_srlv_epi64(v0, cls);
        if (two) b = _mm512_or_si512(b, _mm512_srlv_epi64(v1, _mm512_sub_epi64(cls, k64)));
        r |= (uint64_t)_mm512_test_epi64_mask(b, one) << x;
    }
#elif defined(__AVX2__)
    const __m256i v0 = _mm256_set1_epi64x((int64_t)cm0), v1 = _mm256_set1_epi64x((int64_t)cm1),
                  k64 = _mm256_set1_epi64x(64);
    for (int64_t x = 0; x < nx; x += 4) {
        const __m256i cls = _mm256_srli_epi64(_mm256_load_si256((const void *)(q + x)), WSH);
        __m256i b = _mm256_srlv_epi64(v0, cls); /* (as above: 64 or more gives 0) */
        if (two) b = _mm256_or_si256(b, _mm256_srlv_epi64(v1, _mm256_sub_epi64(cls, k64)));
        r |= (uint64_t)_mm256_movemask_pd(_mm256_castsi256_pd(_mm256_slli_epi64(b, 63))) << x;
    }
#else
    for (int64_t x = 0; x < nx; x++) {
        const uint64_t cls = WCLS(q[x]);
        const uint64_t b = cls < 64 ? cm0 >> cls : (two && cls < 128 ? cm1 >> (cls - 64) : 0);
        r |= (b & 1) << x;
    }
#endif
    return r;
}

/* Classes present among the first k slots of q: *p0 |= classes 0-63, *p1 |= 64-127. */
UNUSED static void present_classes(const int64_t *restrict q, int64_t k, uint64_t *p0, uint64_t *p1)
{
    for (int64_t x = 0; x < k; x++) {
        const uint64_t cls = WCLS(q[x]);
        if (cls < 64) *p0 |= 1ull << cls;
        else if (cls < 128) *p1 |= 1ull << (cls - 64);
    }
}

/* Remove slot p of a queue of m + 1 slots q[0 .. m] (QP slots, 64-byte aligned):
 * q[p .. m-1] = q[p+1 .. m], q[m] = pad. Whole blocks with full stores and a fixed trip
 * count: a variable one mispredicts its exit, and the next scan loads these blocks, which a
 * masked store cannot forward to. */
FORCE_INLINE void remove_slot(int64_t *restrict q, UNUSED int64_t QP, int64_t p, int64_t m,
                              int64_t pad)
{
#ifdef __AVX512F__
    if (QP <= 64) {
        const uint64_t lo = p >= 64 ? ~0ull : (1ull << p) - 1;      /* kept as they are */
        const uint64_t hi = m >= 64 ? 0 : ~((1ull << m) - 1);        /* padding from m on */
        const __m512i vpad = _mm512_set1_epi64(pad);
        for (int64_t x = 0; x < QP; x += 8) {
            const __m512i cur = _mm512_load_si512((const void *)(q + x));
            /* q[x + 8] is the next block's first slot (or, past the last queue, slack) */
            const __m512i nxt = _mm512_loadu_si512((const void *)(q + x + 1));
            __m512i v = _mm512_mask_mov_epi64(nxt, (__mmask8)(lo >> x), cur);
            v = _mm512_mask_mov_epi64(v, (__mmask8)(hi >> x), vpad);
            _mm512_store_si512((void *)(q + x), v);
        }
        return;
    }
#elif defined(__AVX2__)
    if (QP <= 64) {
        /* 4 slots a block: q[x + i] keeps its word below p and takes the next one from p on.
         * The slots from m + 1 on already hold padding (accept() fills a queue from its
         * front, and every removal keeps it so), so the next one is padding too, but for the
         * queue's last slot, whose next one is the following queue's first: that one is set
         * to padding (a constant lane). One blend a block, not two: 3.0 % fewer instructions
         * on a design point's engine runs (callgrind; docs/performance.md, "sixteenth look") */
        const __m256i vpad = _mm256_set1_epi64x(pad), vp = _mm256_set1_epi64x(p),
                      step = _mm256_set_epi64x(3, 2, 1, 0);
        for (int64_t x = 0; x < QP; x += 4) {
            const __m256i idx = _mm256_add_epi64(_mm256_set1_epi64x(x), step);
            const __m256i cur = _mm256_load_si256((const void *)(q + x));
            const __m256i nxt = _mm256_loadu_si256((const void *)(q + x + 1));
            __m256i v = _mm256_blendv_epi8(nxt, cur, _mm256_cmpgt_epi64(vp, idx));
            if (x + 4 == QP) v = _mm256_blend_epi32(v, vpad, 0xC0);
            _mm256_store_si256((void *)(q + x), v);
        }
        return;
    }
#endif
    memmove(q + p, q + p + 1, (m - p) * 8);
    q[m] = pad;
}

#define RUP8(x) (((x) + 7) & ~(int64_t)7)

/* Lane ln of a channel opened row nrow (-1: it closed): its slots among q[0 .. e) (e a
 * multiple of 8) get class ln + (their row == nrow ? HS : 0). Returns how many hit. */
FORCE_INLINE int32_t reset_lane(int64_t *restrict q, int64_t e, int64_t ln, int64_t nrow,
                                int hsb, int qbits)
{
    int32_t hits = 0;
    const uint64_t sel = 0x80 | ((1u << hsb) - 1);
#ifdef __AVX512F__
    const __m512i vsel = _mm512_set1_epi64(sel), vl = _mm512_set1_epi64(ln),
                  vr = _mm512_set1_epi64(nrow), vrm = _mm512_set1_epi64((1ll << WBITS) - 1),
                  vhit = _mm512_set1_epi64((int64_t)1 << (WSH + hsb));
    const __m128i qb = _mm_cvtsi64_si128(qbits);
    for (int64_t i = 0; i < e; i += 8) {
        const __m512i v = _mm512_load_si512((const void *)(q + i));
        const __mmask8 k = _mm512_cmpeq_epi64_mask(
            _mm512_and_si512(_mm512_srli_epi64(v, WSH), vsel), vl);
        const __m512i rows = _mm512_srl_epi64(_mm512_and_si512(v, vrm), qb);
        const __mmask8 kh = _mm512_mask_cmpeq_epi64_mask(k, rows, vr);
        const __m512i cleared = _mm512_mask_andnot_epi64(v, k, vhit, v);
        _mm512_store_si512((void *)(q + i), _mm512_mask_or_epi64(cleared, kh, cleared, vhit));
        hits += __builtin_popcount(kh);
    }
#elif defined(__AVX2__)
    /* as above, 4 slots a vector (1.2 % fewer instructions than the loop below as Clang
     * vectorizes it, on a DDR4 case) */
    const __m256i vsel = _mm256_set1_epi64x(sel), vl = _mm256_set1_epi64x(ln),
                  vr = _mm256_set1_epi64x(nrow), vrm = _mm256_set1_epi64x((1ll << WBITS) - 1),
                  vhit = _mm256_set1_epi64x((int64_t)1 << (WSH + hsb));
    const __m128i qb = _mm_cvtsi64_si128(qbits);
    for (int64_t i = 0; i < e; i += 4) {
        const __m256i v = _mm256_load_si256((const void *)(q + i));
        const __m256i k =
            _mm256_cmpeq_epi64(_mm256_and_si256(_mm256_srli_epi64(v, WSH), vsel), vl);
        const __m256i rows = _mm256_srl_epi64(_mm256_and_si256(v, vrm), qb);
        const __m256i kh = _mm256_and_si256(k, _mm256_cmpeq_epi64(rows, vr));
        const __m256i cleared = _mm256_andnot_si256(_mm256_and_si256(k, vhit), v);
        _mm256_store_si256((void *)(q + i),
                           _mm256_or_si256(cleared, _mm256_and_si256(kh, vhit)));
        hits += __builtin_popcount(_mm256_movemask_pd(_mm256_castsi256_pd(kh)));
    }
#else
    const int64_t hit = (int64_t)1 << (WSH + hsb);
    for (int64_t i = 0; i < e; i++) {
        const int64_t v = q[i];
        if ((WCLS(v) & sel) != (uint64_t)ln) continue;
        const int h = WROW(v, qbits) == nrow;
        q[i] = (v & ~hit) | (h ? hit : 0);
        hits += h;
    }
#endif
    return hits;
}

#endif
