/* The DRAM engine (engine.c): one evaluation of a channel's controller. */
#ifndef NMP_ENGINE_CHANNEL_H
#define NMP_ENGINE_CHANNEL_H

#include "engine_state.h"

/* per rank of channel c: the commands its channel and rank let issue at clk */
FORCE_INLINE void top_masks(Sim *restrict S, int64_t c, int64_t clk, uint32_t *topm, CFG)
{
    UNPACK(S);
#ifdef __AVX512F__
    const __m512i ch = _mm512_load_si512((const void *)(rdy + c * RS));
    const __m512i vc = _mm512_set1_epi64(clk);
    for (int64_t r = 0; r < R; r++)
        topm[r] = _mm512_cmple_epi64_mask(
            _mm512_max_epi64(ch, _mm512_load_si512((const void *)(rdy + (o1 + c * R + r) * RS))),
            vc);
#elif defined(__AVX2__)
    /* max(channel, rank) <= clk: neither above clk (the commands above clk, as one mask each) */
    const __m256i vc = _mm256_set1_epi64x(clk);
    uint32_t gt_ch = 0;
    for (int h = 0; h < 8; h += 4)
        gt_ch |= (uint32_t)_mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpgt_epi64(
                     _mm256_load_si256((const void *)(rdy + c * RS + h)), vc)))
                 << h;
    for (int64_t r = 0; r < R; r++) {
        uint32_t gt = gt_ch;
        for (int h = 0; h < 8; h += 4)
            gt |= (uint32_t)_mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpgt_epi64(
                      _mm256_load_si256((const void *)(rdy + (o1 + c * R + r) * RS + h)), vc)))
                  << h;
        topm[r] = ~gt & 0xFF;
    }
#else
    for (int64_t r = 0; r < R; r++) {
        topm[r] = 0;
        for (int k = 0; k < 8; k++) topm[r] |= (uint32_t)(TOP(c, r, k) <= clk) << k;
    }
#endif
}

/* A pick: where the request is (K_*, -1: nothing), its position (lane for the active buffer),
 * the command, its rank (for refresh) */
typedef struct {
    int64_t kind, pos, cmd, rk;
} Pick;

/* The lanes of classes found not ready, by what they wait for (hits, misses on closed banks:
 * ACT, on open ones: PRE, active reads and writes): their earliest ready clock is the wake
 * time if nothing issues in the cycle. */
typedef struct {
    uint64_t set[5];
    int64_t col;
} NotReady;

/* (a) active buffer: the oldest ready column command */
FORCE_INLINE void pick_active(Sim *restrict S, int64_t c, int64_t clk, const uint32_t *topm,
                              Pick *p, NotReady *nr, CFG)
{
    UNPACK(S);
    const uint64_t am = act_m[c], ar = nw ? am : am & ~aw_m[c], aw = nw ? 0 : am & aw_m[c];
    uint64_t ready = 0, ok;
    if (ar) {
        TOP_OK(rd_cmd, ok);
        ready = LE_BITS(c, T_RD, ok & ar); /* (no branch on ok: data) */
    }
    if (aw) {
        TOP_OK(wr_cmd, ok);
        ready |= LE_BITS(c, T_WR, ok & aw);
    }
    if (!ready) {
        nr->set[3] = ar;
        nr->set[4] = aw;
        return;
    }
    /* the oldest: by arrival, then by ACT */
    int64_t best = __builtin_ctzll(ready);
    for (uint64_t rest = ready & (ready - 1); rest; rest &= rest - 1) {
        const int64_t l = __builtin_ctzll(rest);
        const int64_t a = arrive[act_q[c * TP + l]], b = arrive[act_q[c * TP + best]];
        if (a < b || (a == b && act_seq[c * TP + l] < act_seq[c * TP + best])) best = l;
    }
    p->kind = K_ACTIVE;
    p->pos = best;
    p->cmd = (aw >> best) & 1 ? wr_cmd : rd_cmd;
}

/* (c) the write mode, then the read or the write buffer: the first ready request (FR-FCFS);
 * dual issue: the column slot (want_col) looks at hits only, the row slot at misses */
