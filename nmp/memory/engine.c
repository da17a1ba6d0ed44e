/* The DRAM timing engine in C: the controller and timing model of nmp/memory/engine.py's
 * `simulate` (the reference, in numba), computed another way. Every command issues at the same
 * cycle as in the reference, so every output is identical but the last, the count of
 * evaluations (tests/memory/test_mem_native_engine.py compares them all, with a log of the
 * commands). Built by nmp/memory/native_build.py (the newest clang on the PATH, else cc) with
 * -O3 -march=native, as parts compiled side by side (ENGINE_PART, below); AVX-512 paths
 * where __AVX512F__, AVX2 paths where __AVX2__, plain C loops otherwise (same results).
 *
 * How it differs from the reference, and why. Against the previous C engine, which followed
 * the reference step for step, on the 56 reference traces, engine alone, median of 3 load
 * addresses (the same code runs a few % faster or slower at another address): 1.33x with
 * AVX-512 (8.80 against 6.61 M requests/s), 1.18x with AVX2 only (6.32 against 5.37).
 *  - Readiness by class. A queued request's next command depends only on its bank and on
 *    whether it hits the bank's open row (its class), so all requests of a class are ready
 *    at the same clock. A scan computes per bank (a lane of the channel) whether its hit
 *    class and its miss class are ready, as two bit masks, and looks each queued request's
 *    class up in them: a variable shift per slot, 8 slots per AVX-512 instruction. The first
 *    set bit is the request FR-FCFS picks. Per-lane counts of queued hits and misses give the
 *    lanes that hold any, so a scan that can find nothing looks nothing up.
 *  - One table for the bank group and the bank. No rule below the rank has a window above 1
 *    (tFAW is a rank rule) and raising a ready clock is a max, so a bank's and its bank
 *    group's ready clocks are kept as their max only: Tb[row][lane], one vector per 8 banks,
 *    for the four commands evaluated below the rank (ACT, PREpb, the read and the write
 *    column command). A rule on a bank group raises its banks' lanes (one masked max per row),
 *    a rule on a bank one lane, without branches. Channel and rank ready clocks stay as the
 *    reference keeps them, with the issue histories that tFAW reads. Tables of 16 or more
 *    banks hold int32 clocks relative to a moving base, 16 lanes a vector (engine_lanes.h:
 *    1.08-1.11x on DDR4, 1.12-1.15x on DDR5; docs/performance.md, "eighth look"); AVX2
 *    builds, 8 lanes a vector, those of 8 banks too (1.15-1.18x; "tenth look").
 *  - Exact wake times. When a channel issues nothing, it sleeps until the earliest ready
 *    clock of the classes it holds (or the next refresh), computed exactly from the table.
 *    The reference keeps per-request lower bounds instead and may wake earlier, to a cycle
 *    where nothing issues; skipping such a cycle changes nothing. Without dual issue, a
 *    channel that issued sleeps likewise, until a lower bound of its next useful cycle
 *    (chan_tick).
 *  - Channels run on their own. The frontend, which offers requests strictly in order, is
 *    all that couples the channels: it advances a channel through its evaluations up to the
 *    cycle at which it offers it a request, and a refused request waits for the cycle at which
 *    its channel frees a slot. No global clock visits every channel every cycle. Each channel
 *    is a run state of its own (a Sim of one channel: its indexing constant, 1.06x per
 *    request on the HBM2 cases by instruction count), and a multi-channel run may put its
 *    channels on threads (engine_threads.h), with the same results.
 *  - The active buffer is kept by bank (a bank holds at most one request whose ACT has
 *    issued); a queued request is one slot word (request index, row, class, counted flag):
 *    a bank that opens or closes reclassifies its requests from their words, with no gather.
 *  - It takes the lines, not their decoded node ids: a request's channel, bank and row are
 *    bit ranges of its transaction number (address >> log2 tx bytes), read off as the
 *    frontend offers it. The driver then writes no id arrays for the engine to read back
 *    (5-7 int64 per transaction), and the ids are in range by construction. With the rows in
 *    the slot words: 1.11x replay() on the reference traces (engine 1.08x, the driver's
 *    decoding and checks 27 -> 13 ms of 426 ms).
 * Limits checked at setup (the driver then runs the numba engine): at most 64 banks per
 * channel and 8 ranks (the masks are 64-bit words), no windowed rule below the rank.
 * The common configurations get instantiations with the rank count, dual issue, row policy,
 * bank-table width and banks per rank and per bank group as compile-time constants, queues of
 * 32 slots (any buffer of up to 32 requests), and the state's arrays at constant offsets in
 * one allocation (engine_state.h); anything else runs a generic one. Constants spare
 * registers in this large inlined code: the arrays' offsets, the class width and the bank
 * counts gave 1.022x, 1.027x and 1.008x, 1.057x together (engine alone, median of 3 load
 * addresses). An instantiation's evaluation of a channel is one function (TICK), not a copy
 * inlined into each of the frontend's loops: 2 % faster on the reference cases, half the
 * build time (36.8 -> 18.7 s) and library (1.1 -> 0.49 MB). Buffers below 32 (the NMP
 * units' internal views: 24), HBM3's 16 channels and several DDR channels ran the generic
 * instantiation, 1.7x, 1.55x and 1.4x slower per request than on their own.
 */
#include "engine_channel.h"
#include "engine_offer.h"

/* The build compiles this file once per part (-DENGINE_PART=k, k = 1..ENGINE_PARTS), the
 * parts side by side, and links them (nmp/memory/native_build.py): each part holds some of the
 * instantiations, which take nearly all of the compile time (on a 2-core machine the library
 * then builds in about half the time). Without ENGINE_PART the file is the whole engine. */
