/* The DRAM engine (engine.c): a run's state, its arrays' layout, and the configuration that
 * the instantiations fix at compile time. */
#ifndef NMP_ENGINE_STATE_H
#define NMP_ENGINE_STATE_H

#include "engine_lanes.h"
#include "engine_rules.h"
#include "engine_slots.h"

/* ---- a run's state ------------------------------------------------------------------- */

/* A summed run's ring of read retirements per channel (Sim.rclk, rlat): a channel issues at
 * most one column command per evaluation (dual issue: the row slot issues ACT and PRE only),
 * so the reads that depart after `cycles` (column command in (cycles - rl, cycles]) are at most
 * rl of the newest; runs with rl above it keep the per-transaction outputs (engine.c). */
#define SUM_RING 128

typedef struct {
    const uint64_t *addr;
    const uint8_t *line_wr;
    int64_t ks, txs, kmask, pos[NF], mask[NF]; /* the decoding (Args.dec) */
    int qbits; /* a slot word's index bits (engine_slots.h) */
    int64_t *cnt, *arrive, *depart, *done, *active_cycles, *log;
    int64_t maxlog, nlog, n_acts, evals;
    int64_t tbase; /* a 32-bit bank table's clocks are relative to it (engine_lanes.h) */
    /* configuration read at run time (the instantiations fix some of it: UNPACK) */
    int64_t G, B, nrefi, rl, wm_hi, wm_lo, GB, NBC, NBLK;
    int ref_on, skip_blocked, jump, hsb, hold_hits;
    int bg_in_block; /* a bank group's lanes never straddle a block of 8 (B divides 8) */
    /* the generic instantiation's configuration, which its evaluation (tick_generic) reads */
    int64_t R, QP;
    int dual, closed;
    int64_t lane_rk[64];
    uint64_t lane_bg[64], rk_lanes[8];
    /* the arrays of the state, in one allocation (ARENA_*) */
    uint8_t *arena;
    /* A summed run (engine.c's simulate_sum_c; `summing`): the read sums kept as requests
     * retire, instead of per-transaction depart / done / forwarded outputs read back after
     * the run. Per channel: the reads' retirements (column command's clock, latency) in a ring
     * of SUM_RING (at `cycles`, the newest of them that depart after it are taken off:
     * at_sum), their count (rhead) and latencies' sum; the reads forwarded (latency 1), in
     * all and at the latest step that forwarded any (their data, at the next step, is after
     * `cycles` if that step is `cycles`); the last done cycle of the writes and of the
     * requests served at the offer (monotone per channel: stored, not compared; the reads':
     * the ring's newest). */
    int summing;
    int64_t rhead, read_lat, fwd_all, fwd_clk, fwd_n, last_wr, last_acc, at_sum;
    int64_t rclk[SUM_RING], rlat[SUM_RING];
} Sim;

/* The state's arrays lie in one allocation, each at an offset that the instantiations know at
 * compile time (C channels of R ranks, queues of QP slots, bank tables of TP lanes): an array
 * is then the arena's base plus a constant, not one more pointer to keep in a register or to
 * reload (1.02x on the reference traces, engine alone). Each part is 64-byte aligned; the open
 * rows (C * NBC, NBC known at run time only) come last.
 *  - rdy, hist: ready clocks and issue histories of channels and ranks (engine_rules.h).
 *  - Tb: the bank table of each channel, Tb[(c * NK + row) * TP + lane]; with t32 (T32_OF)
 *    int32 clocks relative to tbase, in the first half of the part.
 *  - open_cnt, open_since, act_rank: per rank, its open banks, since when one is open, its
 *    requests in the active buffer.
 *  - open_m, act_m, aw_m: per channel, the lanes with an open row, with an active request,
 *    and of those the writes.
 *  - act_q, act_seq: the active buffer, by lane (a bank holds at most one request whose ACT
 *    has issued: its row stays open until that request's column command): its request, and
 *    the order of its ACT (the reference keeps its buffer in that order: ties of arrival go
 *    to the earlier ACT).
 *  - n_h, n_m, h_m, m_m: per channel, buffer (read, write) and lane, the queued requests that
 *    hit the open row and that do not; per channel and buffer the lanes holding either.
 *  - Qw, Qkey, ql: the buffers' slot words (Qw[(c * 2 + kind) * QP + position], one block of
 *    slack past the last queue: remove_slot reads one slot past its queue), the write
 *    buffer's keys (Qkey[c * QP + position], slack alike), their lengths.
 *  - pbuf, plen: the refresh queue; wmode: the write mode; next_ref, wake, last_eval: timing.
 *  - open_row: per bank (c * NBC + lane), its open row or -1. */