FORCE_INLINE void pick_buffer(Sim *restrict S, int64_t c, int64_t clk, const uint32_t *topm,
                              int want_col, int want_row, Pick *p, NotReady *nr, CFG)
{
    UNPACK(S);
    if (WMODE_FLIPS(c)) wmode[c] = !wmode[c];
    /* (without writes, the write mode holds only while no read is queued: the read buffer is
     * then as empty as the write buffer, and picking from it gives the same nothing) */
    const int wm = nw ? 0 : wmode[c];
    const int64_t kind = wm ? K_WR : K_RD;
    const int64_t col_cmd = wm ? wr_cmd : rd_cmd;
    const int64_t col_row = wm ? T_WR : T_RD;
    const int64_t m = QL(c, kind), base = (c * 2 + kind) * QP;
    const uint64_t om = open_m[c];
    const uint64_t ph = h_m[c * 2 + kind], pm = m_m[c * 2 + kind];
    /* ready classes of the lanes holding such requests: the hit class (column command), the
     * miss class (ACT on a closed bank, PRE on an open one) */
    uint64_t hr = 0, mr = 0, ok;
    if (!want_row && ph) {
        TOP_OK(col_cmd, ok);
        if (ok & ph) hr = LE_BITS(c, col_row, ok & ph);
    }
    if (!want_col && pm) {
        TOP_OK(ACT, ok);
        if (ok & pm & ~om) mr = LE_BITS(c, T_ACT, ok & pm & ~om);
        TOP_OK(PREPB, ok);
        if (ok & pm & om) mr |= LE_BITS(c, T_PRE, ok & pm & om);
    }
    /* a PRE (or, closed-row, a column command) that would close a row an active-buffer
     * request needs is not eligible */
    const uint64_t bm = BLOCKED_MISS(c, c * 2 + kind), bh = BLOCKED_HIT(c);
    uint64_t sm = mr, sh = hr;
    if (skip_blocked) {
        sm &= ~bm;
        sh &= ~bh;
    }
    const uint64_t c0 = two ? sm : sm | sh << 32, c1 = two ? sh : 0;
    int64_t limit = m, stop = 0;
    for (int64_t w0 = 0; w0 < m && (sm | sh); w0 += WIN) {
        /* (a queue of at most WIN slots: one window of constant width, its blocks unrolled.
         * The width as a run-time minimum kept the scan a loop: 6 % more instructions on a
         * design point's engine runs and on the DDR4 cases, callgrind, "sixteenth look") */
        const int64_t row = base + w0, nx = QP <= WIN ? QP : mn(QP - w0, WIN);
        const uint64_t rs = ready_slots(Qw + row, nx, c0, c1, two);
        if (!rs) continue;
        const int64_t s = row + __builtin_ctzll(rs);
        const uint64_t cls = WCLS(Qw[s]);
        const int64_t ln = cls & lane_of;
        const int is_hit = (cls >> hsb) & 1;
        if (!skip_blocked && (((is_hit ? bh : bm) >> ln) & 1)) {
            limit = s - base; /* the scan stops at a blocked PRE */
            stop = 1;
            break;
        }
        p->kind = kind;
        p->pos = s - base;
        p->cmd = is_hit ? col_cmd : ((om >> ln) & 1 ? PREPB : ACT);
        return;
    }
    /* nothing ready: the classes queued (before a blocked stop) that are not ready go into the
     * wake time; a blocked ready one does not (it issues only after an issue here) */
    uint64_t qh = ph, qm = pm;
    if (stop) {
        uint64_t p0 = 0, p1 = 0;
        for (int64_t w0 = 0; w0 < limit; w0 += WIN)
            present_classes(Qw + base + w0, mn(limit - w0, WIN), &p0, &p1);
        qh = two ? p1 : p0 >> 32;
        qm = two ? p0 : p0 & 0xFFFFFFFFull;
    }
    if (!want_row) {
        nr->set[0] = qh & ~hr;
        nr->col = col_cmd;
    }
    if (!want_col) {
        nr->set[1] = qm & ~mr & ~om;
        nr->set[2] = qm & ~mr & om;
    }
}

/* Issue cmd at lane lb (-1: an all-bank command) of rank rk (rkl in its channel): push it into
 * the channel's and rank's histories and raise the ready clocks of what follows. */