#ifndef ENGINE_PART
#define ENGINE_PART 0
#endif
#define ENGINE_PARTS 4
#define IN_PART(k) (ENGINE_PART == 0 || ENGINE_PART == (k))
/* a function one part defines and another calls: hidden from the library's users */
#if ENGINE_PART == 0
#define PART_FN static
#else
#define PART_FN __attribute__((visibility("hidden")))
#endif
PART_FN int sim_1ch_1rk(const Args *A, const Rules *RU, int64_t *sums, int ro);
PART_FN int sim_1ch_2rk(const Args *A, const Rules *RU, int64_t *sums, int ro);
PART_FN int sim_ddr_channels(const Args *A, const Rules *RU, int64_t *sums, int *st);
PART_FN int sim_hbm(const Args *A, const Rules *RU, int64_t *sums);
PART_FN int sim_generic(const Args *A, const Rules *RU, int64_t *sums);

/* ---- the run ----------------------------------------------------------------------------- */

UNUSED static void free_sim(Sim *S) { free(S->arena); }

/* Set up a run's state (-1: out of memory, -4: request indices and rows too wide for a slot
 * word). */
UNUSED static int init_sim(Sim *S, const Args *A, int64_t C, int64_t R, int64_t QP, int64_t NBLK_C)
{
    memset(S, 0, sizeof(Sim));
    S->addr = A->addr;
    S->line_wr = A->line_wr;
    S->ks = A->dec[0];
    S->txs = A->dec[1];
    S->kmask = ((int64_t)1 << S->ks) - 1;
    for (int f = 0; f < NF; f++) {
        S->pos[f] = A->dec[2 + f];
        S->mask[f] = A->dec[2 + NF + f];
    }
    /* a slot word holds a request's index and row (engine_slots.h) */
    S->qbits = A->n > 1 ? 64 - __builtin_clzll((uint64_t)(A->n - 1)) : 1;
    const int row_bits = 64 - __builtin_clzll((uint64_t)S->mask[F_ROW] | 1);
    if (S->qbits + row_bits > WBITS) return -4;
    S->cnt = A->cnt;
    S->arrive = A->arrive;
    S->depart = A->depart;
    S->done = A->done;
    S->active_cycles = A->active_cycles;
    S->log = A->log;
    S->maxlog = A->maxlog;
    S->G = A->P->bankgroups;
    S->B = A->P->banks;
    S->nrefi = A->P->nrefi;
    S->rl = A->P->read_latency;
    S->ref_on = A->P->refresh_on != 0;
    S->skip_blocked = A->P->skip_blocked != 0;
    /* (with the scan stopping at a blocked PRE, hits queued behind it could never issue) */
    S->hold_hits = A->P->hold_hit_rows != 0 && S->skip_blocked;
    S->jump = A->P->jump != 0;
    /* the write-buffer watermarks are compared as the reference compares them, as doubles
     * (n > 25.6, n < 6.4000000000000004): for an integer n, n > x iff n > floor(x) and
     * n < x iff n < ceil(x) */
    S->wm_hi = (int64_t)__builtin_floor(A->P->wm_high);
    S->wm_lo = (int64_t)__builtin_ceil(A->P->wm_low);
    S->GB = S->G * S->B;
    S->NBC = R * S->GB;
    /* a channel's banks are lanes 0 .. NBC-1 of its bank table, NBLK blocks of 8; the class
     * masks hold HS bits per kind (miss, hit): one word (HS = 32) or two (HS = 64) */
    S->NBLK = NBLK_C ? NBLK_C : RUP8(S->NBC) / 8;
    S->hsb = S->NBC <= 32 ? 5 : 6;
    S->bg_in_block = 8 % S->B == 0;
    S->R = R;
    S->QP = QP;
    S->dual = A->P->dual_issue != 0;
    S->closed = A->P->closed_row != 0;
    /* the arena (ARENA_*), zeroed; the parts that start otherwise are set below */
    const int64_t NN = C + C * R, TP = 8 * S->NBLK, NBC = S->NBC, PQ = PQ_OF(R);
    if (posix_memalign((void **)&S->arena, 64, ARENA_END)) {
        S->arena = NULL;
        return -1;
    }
    memset(S->arena, 0, ARENA_END);
    int64_t *hist = AT(int64_t, ARENA_HIST), *open_row = AT(int64_t, ARENA_OPEN_ROW);
    int64_t *Qw = AT(int64_t, ARENA_QW), *next_ref = AT(int64_t, ARENA_NEXT_REF);
    int64_t *wake = AT(int64_t, ARENA_WAKE);
    for (int64_t i = 0; i < C * 2 * QP + 8; i++) Qw[i] = WPAD; /* (and the slack) */
    for (int64_t i = 0; i < NN * NCMD * W; i++) hist[i] = -1;
    for (int64_t i = 0; i < C * NBC; i++) open_row[i] = -1;
    for (int64_t c = 0; c < C; c++) {
        next_ref[c] = S->nrefi;
        wake[c] = 1; /* the first memory cycle is 1 (the frontend offers once before it) */
    }
    /* per lane: its rank (local) and the lanes of its bank group; per rank its lanes */
    for (int64_t r = 0; r < 8; r++) S->rk_lanes[r] = r < R ? lanes(r * S->GB, S->GB) : 0;
    for (int64_t l = 0; l < 64; l++) {
        S->lane_rk[l] = l / S->GB;
        S->lane_bg[l] = l < S->NBC ? lanes(l - l % S->B, S->B) : 0;
    }
    return 0;
}