#define A64(x) (((x) + 63) & ~(int64_t)63)
#define ARENA_RDY 0
#define ARENA_HIST (ARENA_RDY + A64((C + C * R) * RS * 8))
#define ARENA_TB (ARENA_HIST + A64((C + C * R) * NCMD * W * 8))
#define ARENA_OPEN_CNT (ARENA_TB + A64(C * NK * TP * 8))
#define ARENA_OPEN_SINCE (ARENA_OPEN_CNT + A64(C * R * 8))
#define ARENA_ACT_RANK (ARENA_OPEN_SINCE + A64(C * R * 8))
#define ARENA_OPEN_M (ARENA_ACT_RANK + A64(C * R * 8))
#define ARENA_ACT_M (ARENA_OPEN_M + A64(C * 8))
#define ARENA_AW_M (ARENA_ACT_M + A64(C * 8))
#define ARENA_ACT_Q (ARENA_AW_M + A64(C * 8))
#define ARENA_ACT_SEQ (ARENA_ACT_Q + A64(C * TP * 8))
#define ARENA_N_H (ARENA_ACT_SEQ + A64(C * TP * 8))
#define ARENA_N_M (ARENA_N_H + A64(C * 2 * TP))
#define ARENA_H_M (ARENA_N_M + A64(C * 2 * TP))
#define ARENA_M_M (ARENA_H_M + A64(C * 2 * 8))
#define ARENA_QW (ARENA_M_M + A64(C * 2 * 8))
#define ARENA_QKEY (ARENA_QW + A64((C * 2 * QP + 8) * 8))
#define ARENA_QL (ARENA_QKEY + A64((C * QP + 8) * 8))
#define ARENA_PBUF (ARENA_QL + A64(C * 2 * 8))
#define ARENA_PLEN (ARENA_PBUF + A64(C * PQ * 8))
#define ARENA_WMODE (ARENA_PLEN + A64(C * 8))
#define ARENA_NEXT_REF (ARENA_WMODE + A64(C))
#define ARENA_WAKE (ARENA_NEXT_REF + A64(C * 8))
#define ARENA_LAST_EVAL (ARENA_WAKE + A64(C * 8))
#define ARENA_OPEN_ROW (ARENA_LAST_EVAL + A64(C * 8))
#define ARENA_END (ARENA_OPEN_ROW + A64(C * NBC * 8))
#define AT(T, part) ((T *)(S->arena + (part)))
#define AT_OF(S_, T, part) ((T *)((S_)->arena + (part)))

/* One evaluation of a channel of one instantiation, out of line (below, CFG's tick) */
typedef void (*TickFn)(Sim *restrict S, const Rules *restrict RU, int64_t clk);

/* the refresh queue's size for R ranks */
#define PQ_OF(R) (64 * (R))

/* the configuration that the instantiations fix at compile time (GB_C, B_C: banks per rank and
 * per bank group, or 0 where read at run time; B_C a power of two; nw: a run without writes,
 * engine.c's reads_only), and tick: the instantiation's evaluation of a channel as one
 * function (engine.c), or NULL: inlined */
#define CFG                                                                            \
    UNUSED const int64_t C, UNUSED const int64_t R, UNUSED const int dual,                 \
        UNUSED const int closed, UNUSED const int64_t QP, UNUSED const int64_t NBLK_C,     \
        UNUSED const int64_t GB_C, UNUSED const int64_t B_C, UNUSED const int nw,          \
        UNUSED const TickFn tick
#define CFG_ARGS C, R, dual, closed, QP, NBLK_C, GB_C, B_C, nw, tick

/* An instantiation keeps its bank table in 32 bits (engine_lanes.h) where its table has
 * blocks of 16 lanes, each within one rank (not_ready_min folds a block's rank in), and each
 * bank group within one block (issue_rules raises it in one); on AVX2 builds (T32_NARROW)
 * also a table of one rank in one block of 8 lanes */
#define T32_OF(R, NBLK_C, GB_C, B_C)                                                      \
    (T32_AVAIL && (((NBLK_C) >= 2 && (NBLK_C) % 2 == 0 && (GB_C) > 0 && (B_C) > 0 &&      \
                    16 % (B_C) == 0 && ((R) == 1 || (GB_C) % 16 == 0)) ||                 \
                   (T32_NARROW && (NBLK_C) == 1 && (R) == 1)))