FORCE_INLINE void issue_rules(Sim *restrict S, const Rules *restrict RU, int64_t c, int64_t clk,
                              int64_t cmd, int64_t lb, int64_t rk, int64_t rkl, CFG)
{
    UNPACK(S);
    apply_target(RU, rdy, hist, c, 0, cmd, clk);
    if (R == 2 && RU->any[1][1][cmd]) /* (the other rank: no branch on which it is) */
        raise_row(rdy + (o1 + (rk ^ 1)) * RS, RU->lat1[1][1][cmd], clk);
    else if (R > 2 && RU->any[1][1][cmd])
        for (int64_t node = c * R; node < c * R + R; node++)
            if (node != rk) raise_row(rdy + (o1 + node) * RS, RU->lat1[1][1][cmd], clk);
    apply_target(RU, rdy, hist, o1 + rk, 1, cmd, clk);
    /* bank group and bank: every row of the table, without branches (a rule that is not
     * there raises to clk + NEG, i.e. not at all) */
    int64_t *restrict tb = Tb + c * NK * TP;
    const uint64_t rkm = RK_LANES(rkl);
    if (t32) {
        /* as below, 16 lanes a block (a bank group's lanes lie in its bank's block) */
        int32_t *restrict tb32 = Tb32 + c * NK * TP;
        if (lb < 0) {
            for (int k = 0; k < NK_USED; k++)
                raise_lanes32(tb32 + k * TP, rkm, T32V(RU->all[cmd][k]));
            return;
        }
#if REL_RAISE
        /* per block of 8 lanes of its rank: each lane's latency picked by its relation to lb
         * (one permutation of the command's row of rel32), then one max: the bank group's,
         * the bank's and their siblings' rules at once, as the masked raises below give them
         * (6.3 % fewer instructions on emb_zipf_a0.8_r1m_rb64_p40@ddr4_1r, callgrind;
         * docs/performance.md, "fifteenth look") */
        const __m256i vclk = _mm256_set1_epi32((int32_t)(clk - S->tbase));
        /* the rank's blocks: where its banks are a known multiple of 8, a constant count from
         * its first (the test of each block's lanes branched on which rank issued: 0.54
         * mispredicted branches per command on random64_4g@hbm2_8ch, callgrind's model) */
        const int whole = GB_C > 0 && GB_C % 8 == 0;
        const int64_t h0 = whole ? rkl * GB_C : 0, h1 = whole ? h0 + GB_C : TP;
        for (int64_t h = h0; h < h1; h += 8) {
            if (!whole && !((rkm >> h) & 0xFF)) continue;
            const __m256i rel = _mm256_cvtepu8_epi32(
                _mm_loadl_epi64((const __m128i *)(RU->rel8[lb] + h)));
            for (int k = 0; k < NK_USED; k++) {
                int32_t *restrict t = tb32 + k * TP + h;
                const __m256i lat = _mm256_permutevar8x32_epi32(
                    _mm256_load_si256((const void *)RU->rel32[cmd][k]), rel);
                _mm256_store_si256((void *)t, _mm256_max_epi32(_mm256_load_si256((const void *)t),
                                                               _mm256_add_epi32(lat, vclk)));
            }
        }
#else
        const uint64_t gm = BG_LANES(lb);
        if (RU->has_bgs[cmd])
            for (int k = 0; k < NK_USED; k++)
                raise_lanes32(tb32 + k * TP, rkm & ~gm, T32V(RU->bgs[cmd][k]));
        if (RU->has_bks[cmd])
            for (int k = 0; k < NK_USED; k++)
                raise_lanes32(tb32 + k * TP, gm & ~(1ull << lb), T32V(RU->bks[cmd][k]));
#ifdef __AVX512F__
        const int64_t b16 = lb & ~(int64_t)15;
        const __mmask16 kg = (__mmask16)(gm >> b16), kb = (__mmask16)(1u << (lb - b16));
        for (int k = 0; k < NK_USED; k++) {
            int32_t *restrict t = tb32 + k * TP + b16;
            __m512i x = _mm512_load_si512((const void *)t);
            x = _mm512_mask_max_epi32(x, kg, x, _mm512_set1_epi32(T32V(RU->bg[cmd][k])));
            x = _mm512_mask_max_epi32(x, kb, x, _mm512_set1_epi32(T32V(RU->bk[cmd][k])));
            _mm512_store_si512((void *)t, x);
        }
#else
        /* (a build without AVX2 keeps no 32-bit table, T32_AVAIL: compiled, never taken) */
        for (int k = 0; k < NK_USED; k++) {
            raise_lanes32(tb32 + k * TP, gm, T32V(RU->bg[cmd][k]));
            raise_lanes32(tb32 + k * TP, 1ull << lb, T32V(RU->bk[cmd][k]));
        }
#endif
#endif
        return;
    }
    if (lb < 0) {
        for (int k = 0; k < NK_USED; k++) raise_lanes(tb + k * TP, rkm, clk + RU->all[cmd][k]);
        return;
    }
    const uint64_t gm = BG_LANES(lb);
    if (RU->has_bgs[cmd])
        for (int k = 0; k < NK_USED; k++)
            raise_lanes(tb + k * TP, rkm & ~gm, clk + RU->bgs[cmd][k]);
    if (RU->has_bks[cmd])
        for (int k = 0; k < NK_USED; k++)
            raise_lanes(tb + k * TP, gm & ~(1ull << lb), clk + RU->bks[cmd][k]);
    const int64_t b8 = lb & ~(int64_t)7;
    if (B_C ? 8 % B_C == 0 : S->bg_in_block) {
        /* the bank group's lanes lie in the bank's block of 8 */
#ifdef __AVX512F__
        const __mmask8 kg = (__mmask8)(gm >> b8), kb = (__mmask8)(1u << (lb - b8));
        for (int k = 0; k < NK_USED; k++) {
            int64_t *restrict t = tb + k * TP + b8;
            __m512i x = _mm512_load_si512((const void *)t);
            x = _mm512_mask_max_epi64(x, kg, x, _mm512_set1_epi64(clk + RU->bg[cmd][k]));
            x = _mm512_mask_max_epi64(x, kb, x, _mm512_set1_epi64(clk + RU->bk[cmd][k]));
            _mm512_store_si512((void *)t, x);
        }
#elif defined(__AVX2__)
        /* per half block: its lanes in the bank group, the bank's lane (all-ones words) */
        const __m256i bit = _mm256_set_epi64x(8, 4, 2, 1);
        const __m256i g = _mm256_set1_epi64x((int64_t)(gm >> b8)),
                      b = _mm256_set1_epi64x((int64_t)1 << (lb - b8));
        const __m256i kg[2] = {_mm256_cmpeq_epi64(_mm256_and_si256(g, bit), bit),
                               _mm256_cmpeq_epi64(
                                   _mm256_and_si256(_mm256_srli_epi64(g, 4), bit), bit)};
        const __m256i kb[2] = {_mm256_cmpeq_epi64(_mm256_and_si256(b, bit), bit),
                               _mm256_cmpeq_epi64(
                                   _mm256_and_si256(_mm256_srli_epi64(b, 4), bit), bit)};
        for (int k = 0; k < NK_USED; k++) {
            const __m256i vg = _mm256_set1_epi64x(clk + RU->bg[cmd][k]),
                          vb = _mm256_set1_epi64x(clk + RU->bk[cmd][k]);
            for (int h = 0; h < 2; h++) {
                int64_t *restrict t = tb + k * TP + b8 + 4 * h;
                __m256i x = _mm256_load_si256((const void *)t);
                x = _mm256_blendv_epi8(x, vg, _mm256_and_si256(kg[h], _mm256_cmpgt_epi64(vg, x)));
                x = _mm256_blendv_epi8(x, vb, _mm256_and_si256(kb[h], _mm256_cmpgt_epi64(vb, x)));
                _mm256_store_si256((void *)t, x);
            }
        }
#else
        for (int k = 0; k < NK_USED; k++) {
            int64_t *restrict t = tb + k * TP + b8;
            const int64_t vg = clk + RU->bg[cmd][k];
            for (int64_t l = 0; l < 8; l++) t[l] = ((gm >> (b8 + l)) & 1) ? mx(t[l], vg) : t[l];
            t[lb - b8] = mx(t[lb - b8], clk + RU->bk[cmd][k]);
        }
#endif
    } else {
        for (int k = 0; k < NK_USED; k++) {
            raise_lanes(tb + k * TP, gm, clk + RU->bg[cmd][k]);
            raise_lanes(tb + k * TP, 1ull << lb, clk + RU->bk[cmd][k]);
        }
    }
}