/* Offer request j (transaction number key) at frontend step clk to channel c; it is accepted
 * (there is room, or the write buffer holds its key). */
FORCE_INLINE void accept(Sim *restrict S, const Args *restrict A, int64_t j, int64_t key,
                         int64_t c, int64_t kind, int hit, int64_t clk, CFG)
{
    UNPACK(S);
    arrive[j] = clk;
    if (!nw && hit) {
        /* read forwarding / write coalescing: served by the write buffer */
        if (kind == K_RD) {
            cnt[C_FWD]++;
            if (S->summing) {
                /* (a summed run: latency 1, data at the next step) */
                S->fwd_all++;
                S->last_acc = clk + 1;
                S->fwd_n = S->fwd_clk == clk ? S->fwd_n + 1 : 1;
                S->fwd_clk = clk;
            } else {
                A->forwarded[j] = 1;
                depart[j] = clk + 1;
                done[j] = clk + 1;
            }
        } else {
            cnt[C_COAL]++;
            done[j] = clk;
            S->last_acc = mx(S->last_acc, clk);
        }
        return;
    }
    const int64_t p = QL(c, kind);
    /* its bank's lane in the channel: (rank * G + bank group) * B + bank */
    const int64_t lb = (FIELD(key, F_RK) * S->G + FIELD(key, F_BG)) * B + FIELD(key, F_BK);
    const int64_t bq = c * NBC + lb, orow = open_row[bq];
    const int is_hit = orow == FIELD(key, F_ROW);
    Qw[(c * 2 + kind) * QP + p] = WORD(lb, is_hit, j, FIELD(key, F_ROW), S->qbits, hsb);
    if (!nw && kind == K_WR) Qkey[c * QP + p] = key;
    QL(c, kind) = p + 1;
    const int64_t pi = c * 2 + kind;
    if (is_hit) {
        n_h[pi * TP + lb]++;
        h_m[pi] |= 1ull << lb;
    } else {
        n_m[pi * TP + lb]++;
        m_m[pi] |= 1ull << lb;
    }
    if (wake[c] > clk + 1) {
        /* the channel sleeps until wake[c]: only the new request, or the write mode its
         * arrival flips, can change that (a request blocked by the active request of its
         * bank issues only after that request's column command, one held back by the hits
         * queued to its bank's open row only after theirs: issues, so it cannot.
         * Lowering the wake time for it gave 1,584 of the 1,783 evaluations that found
         * nothing on emb_uniform_r4m_rb256_p20@ddr4_2r) */
        if (plen[c] == 0 && WMODE_FLIPS(c)) {
            wake[c] = clk + 1;
        } else if (!(((is_hit ? BLOCKED_HIT(c) : BLOCKED_MISS(c, pi)) >> lb) & 1)) {
            int64_t cc, row;
            if (is_hit) {
                cc = kind == K_WR ? wr_cmd : rd_cmd;
                row = kind == K_WR ? T_WR : T_RD;
            } else {
                cc = orow < 0 ? ACT : PREPB;
                row = orow < 0 ? T_ACT : T_PRE;
            }
            const int64_t t = mx(TOP(c, RANK_OF(lb), cc), TB_AT(c, row, lb));
            if (t < wake[c]) wake[c] = mx(t, clk + 1);
        }
    }
}

/* The key of request j in channel c's write buffer? */
FORCE_INLINE int in_write_buffer(Sim *restrict S, int64_t c, int64_t key, CFG)
{
    UNPACK(S);
    const int64_t m = QL(c, K_WR);
    if (m == 0) return 0;
    const int64_t *restrict kk = Qkey + c * QP;
    int hit = 0;
#ifdef __AVX512F__
    if (QP <= 64) {
        /* one compare per block of 8 slots; slots at and above m are not in the buffer */
        uint64_t hm = 0;
        const __m512i vkey = _mm512_set1_epi64(key);
        for (int64_t i = 0; i < QP; i += 8)
            hm |= (uint64_t)_mm512_cmpeq_epi64_mask(_mm512_loadu_si512((const void *)(kk + i)),
                                                    vkey)
                  << (i & 63);
        return (hm & (m >= 64 ? ~0ull : ((1ull << m) - 1))) != 0;
    }
#elif defined(__AVX2__)
    if (QP <= 64) {
        /* as above, 4 slots a compare */
        uint64_t hm = 0;
        const __m256i vkey = _mm256_set1_epi64x(key);
        for (int64_t i = 0; i < QP; i += 4)
            hm |= (uint64_t)_mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpeq_epi64(
                      _mm256_loadu_si256((const void *)(kk + i)), vkey)))
                  << (i & 63);
        return (hm & (m >= 64 ? ~0ull : ((1ull << m) - 1))) != 0;
    }
#endif
    for (int64_t i = 0; i < m; i++) hit |= kk[i] == key;
    return hit;
}

/* ---- a channel: its own Sim (C = 1), driven by the frontend ------------------------------ */

/* Evaluate channel S at cycle clk: through the instantiation's tick where it has one (one copy
 * of the evaluation's code, called from the frontend's three loops: inlined at each, the
 * copies spilled out of the instruction cache), else inlined */
#define TICK(S_, RU_, clk_) (tick ? tick(S_, RU_, clk_) : chan_tick(S_, RU_, 0, clk_, CFG_ARGS))

/* The cycle of channel S's next evaluation (without jumps, a test of the reference's, every
 * cycle). */