/* a run may take the 32-bit instantiations: every latency of its table fits (engine_lanes.h) */
#define T32_FITS(RU) ((RU)->lat_max < T32_LAT_MAX)

/* a run's state as restrict-qualified locals (loads the compiler may keep in registers) */
#define UNPACK(S)                                                                          \
    UNUSED const uint64_t *restrict addr = S->addr;                                        \
    UNUSED const uint8_t *restrict line_wr = S->line_wr;                                   \
    UNUSED int64_t *restrict cnt = S->cnt, *restrict arrive = S->arrive;                   \
    UNUSED int64_t *restrict depart = S->depart, *restrict done = S->done;                 \
    UNUSED int64_t *restrict active_cycles = S->active_cycles;                             \
    UNUSED const int64_t GB = GB_C ? GB_C : S->GB, B = B_C ? B_C : S->B;                  \
    UNUSED const int64_t NBC = R * GB;                                                    \
    UNUSED const int64_t nrefi = S->nrefi, rl = S->rl, wm_hi = S->wm_hi, wm_lo = S->wm_lo; \
    UNUSED const int64_t PQ = PQ_OF(R), NBLK = NBLK_C ? NBLK_C : S->NBLK, TP = 8 * NBLK;   \
    UNUSED const int ref_on = S->ref_on, skip_blocked = S->skip_blocked;                  \
    UNUSED const int hold_hits = S->hold_hits;                                             \
    /* classes in one word where the bank table has up to 32 lanes (hsb: engine_slots.h) */ \
    UNUSED const int hsb = NBLK_C && NBLK_C <= 4 ? 5 : S->hsb, two = hsb == 6;             \
    UNUSED const uint64_t lane_of = (1u << hsb) - 1; /* a class's lane */                  \
    UNUSED const int64_t rd_cmd = closed ? RDA : RD, wr_cmd = closed ? WRA : WR, o1 = C;   \
    UNUSED int64_t *restrict rdy = AT(int64_t, ARENA_RDY);                                 \
    UNUSED int64_t *restrict hist = AT(int64_t, ARENA_HIST);                               \
    UNUSED int64_t *restrict Tb = AT(int64_t, ARENA_TB);                                   \
    UNUSED int32_t *restrict Tb32 = AT(int32_t, ARENA_TB);                                 \
    UNUSED const int t32 = T32_OF(R, NBLK_C, GB_C, B_C);                                   \
    UNUSED int64_t *restrict open_row = AT(int64_t, ARENA_OPEN_ROW);                       \
    UNUSED int64_t *restrict open_cnt = AT(int64_t, ARENA_OPEN_CNT);                       \
    UNUSED int64_t *restrict open_since = AT(int64_t, ARENA_OPEN_SINCE);                   \
    UNUSED int64_t *restrict act_rank = AT(int64_t, ARENA_ACT_RANK);                       \
    UNUSED uint64_t *restrict open_m = AT(uint64_t, ARENA_OPEN_M);                         \
    UNUSED uint64_t *restrict act_m = AT(uint64_t, ARENA_ACT_M);                           \
    UNUSED uint64_t *restrict aw_m = AT(uint64_t, ARENA_AW_M);                             \
    UNUSED int64_t *restrict act_q = AT(int64_t, ARENA_ACT_Q);                             \
    UNUSED int64_t *restrict act_seq = AT(int64_t, ARENA_ACT_SEQ);                         \
    UNUSED uint8_t *restrict n_h = AT(uint8_t, ARENA_N_H);                                 \
    UNUSED uint8_t *restrict n_m = AT(uint8_t, ARENA_N_M);                                 \
    UNUSED uint64_t *restrict h_m = AT(uint64_t, ARENA_H_M);                               \
    UNUSED uint64_t *restrict m_m = AT(uint64_t, ARENA_M_M);                               \
    UNUSED int64_t *restrict Qw = AT(int64_t, ARENA_QW);                                   \
    UNUSED int64_t *restrict Qkey = AT(int64_t, ARENA_QKEY);                               \
    UNUSED int64_t *restrict ql = AT(int64_t, ARENA_QL);                                   \
    UNUSED int64_t *restrict pbuf = AT(int64_t, ARENA_PBUF);                               \
    UNUSED int64_t *restrict plen = AT(int64_t, ARENA_PLEN);                               \
    UNUSED int64_t *restrict next_ref = AT(int64_t, ARENA_NEXT_REF);                       \
    UNUSED int64_t *restrict wake = AT(int64_t, ARENA_WAKE);                               \
    UNUSED int64_t *restrict last_eval = AT(int64_t, ARENA_LAST_EVAL);                     \
    UNUSED uint8_t *restrict wmode = AT(uint8_t, ARENA_WMODE);                             \
    UNUSED const int64_t *restrict lane_rk = S->lane_rk;                                   \
    UNUSED const uint64_t *restrict lane_bg = S->lane_bg, *restrict rk_lanes = S->rk_lanes