/* Refresh issued cmd (PREab or REFab) on rank rk (rkl in channel c). */
FORCE_INLINE void refresh_state(Sim *restrict S, int64_t c, int64_t clk, int64_t cmd, int64_t rk,
                                int64_t rkl, CFG)
{
    UNPACK(S);
    if (cmd != PREAB) {
        int64_t *restrict pb = pbuf + c * PQ;
        for (int64_t k = 0; k < plen[c] - 1; k++) pb[k] = pb[k + 1];
        plen[c]--;
        return;
    }
    const uint64_t rkm = RK_LANES(rkl);
    for (int64_t k = rk * GB; k < (rk + 1) * GB; k++) open_row[k] = -1;
    open_m[c] &= ~rkm;
    /* the rank's queued requests no longer hit */
    for (int64_t kk = 0; kk < (nw ? 1 : 2); kk++) {
        int64_t *restrict br = Qw + (c * 2 + kk) * QP;
        for (int64_t i = 0; i < QL(c, kk); i++)
            if ((rkm >> (WCLS(br[i]) & lane_of)) & 1) br[i] &= ~((int64_t)1 << (WSH + hsb));
        const int64_t pi = c * 2 + kk;
        for (int64_t l = rkl * GB; l < rkl * GB + GB; l++) {
            n_m[pi * TP + l] += n_h[pi * TP + l];
            n_h[pi * TP + l] = 0;
            PUT_BIT(m_m[pi], l, n_m[pi * TP + l] > 0);
        }
        h_m[pi] &= ~rkm;
    }
    active_cycles[rk] += clk - open_since[rk];
    cnt[C_BANK_OPEN] += clk * open_cnt[rk];
    open_cnt[rk] = 0;
}