FORCE_INLINE int64_t ch_next(Sim *restrict S, CFG)
{
    UNPACK(S);
    return S->jump ? wake[0] : last_eval[0] + 1;
}

/* Channel S through its evaluations up to cycle t. */
FORCE_INLINE void ch_advance(Sim *restrict S, const Rules *restrict RU, int64_t t, CFG)
{
    for (int64_t e; (e = ch_next(S, CFG_ARGS)) <= t;) TICK(S, RU, e);
}

/* Offer request j (transaction number key, buffer kind) to channel S at frontend step fclk:
 * advance it to fclk; while the buffer is full (and the write buffer does not hold the key),
 * evaluate it until it frees a slot; accept (*hit: served by the write buffer). The step it
 * was accepted at, or -1: nothing can ever issue (a deadlock; its last evaluation is the
 * end). */
FORCE_INLINE int64_t ch_offer(Sim *restrict S, const Rules *restrict RU, const Args *restrict A,
                              int64_t j, int64_t key, int64_t kind, int64_t fclk, int *hit_out,
                              CFG)
{
    UNPACK(S);
    ch_advance(S, RU, fclk, CFG_ARGS);
    const int hit = nw ? 0 : in_write_buffer(S, 0, key, CFG_ARGS);
    *hit_out = hit;
    const int64_t cap = kind == K_WR ? A->P->write_queue : A->P->read_queue;
    while (!hit && QL(0, kind) >= cap) {
        const int64_t t = ch_next(S, CFG_ARGS);
        if (t >= INF) return -1;
        TICK(S, RU, t);
        fclk = t;
    }
    accept(S, A, j, key, 0, kind, hit, fclk, CFG_ARGS);
    return fclk;
}

/* Evaluate channel S until every request it holds has completed (1: it never can). */
FORCE_INLINE int ch_drain(Sim *restrict S, const Rules *restrict RU, CFG)
{
    UNPACK(S);
    while (QL(0, K_RD) > 0 || (!nw && QL(0, K_WR) > 0) || act_m[0]) {
        const int64_t t = ch_next(S, CFG_ARGS);
        if (t >= INF) return 1;
        TICK(S, RU, t);
    }
    return 0;
}

/* The run's end at cycle fclk for channel S: the time its ranks, and its banks, had a row
 * open until then. */
FORCE_INLINE void ch_finish(Sim *restrict S, int64_t fclk, CFG)
{
    UNPACK(S);
    for (int64_t r = 0; r < R; r++) {
        if (open_cnt[r] > 0) active_cycles[r] += fclk - open_since[r];
        cnt[C_BANK_OPEN] += fclk * open_cnt[r];
    }
}

/* Channel S's banks with a row open now (the snapshot's bank-open cycles close them there). */
FORCE_INLINE int64_t ch_open_banks(Sim *restrict S, CFG)
{
    UNPACK(S);
    int64_t open = 0;
    for (int64_t r = 0; r < R; r++) open += open_cnt[r];
    return open;
}

#include "engine_threads.h"

/* A summed run, at `cycles` (after every channel has been advanced to it): channel S's reads
 * whose data returned by then, their latencies' sum: those served less the newest retirements
 * that depart after `cycles` (at most rl of them: SUM_RING) and the reads forwarded at the
 * step `cycles` itself (latency 1, data at cycles + 1). */
FORCE_INLINE void sum_at(Sim *restrict S, int64_t cycles, CFG)
{
    UNPACK(S);
    int64_t pending = 0;
    const int64_t oldest = S->rhead > SUM_RING ? S->rhead - SUM_RING : 0;
    for (int64_t k = S->rhead - 1; k >= oldest && S->rclk[k & (SUM_RING - 1)] + rl > cycles; k--)
        pending += S->rlat[k & (SUM_RING - 1)];
    S->at_sum = S->read_lat - pending + S->fwd_all - (S->fwd_clk == cycles ? S->fwd_n : 0);
}

/* A summed run's read sums (read_sums_c's out[1..5)) over its channels' parts. */
UNUSED static void sum_end(const Sim *sims, int64_t NCH, int64_t *sums)
{
    int64_t at_sum = 0, served = 0, served_lat = 0, last = 0;
    for (int64_t c = 0; c < NCH; c++) {
        const Sim *S = &sims[c];
        at_sum += S->at_sum;
        served += S->rhead + S->fwd_all;
        served_lat += S->read_lat + S->fwd_all;
        const int64_t last_rd = S->rhead ? S->rclk[(S->rhead - 1) & (SUM_RING - 1)] + S->rl : 0;
        last = mx(last, mx(mx(last_rd, S->last_wr), S->last_acc));
    }
    sums[1] = at_sum;
    sums[2] = served;
    sums[3] = served_lat;
    sums[4] = last;
}

/* A run of NCH channels (NCH_C: known at compile time, else 0), each its own Sim with C = 1:
 * each channel's controller runs on its own, lazily; the frontend, which offers the requests
 * strictly in order, advances a channel through its evaluations up to the cycle at which it
 * offers it a request, and is all that couples the channels. */