/* transaction q: its number (address >> tx shift), a field of it, a write? */
#define TX_KEY(q) ((int64_t)(addr[(q) >> S->ks] >> S->txs) + ((q) & S->kmask))
#define FIELD(key, f) (((key) >> S->pos[f]) & S->mask[f])
#define Q_WR(q) (line_wr[(q) >> S->ks] != 0)
#define RDY(node, cmd) rdy[(node) * RS + (cmd)]
#define QL(c, k) ql[(c) * 2 + (k)]
#define TBR(c, row) (Tb + ((c) * NK + (row)) * TP)
#define TB32R(c, row) (Tb32 + ((c) * NK + (row)) * TP)
/* the lanes of m whose row of the bank table is ready at clk */
#define LE_BITS(c, row, m)                                                                \
    (t32 ? le_bits32(TB32R(c, row), m, (int32_t)(clk - S->tbase), TP)                     \
         : le_bits(TBR(c, row), m, clk, NBLK))
/* a lane's clock in a row of the bank table */
#define TB_AT(c, row, l) (t32 ? S->tbase + TB32R(c, row)[l] : TBR(c, row)[l])
/* a raise's clock clk + lat relative to tbase (clk: the evaluation's, rebased) */
#define T32V(lat) ((int32_t)(clk - S->tbase + mx((lat), T32_NEG)))
/* ready clock of command cc above the bank group: channel c and its rank r (local) */
#define TOP(c, r, cc) mx(RDY(c, cc), RDY(o1 + (c) * R + (r), cc))
#define RANK_OF(l) (R == 1 ? 0 : GB_C ? (l) / GB_C : lane_rk[l])
/* the lanes of rank r (local), and of lane l's bank group */
#define RK_LANES(r) (GB_C ? lanes((r) * GB_C, GB_C) : rk_lanes[r])
#define BG_LANES(l) (B_C ? lanes((l) & ~(B_C - 1), B_C) : lane_bg[l])
/* the write mode of channel c switches at its next evaluation (to writes: the write buffer
 * above its high watermark or no read queued; back: below its low one with a read queued) */
#define WMODE_FLIPS(c)                                                   \
    (nw ? wmode[c] != (QL(c, K_RD) == 0) /* (the same: QL(c, K_WR) is 0, reads_only) */ \
        : !wmode[c] ? (QL(c, K_WR) > wm_hi || QL(c, K_RD) == 0)           \
                    : (QL(c, K_WR) < wm_lo && QL(c, K_RD) != 0))
/* the lanes of channel c whose queued requests are blocked by the active request of their bank
 * (they issue only after that request's column command): a miss where the bank is open (its
 * PRE would close the row the active request needs), and closed-row, a hit (its RDA/WRA
 * would). hold_hits (a near-memory unit's controller): a miss also waits while buffer pi (the
 * write mode's) holds hits to its bank's open row; they too issue only by issues here */
#define BLOCKED_MISS(c, pi) (open_m[c] & (act_m[c] | (hold_hits ? h_m[pi] : 0)))
#define BLOCKED_HIT(c) (closed ? act_m[c] : 0)
/* the bank table's rows a run reads: without writes, T_WR (the last) is never read */
#define NK_USED (nw ? NK - 1 : NK)
/* a lane's bit in a mask: set or cleared */
#define PUT_BIT(m, l, on) ((m) = ((m) & ~(1ull << (l))) | ((uint64_t)((on) != 0) << (l)))
/* the lanes whose channel and rank let command cc issue now, from topm (per rank, the
 * commands its channel and rank let issue now) */
#define TOP_OK(cc, out)                                            \
    do {                                                           \
        out = 0;                                                   \
        for (int64_t r_ = 0; r_ < R; r_++)                         \
            if ((topm[r_] >> (cc)) & 1) out |= RK_LANES(r_);       \
    } while (0)

#endif