/* Bank lane lb of channel c opened row (ACT) or closed: its queued requests change class. */
FORCE_INLINE void bank_switch(Sim *restrict S, int64_t c, int64_t cmd, int64_t lb,
                              int64_t from_kind, int64_t row, CFG)
{
    UNPACK(S);
    const int64_t nrow = cmd == ACT ? row : -1;
    for (int64_t kk = 0; kk < (nw ? 1 : 2); kk++) {
        const int64_t pi = c * 2 + kk, i = pi * TP + lb;
        const int32_t tot = n_h[i] + n_m[i];
        int32_t h;
        if (cmd == ACT) {
            /* all misses so far (the bank was closed); a lane holding only the request this
             * ACT serves (which leaves its buffer) needs no pass */
            if (tot == 0) continue;
            h = kk == from_kind && tot == 1
                    ? 1
                    : reset_lane(Qw + pi * QP, RUP8(QL(c, kk)), lb, nrow, hsb, S->qbits);
        } else {
            if (n_h[i] == 0) continue; /* no hit to clear */
            reset_lane(Qw + pi * QP, RUP8(QL(c, kk)), lb, -1, hsb, S->qbits);
            h = 0;
        }
        n_h[i] = h;
        n_m[i] = tot - h;
        PUT_BIT(h_m[pi], lb, h > 0);
        PUT_BIT(m_m[pi], lb, tot > h);
    }
}

/* The state after issuing p.cmd for request q (of row row) at lane lb (bank bk, rank rk) of
 * channel c. */
FORCE_INLINE void request_state(Sim *restrict S, int64_t c, int64_t clk, const Pick *p,
                                int64_t q, int64_t row, int64_t lb, int64_t bk, int64_t rk,
                                CFG)
{
    UNPACK(S);
    const int64_t cmd = p->cmd;
    /* the buffer it is in, where it is in one (without writes: the read buffer) */
    const int64_t qk = nw ? K_RD : p->kind;
    if (cmd == ACT || cmd == PREPB || cmd == RDA || cmd == WRA)
        bank_switch(S, c, cmd, lb, p->kind, row, CFG_ARGS);
    if (cmd == ACT) {
        open_row[bk] = row;
        open_m[c] |= 1ull << lb;
        if (open_cnt[rk] == 0) open_since[rk] = clk;
        open_cnt[rk]++;
        cnt[C_BANK_OPEN] -= clk;
        /* leaves its buffer (a hit now) for the active buffer */
        const int64_t pi = c * 2 + qk;
        if (--n_h[pi * TP + lb] == 0) h_m[pi] &= ~(1ull << lb);
        act_q[c * TP + lb] = q;
        act_seq[c * TP + lb] = S->n_acts++;
        if (!nw) PUT_BIT(aw_m[c], lb, p->kind == K_WR);
        act_m[c] |= 1ull << lb;
        act_rank[rk]++;
    } else if (cmd == PREPB) {
        open_row[bk] = -1;
        open_m[c] &= ~(1ull << lb);
        if (--open_cnt[rk] == 0) active_cycles[rk] += clk - open_since[rk];
        cnt[C_BANK_OPEN] += clk;
        return; /* the request stays */
    } else {
        /* its column command: the request retires */
        if (cmd == RDA || cmd == WRA) {
            open_row[bk] = -1;
            open_m[c] &= ~(1ull << lb);
            if (--open_cnt[rk] == 0) active_cycles[rk] += clk - open_since[rk];
            cnt[C_BANK_OPEN] += clk;
        }
        if (!nw && (p->kind == K_ACTIVE ? (aw_m[c] >> lb) & 1 : p->kind == K_WR)) {
            done[q] = clk; /* (a summed run too: the channel threads' write table reads it) */
            S->last_wr = clk;
        } else if (S->summing) {
            /* a summed run: its sums, and the retirement in the ring (Sim) */
            const int64_t lat = clk + rl - arrive[q], h = S->rhead++ & (SUM_RING - 1);
            S->read_lat += lat;
            S->rclk[h] = clk;
            S->rlat[h] = lat;
        } else {
            depart[q] = clk + rl;
            done[q] = clk + rl;
        }
        if (p->kind == K_ACTIVE) {
            act_m[c] &= ~(1ull << lb);
            act_rank[rk]--;
            return; /* not in a buffer */
        }
        /* a hit leaves its buffer (RDA/WRA: the closing above made it a miss) */
        const int64_t pi = c * 2 + qk;
        if (cmd == RDA || cmd == WRA) {
            if (--n_m[pi * TP + lb] == 0) m_m[pi] &= ~(1ull << lb);
        } else {
            if (--n_h[pi * TP + lb] == 0) h_m[pi] &= ~(1ull << lb);
        }
    }
    /* remove the slot, keeping the buffer's order; the freed last slot becomes padding */
    const int64_t m = QL(c, qk) - 1;
    remove_slot(Qw + (c * 2 + qk) * QP, QP, p->pos, m, WPAD);
    if (!nw && qk == K_WR) remove_slot(Qkey + c * QP, QP, p->pos, m, 0);
    QL(c, qk) = m;
}