FORCE_INLINE int sim_core(const Args *restrict A, const Rules *restrict RU, int64_t *sums,
                          void *(*worker)(void *), int64_t NCH_C, CFG)
{
    const int64_t n = A->n, F = A->P->frontend_ratio;
    const int64_t NCH = NCH_C ? NCH_C : A->P->channels;
    const int drain = A->P->drain != 0;
    Sim one, *sims = NCH == 1 ? &one : calloc(NCH, sizeof(Sim));
    int64_t *cnts = calloc(NCH * N_COUNTERS, 8);
    int status = sims && cnts ? 0 : -1;
    int64_t ready = 0; /* channels set up */
    for (; status == 0 && ready < NCH; ready++) {
        Sim *S = &sims[ready];
        status = init_sim(S, A, C, R, QP, NBLK_C);
        if (status) break;
        /* its own counters (summed below), its ranks' active cycles, the log for channel 0 */
        S->cnt = cnts + ready * N_COUNTERS;
        S->active_cycles = A->active_cycles + ready * R;
        if (ready) S->maxlog = 0;
        S->summing = sums != NULL;
        S->fwd_clk = -1;
    }
    if (status) goto out;
    /* the per-transaction outputs start at -1 (a summed run keeps none: no pass) */
    if (!sums) {
        for (int64_t i = 0; i < n; i++) A->arrive[i] = A->depart[i] = A->done[i] = -1;
        if (n > 0) memset(A->forwarded, 0, n);
    }
    memset(A->cnt, 0, N_COUNTERS * 8);
    memset(A->cnt_snap, 0, N_COUNTERS * 8);
    memset(A->active_cycles, 0, NCH * R * 8);
    {
        Sim *S = sims; /* the decoding, the same in every channel */
        UNPACK(S);
        /* The frontend works in steps: at memory cycle fclk, after that cycle's evaluation
         * (the first step, at 0, before any), it offers up to F requests (the first step 1)
         * and stops at the first it cannot place or that has not arrived. A refused request
         * is offered again at every later step; its buffer frees a slot only when its channel
         * issues (and nothing enters the write buffer meanwhile, so its key cannot appear),
         * so it is accepted at the step of the cycle that frees one. */
        int64_t fclk = 0, budget = 1, cycles = -1;
        const int64_t threads = mn(mn(A->threads, NCH), MAX_THREADS);
        if (threads > 1 && worker) {
            fclk = front_threads(A, RU, sims, NCH, threads, worker, &status, CFG_ARGS);
            if (status) goto finish;
        } else {
            for (int64_t j = 0; j < n; j++) {
                const int64_t arr = A->line_arr[j >> S->ks], key = TX_KEY(j);
                if (arr > fclk) {
                    fclk = arr;
                    budget = F;
                } else if (budget == 0) {
                    fclk++;
                    budget = F;
                }
                Sim *Sc = NCH == 1 ? sims : &sims[FIELD(key, F_CH)];
                int hit;
                const int64_t kind = !nw && Q_WR(j) ? K_WR : K_RD;
                const int64_t at = ch_offer(Sc, RU, A, j, key, kind, fclk, &hit, CFG_ARGS);
                if (at < 0) {
                    status = 1; /* nothing can ever issue: a deadlock */
                    fclk = AT_OF(Sc, int64_t, ARENA_LAST_EVAL)[0];
                    goto finish;
                }
                if (at != fclk) {
                    fclk = at;
                    budget = F;
                }
                budget--;
            }
        }
        /* Ramulator's end: the step that offered the last request; the counts then */
        cycles = fclk;
        for (int64_t c = 0; c < NCH; c++) ch_advance(&sims[c], RU, cycles, CFG_ARGS);
        for (int64_t i = 0; i < NCH * N_COUNTERS; i++) A->cnt_snap[i % N_COUNTERS] += cnts[i];
        for (int64_t c = 0; c < NCH; c++)
            A->cnt_snap[C_BANK_OPEN] += cycles * ch_open_banks(&sims[c], CFG_ARGS);
        if (sums)
            for (int64_t c = 0; c < NCH; c++) sum_at(&sims[c], cycles, CFG_ARGS);
        if (drain) {
            /* until every request has completed: the first step at which every buffer of
             * every channel is empty */
            int64_t end = cycles;
            for (int64_t c = 0; c < NCH; c++) {
                status |= ch_drain(&sims[c], RU, CFG_ARGS);
                end = mx(end, AT_OF(&sims[c], int64_t, ARENA_LAST_EVAL)[0]);
            }
            for (int64_t c = 0; c < NCH; c++) ch_advance(&sims[c], RU, end, CFG_ARGS);
            fclk = end;
        }
    finish:
        for (int64_t c = 0; c < NCH; c++) ch_finish(&sims[c], fclk, CFG_ARGS);
        int64_t evals = 0;
        for (int64_t c = 0; c < NCH; c++) evals += sims[c].evals;
        for (int64_t i = 0; i < NCH * N_COUNTERS; i++) A->cnt[i % N_COUNTERS] += cnts[i];
        A->out_scalars[0] = status;
        A->out_scalars[1] = cycles;
        A->out_scalars[2] = fclk;
        A->out_scalars[3] = evals;
        if (sums) sum_end(sims, NCH, sums);
    }
out:
    for (int64_t c = 0; c < ready && sims; c++) free_sim(&sims[c]);
    if (sims != &one) free(sims);
    free(cnts);
    return status;
}

/* Instantiations: the common configurations (buffers of up to 32 requests) get constant
 * ranks, dual issue, row policy, bank-table blocks and (4 banks per bank group, 16 or 32 per
 * rank; 8 in one group) bank counts, and their evaluation out of line (TICK); anything else
 * runs the generic one. A multi-channel one (HBM, several DDR channels) has its channel
 * threads' entry (engine_threads.h), of the same configuration. */
#define GENERIC_CFG(p) \
    1, (p)->ranks, (p)->dual_issue != 0, (p)->closed_row != 0, \
        RUP8(mx((p)->read_queue, (p)->write_queue)), 0, 0, 0, 0, tick_generic

/* name: the evaluation of a channel of a configuration (CFG without its tick) */
#define TICK_OF(name, ...)                                                                 \
    __attribute__((noinline)) PART_FN void name(Sim *restrict S, const Rules *restrict RU, \
                                                int64_t clk)                               \
    {                                                                                      \
        chan_tick(S, RU, 0, clk, __VA_ARGS__, NULL);                                       \
    }

/* ro: a run without writes (reads_only). The instantiations that read-only runs use most (the
 * reference cases' DDR4 and DDR5 organizations, one rank and two; a design point's narrowed
 * views) have a second copy with nw set, where the write buffer, its lookups and the bank
 * table's write row compile away: 1.05-1.10x on those runs (docs/performance.md, "fifth
 * look"). HBM has none: 1.02-1.04x on the HBM2 cases did not pay for 3 s more build. */
#define C1R1(nblk, gb, b) 1, 1, 0, 0, 32, nblk, gb, b, 0
#define C1R1_RO(nblk, gb, b) 1, 1, 0, 0, 32, nblk, gb, b, 1
#define C1R2(nblk, gb, b) 1, 2, 0, 0, 32, nblk, gb, b, 0
#define C1R2_RO(nblk, gb, b) 1, 2, 0, 0, 32, nblk, gb, b, 1
/* (the ticks several DDR channels share with one: defined in part 1 and 2) */
PART_FN void tick_1r16(Sim *restrict S, const Rules *restrict RU, int64_t clk);
PART_FN void tick_1r32(Sim *restrict S, const Rules *restrict RU, int64_t clk);
#if IN_PART(1)
TICK_OF(tick_1r16, C1R1(2, 16, 4))
TICK_OF(tick_1r32, C1R1(4, 32, 4))
TICK_OF(tick_1r8, C1R1(1, 8, 8))
TICK_OF(tick_1r_b1, C1R1(1, 0, 0))
TICK_OF(tick_1r_b2, C1R1(2, 0, 0))
TICK_OF(tick_1r_b4, C1R1(4, 0, 0))
TICK_OF(tick_1r_any, C1R1(0, 0, 0))
TICK_OF(tick_1r16_ro, C1R1_RO(2, 16, 4))
TICK_OF(tick_1r32_ro, C1R1_RO(4, 32, 4))
TICK_OF(tick_1r8_ro, C1R1_RO(1, 8, 8))
TICK_OF(tick_1r_b1_ro, C1R1_RO(1, 0, 0))

__attribute__((noinline)) PART_FN int sim_1ch_1rk(const Args *A, const Rules *RU,
                                                 int64_t *sums, int ro)
{
    /* (b4: the instantiations of 16 and 32 banks keep their bank table in 32 bits, which
     * needs the table's latencies below T32_LAT_MAX: else the ones of 2 and 4 blocks) */
    const int64_t nb = A->P->bankgroups * A->P->banks;
    const int64_t b4 = A->P->banks == 4 && T32_FITS(RU);
    if (nb == 16 && b4)
        return ro ? sim_core(A, RU, sums, NULL, 1, C1R1_RO(2, 16, 4), tick_1r16_ro)
                  : sim_core(A, RU, sums, NULL, 1, C1R1(2, 16, 4), tick_1r16);
    if (nb == 32 && b4)
        return ro ? sim_core(A, RU, sums, NULL, 1, C1R1_RO(4, 32, 4), tick_1r32_ro)
                  : sim_core(A, RU, sums, NULL, 1, C1R1(4, 32, 4), tick_1r32);
    /* (a bank-level unit's internal view: its 8 banks, one bank group; on AVX2 builds these
     * of one block keep their table in 32 bits too, with the same guard: else tick_1r_b2) */
    const int64_t b1 = !T32_NARROW || T32_FITS(RU);
    if (nb == 8 && A->P->banks == 8 && b1)
        return ro ? sim_core(A, RU, sums, NULL, 1, C1R1_RO(1, 8, 8), tick_1r8_ro)
                  : sim_core(A, RU, sums, NULL, 1, C1R1(1, 8, 8), tick_1r8);
    if (nb <= 8 && b1)
        return ro ? sim_core(A, RU, sums, NULL, 1, C1R1_RO(1, 0, 0), tick_1r_b1_ro)
                  : sim_core(A, RU, sums, NULL, 1, C1R1(1, 0, 0), tick_1r_b1);
    if (nb <= 16) return sim_core(A, RU, sums, NULL, 1, C1R1(2, 0, 0), tick_1r_b2);
    if (nb <= 32) return sim_core(A, RU, sums, NULL, 1, C1R1(4, 0, 0), tick_1r_b4);
    return sim_core(A, RU, sums, NULL, 1, C1R1(0, 0, 0), tick_1r_any);
}

#endif

#if IN_PART(2)
TICK_OF(tick_2r16, C1R2(4, 16, 4))
TICK_OF(tick_2r32, C1R2(8, 32, 4))
TICK_OF(tick_2r_any, C1R2(0, 0, 0))
TICK_OF(tick_2r16_ro, C1R2_RO(4, 16, 4))

__attribute__((noinline)) PART_FN int sim_1ch_2rk(const Args *A, const Rules *RU,
                                                 int64_t *sums, int ro)
{
    const int64_t nb = A->P->bankgroups * A->P->banks;
    const int64_t b4 = A->P->banks == 4 && T32_FITS(RU); /* (as above) */
    if (nb == 16 && b4)
        return ro ? sim_core(A, RU, sums, NULL, 1, C1R2_RO(4, 16, 4), tick_2r16_ro)
                  : sim_core(A, RU, sums, NULL, 1, C1R2(4, 16, 4), tick_2r16);
    if (nb == 32 && b4) return sim_core(A, RU, sums, NULL, 1, C1R2(8, 32, 4), tick_2r32);
    return sim_core(A, RU, sums, NULL, 1, C1R2(0, 0, 0), tick_2r_any);
}