/* The earliest ready clock of the classes found not ready (INF if none). */
FORCE_INLINE int64_t not_ready_min(Sim *restrict S, int64_t c, const NotReady *nr, CFG)
{
    UNPACK(S);
    /* per bank-table row, the lanes whose class waits for its command */
    uint64_t rows[NK];
    rows[T_ACT] = nr->set[1];
    rows[T_PRE] = nr->set[2];
    rows[T_RD] = nr->set[3] | (nr->col == rd_cmd ? nr->set[0] : 0);
    rows[T_WR] = nw ? 0 : nr->set[4] | (nr->col == wr_cmd ? nr->set[0] : 0);
    const int64_t row_cmd[NK] = {ACT, PREPB, rd_cmd, wr_cmd};
    int64_t t = INF;
    if (t32) {
        /* as below, 16 lanes a block, relative to tbase (the ready clocks above the bank
         * group brought into range: one below T32_FLOOR is below the cycle, as the floor) */
#ifdef __AVX512F__
        __m512i acc = _mm512_set1_epi32(INT32_MAX);
        for (int k = 0; k < NK_USED; k++) {
            if (!rows[k]) continue;
            const int32_t *restrict tk = TB32R(c, k);
            for (int64_t b = 0; b < NBLK / 2; b++) {
                const int64_t top = mx(TOP(c, RANK_OF(16 * b), row_cmd[k]) - S->tbase, T32_FLOOR);
                acc = _mm512_mask_min_epi32(
                    acc, (__mmask16)(rows[k] >> (16 * b)), acc,
                    _mm512_max_epi32(_mm512_load_si512((const void *)(tk + 16 * b)),
                                     _mm512_set1_epi32((int32_t)top)));
            }
        }
        const int32_t t32min = _mm512_reduce_min_epi32(acc);
        return t32min == INT32_MAX ? INF : S->tbase + t32min;
#elif defined(__AVX2__)
        /* 8 lanes a vector; the lanes not in the row's set count as INT32_MAX */
        const __m256i none = _mm256_set1_epi32(INT32_MAX);
        __m256i acc = none;
        for (int k = 0; k < NK_USED; k++) {
            if (!rows[k]) continue;
            const int32_t *restrict tk = TB32R(c, k);
            for (int64_t l = 0; l < TP; l += 8) {
                const int64_t top = mx(TOP(c, RANK_OF(l), row_cmd[k]) - S->tbase, T32_FLOOR);
                acc = _mm256_min_epi32(
                    acc, blend_signs(none,
                                     _mm256_max_epi32(_mm256_load_si256((const void *)(tk + l)),
                                                      _mm256_set1_epi32((int32_t)top)),
                                     lane_signs8(rows[k] >> l)));
            }
        }
        __m128i m4 = _mm_min_epi32(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
        m4 = _mm_min_epi32(m4, _mm_shuffle_epi32(m4, _MM_SHUFFLE(1, 0, 3, 2)));
        m4 = _mm_min_epi32(m4, _mm_shuffle_epi32(m4, _MM_SHUFFLE(2, 3, 0, 1)));
        const int32_t t32min = _mm_cvtsi128_si32(m4);
        return t32min == INT32_MAX ? INF : S->tbase + t32min;
#endif
    }
    if (R == 1 || GB % 8 == 0) {
        /* every block of 8 lanes lies in one rank: its channel's and rank's ready clock folded
         * in, one minimum over all rows and blocks, without branches */
#ifdef __AVX512F__
        __m512i acc = _mm512_set1_epi64(INF);
        for (int k = 0; k < NK_USED; k++) {
            if (!rows[k]) continue; /* (in a trace without writes, T_WR never has any) */
            const int64_t *restrict tk = TBR(c, k);
            for (int64_t b = 0; b < NBLK; b++)
                acc = _mm512_mask_min_epi64(
                    acc, (__mmask8)(rows[k] >> (8 * b)), acc,
                    _mm512_max_epi64(_mm512_load_si512((const void *)(tk + 8 * b)),
                                     _mm512_set1_epi64(TOP(c, RANK_OF(8 * b), row_cmd[k]))));
        }
        t = _mm512_reduce_min_epi64(acc);
#else
        for (int k = 0; k < NK_USED; k++)
            for (uint64_t rest = rows[k]; rest; rest &= rest - 1) {
                const int64_t l = __builtin_ctzll(rest);
                t = mn(t, mx(TBR(c, k)[l], TOP(c, RANK_OF(l), row_cmd[k])));
            }
#endif
    } else {
        for (int k = 0; k < NK_USED; k++)
            for (int64_t r = 0; r < R; r++) {
                const uint64_t m = rows[k] & RK_LANES(r);
                if (m) t = mn(t, mx(TOP(c, r, row_cmd[k]), lanes_min(TBR(c, k), NBLK, m)));
            }
    }
    return t;
}

/* A 32-bit bank table's clocks made relative to clk (engine_lanes.h): those that fall below
 * T32_FLOOR are below the cycle, and stay so at the floor. */
UNUSED static void rebase_tb32(Sim *restrict S, int64_t clk, CFG)
{
    UNPACK(S);
    const int32_t d = (int32_t)mn(clk - S->tbase, -T32_NEG);
    for (int64_t i = 0; i < C * NK * TP; i++) {
        const int32_t v = Tb32[i] - d;
        Tb32[i] = v > (int32_t)T32_FLOOR ? v : (int32_t)T32_FLOOR;
    }
    S->tbase = clk;
}

/* Slot `slot` of an evaluation of channel c at clk (a constant: each call compiles its own
 * copy): pick a command and issue it. Dual issue: a column slot (0), then a row slot (1);
 * single issue: slot 0 only. */
FORCE_INLINE void tick_slot(Sim *restrict S, const Rules *restrict RU, int64_t c, int64_t clk,
                            const int64_t slot, int *issued, int64_t *fut, NotReady *nr,
                            uint32_t *topm, CFG)
{
    UNPACK(S);
    const int want_col = dual && slot == 0, want_row = dual && slot == 1;
    Pick p = {-1, -1, -1, 0};
    /* the ready clocks above the bank group change only when a command issues */
    if (slot == 0 || *issued) top_masks(S, c, clk, topm, CFG_ARGS);
    if (!want_row && act_m[c]) pick_active(S, c, clk, topm, &p, nr, CFG_ARGS);
    if (p.kind < 0) {
        if (plen[c] > 0) {
            /* (b) priority buffer head (refresh): never in the column slot */
            if (want_col) return;
            p.rk = c * R + pbuf[c * PQ];
            p.cmd = open_cnt[p.rk] > 0 ? PREAB : REFAB;
            const int64_t t = mx(RDY(c, p.cmd), RDY(o1 + p.rk, p.cmd));
            if (t > clk) {
                *fut = mn(*fut, t);
                return;
            }
            if (p.cmd == PREAB && act_rank[p.rk] > 0) return;
            p.kind = K_REF;
        } else {
            pick_buffer(S, c, clk, topm, want_col, want_row, &p, nr, CFG_ARGS);
            if (p.kind < 0) return;
        }
    }

    /* ---- issue ---- */
    int64_t lb = -1, bk = -1, q = -1, row = -1, rk = p.rk;
    if (p.kind == K_ACTIVE) {
        lb = p.pos; /* (counted at its ACT) */
        q = act_q[c * TP + lb];
        row = open_row[c * NBC + lb];
    } else if (p.kind != K_REF) {
        int64_t *restrict ws = Qw + (c * 2 + (nw ? K_RD : p.kind)) * QP + p.pos;
        const int64_t w = *ws;
        q = WQ(w, S->qbits);
        row = WROW(w, S->qbits);
        lb = WCLS(w) & lane_of;
        if (!(w & WCOUNTED)) {
            /* its first command: a row hit, miss or conflict (only a PRE leaves it in
             * its buffer, to be seen again) */
            const int64_t orow = open_row[c * NBC + lb];
            const int64_t k = orow == row ? 0 : (orow >= 0 ? 2 : 1);
            cnt[(!nw && p.kind == K_WR ? C_HIT_W : C_HIT_R) + k]++;
            *ws = w | WCOUNTED;
        }
    }
    if (lb >= 0) {
        bk = c * NBC + lb;
        rk = c * R + RANK_OF(lb);
    }
    const int64_t rkl = rk - c * R;
    issue_rules(S, RU, c, clk, p.cmd, lb, rk, rkl, CFG_ARGS);
    cnt[p.cmd]++;
    *issued = 1;
    if (c == 0 && S->nlog < S->maxlog) {
        int64_t *lg = S->log + S->nlog++ * 5;
        lg[0] = clk;
        lg[1] = p.cmd;
        lg[2] = rk;
        lg[3] = bk;
        lg[4] = row;
    }
    if (p.kind == K_REF) refresh_state(S, c, clk, p.cmd, rk, rkl, CFG_ARGS);
    else request_state(S, c, clk, &p, q, row, lb, bk, rk, CFG_ARGS);
}

/* One evaluation of channel c's controller at memory cycle clk: refresh, then up to one
 * command per slot (two with dual issue), then its wake time. */
FORCE_INLINE void chan_tick(Sim *restrict S, const Rules *restrict RU, int64_t c, int64_t clk,
                            CFG)
{
    UNPACK(S);
    S->evals++;
    last_eval[c] = clk;
    if (t32 && clk - S->tbase >= T32_REBASE) rebase_tb32(S, clk, CFG_ARGS);
    if (ref_on && clk == next_ref[c]) {
        next_ref[c] += nrefi;
        for (int64_t r = 0; r < R; r++)
            if (plen[c] < PQ) pbuf[c * PQ + plen[c]++] = r;
    }
    int issued = 0;
    int64_t fut = ref_on ? next_ref[c] : INF;
    NotReady nr = {{0, 0, 0, 0, 0}, rd_cmd};
    uint32_t topm[8] = {0}; /* (set at slot 0: the zeros quiet GCC) */
    tick_slot(S, RU, c, clk, 0, &issued, &fut, &nr, topm, CFG_ARGS);
    if (dual) tick_slot(S, RU, c, clk, 1, &issued, &fut, &nr, topm, CFG_ARGS);
    if (!issued) {
        wake[c] = mn(fut, not_ready_min(S, c, &nr, CFG_ARGS));
        return;
    }
    wake[c] = clk + 1;
    /* Single issue: after an issue, the next evaluation that can issue is no earlier than the
     * earliest ready clock of the classes now queued in the buffer of the write mode or in the
     * active buffer (ready clocks only rise; classes change only at an issue or an arrival,
     * and accept() lowers the wake time for the class it adds). Evaluating before it would
     * find nothing; skipping it changes nothing but the count of evaluations, unless the
     * evaluation itself would act: refresh queued, or the write mode about to flip (a later
     * arrival could undo the condition). Blocked classes are left out (below); those queued
     * behind a blocked PRE that stops the scan are not: the bound may be early, never late.
     * DDR4/DDR5 reference cases: evaluations per request 3.3-3.8 -> 1.9, 4-7 %
     * faster; with dual issue (HBM) fewer evaluations find nothing (2.03 -> 1.45), and the
     * bound, computed after every issue, cost more than they did (4 % slower): not there. */
    if (dual || !S->jump || plen[c] > 0 || WMODE_FLIPS(c)) return;
    const int wm = nw ? 0 : wmode[c]; /* (as in pick_buffer) */
    const int64_t pi = c * 2 + (wm ? K_WR : K_RD);
    const uint64_t om = open_m[c], am = act_m[c], aw = nw ? 0 : aw_m[c];
    /* (a PRE blocked by an active request of its bank, or closed-row, a hit blocked so,
     * issues only after that request's column command, an issue: not counted. Counted, they
     * made the bound early at 6-14 % of the two-rank DDR4 commands, whose active buffer
     * holds more requests: evaluations per command 1.045-1.135 -> 1.00-1.02) */
    const NotReady all = {{h_m[pi] & ~BLOCKED_HIT(c), m_m[pi] & ~om,
                           m_m[pi] & om & ~BLOCKED_MISS(c, pi), am & ~aw, am & aw},
                          wm ? wr_cmd : rd_cmd};
    wake[c] = mx(clk + 1, mn(fut, not_ready_min(S, c, &all, CFG_ARGS)));
}

#endif