/* Several DDR channels: each channel as above (the same ticks), channels on threads */
static void *ddr_1r16_crew(void *hand) { return crew_loop(hand, C1R1(2, 16, 4), tick_1r16); }
static void *ddr_1r32_crew(void *hand) { return crew_loop(hand, C1R1(4, 32, 4), tick_1r32); }
static void *ddr_2r16_crew(void *hand) { return crew_loop(hand, C1R2(4, 16, 4), tick_2r16); }
static void *ddr_2r32_crew(void *hand) { return crew_loop(hand, C1R2(8, 32, 4), tick_2r32); }

/* 1: ran (*st its status); 0: not a configuration it takes */
__attribute__((noinline)) PART_FN int sim_ddr_channels(const Args *A, const Rules *RU,
                                                       int64_t *sums, int *st)
{
    const int64_t R = A->P->ranks, nb = A->P->bankgroups * A->P->banks, b4 = A->P->banks == 4;
    if (!b4 || (nb != 16 && nb != 32) || !T32_FITS(RU)) return 0;
    if (R == 1 && nb == 16) *st = sim_core(A, RU, sums, ddr_1r16_crew, 0, C1R1(2, 16, 4), tick_1r16);
    else if (R == 1) *st = sim_core(A, RU, sums, ddr_1r32_crew, 0, C1R1(4, 32, 4), tick_1r32);
    else if (nb == 16) *st = sim_core(A, RU, sums, ddr_2r16_crew, 0, C1R2(4, 16, 4), tick_2r16);
    else *st = sim_core(A, RU, sums, ddr_2r32_crew, 0, C1R2(8, 32, 4), tick_2r32);
    return 1;
}

#endif

/* HBM: any number of channels, of 2 pseudo-channels (as ranks), dual issue */
#define HBM(nblk, gb, b) 1, 2, 1, 0, 32, nblk, gb, b, 0
#if IN_PART(3)
TICK_OF(tick_hbm, HBM(4, 16, 4))
TICK_OF(tick_hbm_any, HBM(0, 0, 0))
static void *hbm_crew(void *hand) { return crew_loop(hand, HBM(4, 16, 4), tick_hbm); }
static void *hbm_any_crew(void *hand) { return crew_loop(hand, HBM(0, 0, 0), tick_hbm_any); }

__attribute__((noinline)) PART_FN int sim_hbm(const Args *A, const Rules *RU, int64_t *sums)
{
    if (A->P->bankgroups * A->P->banks == 16 && A->P->banks == 4 && T32_FITS(RU))
        return sim_core(A, RU, sums, hbm_crew, 0, HBM(4, 16, 4), tick_hbm);
    return sim_core(A, RU, sums, hbm_any_crew, 0, HBM(0, 0, 0), tick_hbm_any);
}

#endif

#if IN_PART(4)
/* The generic instantiation's evaluation, its configuration read from the run state: one
 * function, as the others' (TICK_OF), not chan_tick inlined into each of the frontend's loops
 * (the frontend, its offer, its drain and the channel threads' loop: a copy each), which
 * compiled for 37 of the library's 63 s (Clang 14, -O3, the 2-core AMD EPYC VM). The runs
 * that take it (buffers above 32, closed rows, unusual organizations) are about 5 % slower
 * for it (eight such runs of the reference traces: 148-152 against 140-143 ms). */
__attribute__((noinline)) static void tick_generic(Sim *restrict S, const Rules *restrict RU,
                                                   int64_t clk)
{
    chan_tick(S, RU, 0, clk, 1, S->R, S->dual, S->closed, S->QP, 0, 0, 0, 0, NULL);
}

static void *generic_crew(void *hand)
{
    const Params *p = ((Hand *)hand)->crew->A->P;
    return crew_loop(hand, GENERIC_CFG(p));
}

__attribute__((noinline)) PART_FN int sim_generic(const Args *A, const Rules *RU, int64_t *sums)
{
    return sim_core(A, RU, sums, generic_crew, 0, GENERIC_CFG(A->P));
}

/* The size of the structures a caller mirrors (native.py checks them): 0 Params, 1 Args. */
int64_t struct_size_c(int64_t which)
{
    return which == 0 ? (int64_t)sizeof(Params) : (int64_t)sizeof(Args);
}

/* The lines that are writes. */
static int64_t write_lines(const Args *A)
{
    const int64_t lines = A->n >> A->dec[0];
    int64_t w = 0;
    for (int64_t i = 0; i < lines; i++) w += A->line_wr[i] != 0;
    return w;
}

/* A run without writes (no line a write: write_lines 0), which an instantiation with nw set
 * takes (the same run), where the write mode's watermarks are such that an empty write buffer
 * never turns to write mode while a read is queued (0 > wm_hi never) and leaves it when one is
 * (0 < wm_lo): WMODE_FLIPS' form with nw. */
static int reads_only(const Args *A, int64_t writes)
{
    return writes == 0 && __builtin_floor(A->P->wm_high) >= 0 &&
           __builtin_ceil(A->P->wm_low) >= 1;
}

/* A run (simulate_c), summed (sums: simulate_sum_c) or not (NULL). */
static int run(const Args *A_in, int64_t *sums)
{
    const Args A = *A_in;
    const Params *P = A.P;
    const int64_t C = P->channels, R = P->ranks, dual = P->dual_issue != 0;
    const int64_t closed = P->closed_row != 0;
    const int64_t *dec = A.dec;
    if (R * P->bankgroups * P->banks > 64 || R > 8) return -5;
    /* the decoding: shifts within a word, and each field's values (0 .. its mask) within the
     * organization (channels, ranks, bank groups, banks): the engine indexes by them */
    const int64_t count[NF] = {C, R, P->bankgroups, P->banks, INF};
    if (dec[0] < 0 || dec[0] > 16 || dec[1] < 0 || dec[1] > 63) return -3;
    for (int f = 0; f < NF; f++)
        if (dec[2 + f] < 0 || dec[2 + f] > 63 || dec[2 + NF + f] < 0 ||
            dec[2 + NF + f] >= count[f])
            return -3;
    Rules *RU = NULL;
    if (posix_memalign((void **)&RU, 64, sizeof(Rules))) return -1;
    int st = regroup_rules(RU, A.tab_i, A.nxt, A.lat, A.win, closed);
    if (REL_RAISE) lane_relations(RU, R, P->bankgroups, P->banks);
    int64_t writes = -1; /* the write lines, where counted */
    if (st == 0) {
        /* the instantiations' queues have 32 slots: they take any buffer of up to 32 (the
         * slots past a buffer's capacity stay padding, which no scan picks) */
        if (mx(P->read_queue, P->write_queue) > 32)
            st = sim_generic(&A, RU, sums);
        else if (C == 1 && R == 1 && !dual && !closed)
            st = sim_1ch_1rk(&A, RU, sums, reads_only(&A, writes = write_lines(&A)));
        else if (C == 1 && R == 2 && !dual && !closed)
            st = sim_1ch_2rk(&A, RU, sums, reads_only(&A, writes = write_lines(&A)));
        else if (C > 1 && R == 2 && dual && !closed)
            st = sim_hbm(&A, RU, sums);
        else if (!(C > 1 && R <= 2 && !dual && !closed && sim_ddr_channels(&A, RU, sums, &st)))
            st = sim_generic(&A, RU, sums);
    }
    free(RU);
    /* a summed run's reads: every transaction of a line that is not a write */
    if (sums && st >= 0) sums[0] = A.n - ((writes < 0 ? write_lines(&A) : writes) << dec[0]);
    return st;
}

/* A run (Args: the inputs, the configuration by name, the outputs): 0, 1 (a deadlock) or an
 * error (< 0: native.py names them). */
int simulate_c(const Args *A) { return run(A, NULL); }

/* The read statistics of a run, for the driver (nmp/memory/driver.py; engine.py's read_sums
 * computes the same for the numba engine's path): over the n transactions, 1 << ks per line
 * (line_wr: per line, a write?; NULL: no writes), out[0..5) = the reads; the reads whose data
 * returned by `cycles` and the sum of their latencies; the reads served at all and the sum of
 * theirs; the last done cycle (0 if none). */
void read_sums_c(const uint8_t *line_wr, int64_t ks, const int64_t *arrive,
                 const int64_t *depart, const int64_t *done, int64_t n, int64_t cycles,
                 int64_t *out)
{
    int64_t reads = 0, at_sum = 0, served = 0, served_sum = 0, last = 0;
    for (int64_t j = 0; j < n; j++) {
        last = mx(last, done[j]);
        if (line_wr && line_wr[j >> ks]) continue;
        reads++;
        const int64_t d = depart[j];
        if (d >= 0) {
            served++;
            served_sum += d - arrive[j];
            if (d <= cycles) at_sum += d - arrive[j];
        }
    }
    out[0] = reads;
    out[1] = at_sum;
    out[2] = served;
    out[3] = served_sum;
    out[4] = last;
}

#include "engine_trace.h"

/* A run that is only summed (nmp/memory/native.py's simulate_summary: a replay that keeps no
 * timeline): simulate_c's outputs but the per-transaction ones, and into sums[0..5) what
 * read_sums_c gives over them, kept as requests retire (Sim: summing) rather than read back;
 * none of depart, done and forwarded is set (done: the writes', where the channels run on
 * threads) nor set to -1 first, and arrive is set for the requests accepted only. The same
 * sums (tests/memory/test_mem_summary.py). A read latency above SUM_RING keeps the
 * per-transaction outputs and reads them back. */
int simulate_sum_c(const Args *A, int64_t *sums)
{
    if (A->P->read_latency <= SUM_RING) return run(A, sums);
    const int st = run(A, NULL);
    if (st >= 0)
        read_sums_c(A->line_wr, A->dec[0], A->arrive, A->depart, A->done, A->n,
                    A->out_scalars[1], sums);
    return st;
}

/* Several runs in one call (a design point's streams of one level, nmp/memory/native.py's
 * simulate_summaries): runs[i] as simulate_sum_c takes it, its read sums into
 * sums[5 i .. 5 i + 5) (has_write 0: every transaction is a read). Each run is the run alone;
 * they may share their per-transaction outputs. 0, or the first error. */
int simulate_many_c(const Args *runs, int64_t count, int64_t has_write, int64_t *sums)
{
    for (int64_t i = 0; i < count; i++) {
        const Args *A = &runs[i];
        const int st = simulate_sum_c(A, sums + 5 * i);
        if (st < 0) return st;
        if (!has_write) sums[5 * i] = A->n;
    }
    return 0;
}
#endif
