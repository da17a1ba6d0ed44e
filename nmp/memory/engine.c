/* The DRAM timing engine in C: nmp/memory/engine.py's `simulate` (the reference, in numba),
 * step for step -- same algorithm, same bounds, same wake/jump decisions, so even the count of
 * evaluated cycles matches. Read engine.py for the model; the comments here explain what
 * differs in form. tests/memory/test_mem_native_engine.py compares every output of the two.
 * Built by nmp/memory/native.py with cc -O3 -march=native; AVX-512 paths where __AVX512F__,
 * plain C loops otherwise (same results).
 *
 * What differs from a line-by-line port, and why (measured gains on the A/B harness in
 * brackets; the machine is noisy, +-5%):
 *  - Queue layout (+~15%): per (channel, kind) QP slots, QP = QM rounded up to 8. A slot is
 *    three 64-byte aligned arrays (the scans read them in blocks of 8): its bound, one word
 *    packing its bank, its row and whether the row is open (SLOT; over separate bank and row
 *    arrays: +3% on NMP node streams, +1% on the reference traces for the packing, then
 *    +4-6% on both for the hit bit -- a class compare is one compare, the scan does not load
 *    the bank's open row, dual issue filters its candidates a block at a time, and removal
 *    shifts one array less), and its request index (the write buffer adds the key). The
 *    rank and bank group come from the bank through two small tables (+4-7% over reading
 *    them per slot); the arrival clock and write flag are read at the request's index
 *    (arrive[], q_wr[]), where a per-slot record with a free list measured 1-2% slower.
 *    Slots at and above the queue length are padding with bound INF and bank -1, so the
 *    bound pass and the bank-reset pass run over whole blocks (padding never becomes due,
 *    never lowers `fut`, never matches a bank); the active buffer, rarely more than a block
 *    long, is bound-passed over its occupied blocks only (+2% on the reference traces).
 *    Removal rewrites a queue's whole blocks with full stores and a fixed trip count (+4-6%
 *    over masked moves of the tail: their variable trip count mispredicts, and the next
 *    bound pass cannot take its loads from masked stores).
 *  - engine.py's two shortcuts in the read/write buffer scan, a block of slots at a time:
 *    class marking (a not-ready request's due class mates get its bound: class_due, one
 *    compare per block on the slot words, then masked stores) and, with one rank, the hit
 *    floor (due hits get the channel's and rank's column ready clock while it is ahead:
 *    due_hits, then masked stores). An NMP unit streams 32 queued reads to a few rows of its
 *    bank, which took ~25 evaluations per request without them. Marking only the run up to
 *    the next due slot of another class (the first version) gave NMP node streams +13-19%;
 *    marking the whole class and the hit floor then gave +17% more on node streams and +2%
 *    on the reference traces.
 *  - Instantiations (+~5-15% on the configurations concerned): the loop is one always-inline
 *    function whose configuration (channels C, ranks R, dual issue, closed row policy, QP)
 *    is a compile-time constant in the instantiations for the common configurations --
 *    one channel and one rank (a DDR4/DDR5 DIMM's rank, and every NMP unit's own view), one
 *    channel and two ranks, an 8-channel HBM2 stack with pseudo channels and dual issue, all
 *    with Ramulator's 32-entry queues (QP = 32) -- and runtime in a generic one. Constant QP
 *    gives the bound pass a fixed trip count (a variable one mispredicts its exit); constant
 *    R = 1 lets the read/write scan take the channel's and the rank's ready clocks once per
 *    scan.
 *  - Constraint rules (+~5%): regrouped per (target/sibling, level, command) into one
 *    vector of the largest latency per following command, so issuing applies a level with
 *    one 8-wide max instead of a loop over rules; the issue history is kept only where a
 *    rule with a window > 1 (tFAW) reads it. Targets are visited directly, without a work
 *    list (max is commutative and target nodes are distinct: their order is irrelevant).
 *  - The bound pass keeps the minimum of the not-due bounds in a vector and reduces it only
 *    when the channel issues nothing (when it issues, `fut` is not used) (+~5%).
 *  - The write-buffer search (read forwarding / write coalescing) compares 8 keys at once
 *    over a contiguous key array.
 * Tried and dropped (slower here): evaluating the due slots with AVX-512 gathers (gathers are
 * slow on this CPU), keeping each slot's next command up to date instead of comparing rows
 * (the extra bank-reset work ate the gain), branch-free next-command selection (the branch
 * is well predicted and lets the loads start early), and a class-level early-out (per bank
 * group and command class, the max of the channel, rank and bank-group ready clocks, so a
 * slot whose class cannot be ready is not evaluated): it cut re-evaluations per request 2.5-5x
 * (26.7 -> 5.2 on NMP node streams) yet ran 6-10% slower -- a re-evaluation is a few
 * independent L1 loads, about what the table upkeep costs.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef __AVX512F__
#include <immintrin.h>
#endif

#define NCMD 9
enum { ACT, PREPB, PREAB, RD, WR, RDA, WRA, REFAB };
#define W 4 /* issue-history depth (tFAW) */
#define INF ((int64_t)1 << 62)
#define C_HIT_R (NCMD + 0)
#define C_HIT_W (NCMD + 3)
#define C_FWD (NCMD + 6)
#define C_COAL (NCMD + 7)
#define N_COUNTERS (NCMD + 8)
enum { K_RD, K_WR, K_ACT };
#define FORCE_INLINE static inline __attribute__((always_inline))

FORCE_INLINE int64_t mx(int64_t a, int64_t b) { return a > b ? a : b; }
FORCE_INLINE int64_t mn(int64_t a, int64_t b) { return a < b ? a : b; }

typedef struct {
    const int64_t *q_ch, *q_rank, *q_bg, *q_bank, *q_row, *q_key, *q_arr;
    const int8_t *q_wr;
    int64_t n;
    const int64_t *params;
    const double *wm;
    const int64_t *tab_i, *nxt, *lat, *win;
    int64_t *log;
    int64_t maxlog;
    int64_t *out_scalars, *cnt_snap, *cnt, *arrive, *depart, *done, *active_cycles;
    uint8_t *forwarded;
} Args;

/* Ready clocks: rdy[node * RS + cmd], a row of RS = 16 int64 (commands 0..8, padding) per
 * node, 64-byte aligned, so the commands 0..7 of a node are one AVX-512 vector. */
#define RS 16
#define NEG (-INF) /* "no rule": clk + NEG is below every ready clock (they start at 0) */

/* A window-w rule (w > 1, i.e. tFAW) of a target node: raise rdy[nxt] to (clock of the
 * w-th last issue of the command on the node) + lat, if there were w issues. */
typedef struct {
    int64_t lat;
    int32_t nxt, win;
} WRule;

/* The constraint table, regrouped per (target 0 / sibling 1, level, command):
 *  - lat1[a][l][c][nxt]: the largest latency of the window-1 rules (sibling rules: of all
 *    rules -- numba applies them as clk + lat whatever their window) to the following
 *    command nxt, NEG if none. Applying the rules is then one max over a vector of ready
 *    clocks: raising by several rules to the same command is the max of their latencies,
 *    and max is commutative, so the order of rules (and of target nodes) does not matter.
 *  - any[l][c]: the target rows have a rule at all (numba pushes the history only then).
 *  - wrules[ws[l][c] .. we[l][c]): the target rules with a window > 1. The history of
 *    (node, cmd) is read by these only (a window-1 rule reads the clock just pushed), so it
 *    is kept for (level, cmd) pairs that have one; the others skip the push. */
typedef struct {
    int64_t lat1[2][4][NCMD][RS] __attribute__((aligned(64)));
    uint8_t any[2][4][NCMD];
    WRule wrules[64];
    int32_t ws[4][NCMD], we[4][NCMD];
} Rules;

/* rdy[0..8] = max(rdy[0..8], clk + lat[0..8]) */
FORCE_INLINE void raise_row(int64_t *restrict r, const int64_t *restrict lat, int64_t clk)
{
#ifdef __AVX512F__
    const __m512i v =
        _mm512_add_epi64(_mm512_load_si512((const void *)lat), _mm512_set1_epi64(clk));
    _mm512_store_si512((void *)r, _mm512_max_epi64(_mm512_load_si512((const void *)r), v));
    r[8] = mx(r[8], clk + lat[8]);
#else
    for (int k = 0; k < NCMD; k++) r[k] = mx(r[k], clk + lat[k]);
#endif
}

/* target node: push clk into its history of cmd, then apply the target rules */
FORCE_INLINE void apply_target(const Rules *restrict RU, int64_t *restrict rdy,
                               int64_t *restrict hist, int64_t node, int level, int64_t cmd,
                               int64_t clk)
{
    if (!RU->any[0][level][cmd]) return;
    int64_t *restrict r = rdy + node * RS;
    raise_row(r, RU->lat1[0][level][cmd], clk);
    const int32_t s0 = RU->ws[level][cmd], e0 = RU->we[level][cmd];
    if (s0 == e0) return;
    int64_t *restrict h = hist + (node * NCMD + cmd) * W;
    h[3] = h[2];
    h[2] = h[1];
    h[1] = h[0];
    h[0] = clk;
    for (int32_t i = s0; i < e0; i++) {
        const WRule ru = RU->wrules[i];
        const int64_t past = h[ru.win - 1];
        if (past >= 0) r[ru.nxt] = mx(r[ru.nxt], past + ru.lat);
    }
}

FORCE_INLINE void apply_sibling(const Rules *restrict RU, int64_t *restrict rdy, int64_t node,
                                int level, int64_t cmd, int64_t clk)
{
    raise_row(rdy + node * RS, RU->lat1[1][level][cmd], clk);
}

/* Bound pass over slots [0, nx) of one queue (bnd padded with INF up to a multiple of 8):
 * bit x of the result is set when bnd[x] <= clk; the others' minimum goes into the running
 * minimum *vf, kept as a vector and reduced only when the channel issues nothing (when it
 * issues, `fut` is not used). */
#ifdef __AVX512F__
typedef __m512i futv_t;
#define FUTV_INIT() _mm512_set1_epi64(INF)
#define FUTV_MIN(v) _mm512_reduce_min_epi64(v)
FORCE_INLINE uint64_t due_mask(const int64_t *restrict b, int64_t nx, int64_t clk, futv_t *vf)
{
    const __m512i vclk = _mm512_set1_epi64(clk);
    __m512i f = *vf;
    uint64_t due = 0;
    for (int64_t x = 0; x < nx; x += 8) {
        const __m512i t = _mm512_loadu_si512((const void *)(b + x));
        const __mmask8 d = _mm512_cmple_epi64_mask(t, vclk);
        due |= (uint64_t)d << x;
        f = _mm512_mask_min_epi64(f, (__mmask8)~d, f, t);
    }
    *vf = f;
    return due;
}
#else
typedef int64_t futv_t;
#define FUTV_INIT() INF
#define FUTV_MIN(v) (v)
FORCE_INLINE uint64_t due_mask(const int64_t *restrict b, int64_t nx, int64_t clk, futv_t *vf)
{
    uint64_t due = 0;
    int64_t f = *vf;
    for (int64_t x = 0; x < nx; x++) {
        const int64_t t = b[x];
        const int d = t <= clk;
        due |= (uint64_t)d << x;
        f = mn(f, d ? INF : t);
    }
    *vf = f;
    return due;
}
#endif

/* Remove slot p of a queue of m + 1 slots q[0 .. m] (QP <= 64 slots, 64-byte aligned):
 * q[p .. m-1] = q[p+1 .. m], q[m] = pad. Whole blocks with full stores and a fixed trip
 * count: a variable one mispredicts its exit, and the next bound pass loads these blocks,
 * which a masked store cannot forward to. */
FORCE_INLINE void remove_slot(int64_t *restrict q, int64_t QP, int64_t p, int64_t m, int64_t pad)
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
#endif
    memmove(q + p, q + p + 1, (m - p) * 8);
    q[m] = pad;
}

/* slot arrays: 64-byte aligned (whole-block loads), one block of slack past the last queue
 * (remove_slot reads one slot past its queue) */
static int64_t *aligned_slots(int64_t nq)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, (nq + 8) * 8)) return NULL;
    memset(p, 0, (nq + 8) * 8);
    return p;
}

#define RUP8(x) (((x) + 7) & ~(int64_t)7)

/* A queued request in one slot word: bank * 2^32 + hit * 2^31 + row (0 <= row < 2^31, checked
 * at setup), where hit says that the row is its bank's open row -- kept up to date when the
 * bank opens or closes (reset_bank). So a slot's class (bank, hit or not: the requests whose
 * next command, hence ready clock, is the same) is the word's top 33 bits, SLOT_CLASS; the
 * scan reads a slot's next command without loading its bank's open row; a dual-issue
 * controller's column and row slots pick their candidates from the due ones with one test per
 * block; and removal shifts one array instead of two. Padding: bank -1 (class -2). */
#define HIT_BIT ((int64_t)1 << 31)
#define SLOT(bank, row, hit) \
    ((int64_t)(bank) * ((int64_t)1 << 32) + ((hit) ? HIT_BIT : 0) + (row))
#define SLOT_BANK(v) ((v) >> 32)
#define SLOT_ROW(v) ((v) & (HIT_BIT - 1))
#define SLOT_HIT(v) (((v) & HIT_BIT) != 0)
#define SLOT_CLASS(v) ((v) >> 31)
#define SLOT_PAD SLOT(-1, 0, 0)

/* The due slots (bits of `due`, in a window of nx slots, nx a multiple of 8) of class cls. */
FORCE_INLINE uint64_t class_due(const int64_t *restrict br, int64_t nx, int64_t cls, uint64_t due)
{
#ifdef __AVX512F__
    uint64_t same = 0;
    const __m512i vc = _mm512_set1_epi64(cls);
    for (int64_t x = 0; x < nx; x += 8) {
        const __m512i v = _mm512_loadu_si512((const void *)(br + x));
        same |= (uint64_t)_mm512_cmpeq_epi64_mask(_mm512_srai_epi64(v, 31), vc) << x;
    }
    return same & due;
#else
    /* the whole window, branch-free (a loop over the due bits mispredicts its exit), with an
     * unsigned shift (padding's class becomes 2^33 - 2, still no match), which AVX2 has */
    uint64_t same = 0;
    for (int64_t x = 0; x < nx; x++)
        same |= (uint64_t)(((uint64_t)br[x] >> 31) == (uint64_t)cls) << x;
    return same & due;
#endif
}

/* The due slots (bits of `due`, in a window of nx slots, nx a multiple of 8) that hit their
 * bank's open row. */
FORCE_INLINE uint64_t due_hits(const int64_t *restrict br, int64_t nx, uint64_t due)
{
    uint64_t h = 0;
#ifdef __AVX512F__
    const __m512i vh = _mm512_set1_epi64(HIT_BIT);
    for (int64_t x = 0; x < nx; x += 8)
        h |= (uint64_t)_mm512_test_epi64_mask(_mm512_loadu_si512((const void *)(br + x)), vh)
             << x;
    return h & due;
#else
    for (int64_t x = 0; x < nx; x++) h |= (uint64_t)SLOT_HIT(br[x]) << x; /* as class_due */
    return h & due;
#endif
}

/* Bank bk opened row nrow (-1: it closed): its slots among br[0 .. e) (e a multiple of 8) get
 * bound 0 (their next command changed) and hit = (row == nrow). */
FORCE_INLINE void reset_bank(int64_t *restrict bd, int64_t *restrict br, int64_t e, int64_t bk,
                             int64_t nrow)
{
#ifdef __AVX512F__
    const __m512i vb = _mm512_set1_epi64(bk), vr = _mm512_set1_epi64(nrow),
                  vh = _mm512_set1_epi64(HIT_BIT), vlo = _mm512_set1_epi64(HIT_BIT - 1),
                  zero = _mm512_setzero_si512();
    /* no test of an empty mask: skipping blocks mispredicted (-4-6% on the reference traces) */
    for (int64_t i = 0; i < e; i += 8) {
        const __m512i v = _mm512_load_si512((const void *)(br + i));
        const __mmask8 k = _mm512_cmpeq_epi64_mask(_mm512_srai_epi64(v, 32), vb);
        _mm512_mask_store_epi64(bd + i, k, zero);
        const __mmask8 kh = _mm512_mask_cmpeq_epi64_mask(k, _mm512_and_si512(v, vlo), vr);
        const __m512i cleared = _mm512_andnot_si512(vh, v);
        _mm512_mask_store_epi64(br + i, k, _mm512_mask_or_epi64(cleared, kh, cleared, vh));
    }
#else
    /* with masks and unconditional stores: conditional ones compile to a branch per slot,
     * which mispredicts (-17% on the reference traces) */
    for (int64_t i = 0; i < e; i++) {
        const int64_t v = br[i];
        const int64_t mine = -(int64_t)(SLOT_BANK(v) == bk); /* all ones or 0 */
        const int64_t nv = (v & ~HIT_BIT) | (-(int64_t)(SLOT_ROW(v) == nrow) & HIT_BIT);
        bd[i] &= ~mine;
        br[i] = v ^ ((v ^ nv) & mine);
    }
#endif
}

/* b[x] = v for the set bits x of m (< 2^nx) */
FORCE_INLINE void fill_bits(int64_t *restrict b, int64_t nx, uint64_t m, int64_t v)
{
#ifdef __AVX512F__
    const __m512i vv = _mm512_set1_epi64(v);
    for (int64_t x = 0; x < nx; x += 8)
        _mm512_mask_storeu_epi64(b + x, (__mmask8)(m >> x), vv);
#else
    for (int64_t x = 0; x < nx; x++) { /* branch-free, as class_due (+2-7%) */
        const int64_t k = -(int64_t)((m >> x) & 1);
        b[x] = (b[x] & ~k) | (v & k);
    }
#endif
}

FORCE_INLINE int sim_core(const Args *restrict A, const Rules *restrict RU, const int64_t C,
                          const int64_t R, const int dual, const int closed, const int64_t QP)
{
    const int64_t *restrict q_ch = A->q_ch, *restrict q_rank = A->q_rank,
                            *restrict q_bg = A->q_bg, *restrict q_bank = A->q_bank,
                            *restrict q_row = A->q_row, *restrict q_key = A->q_key,
                            *restrict q_arr = A->q_arr;
    const int8_t *restrict q_wr = A->q_wr;
    const int64_t n = A->n, *params = A->params;
    const int64_t G = params[2], B = params[3];
    const int64_t RQ = params[4], WQ = params[5], F = params[6], nrefi = params[7];
    const int64_t rl = params[8];
    const int ref_on = params[11] != 0, drain = params[12] != 0;
    const int skip_blocked = params[13] != 0, jump = params[14] != 0;
    const int64_t rd_cmd = closed ? RDA : RD, wr_cmd = closed ? WRA : WR;
    const double wm_hi = A->wm[0], wm_lo = A->wm[1];
    const int64_t NR = C * R, NG = NR * G, NB = NG * B, PQ = 64 * R;
    /* QP: slots per queue, QM padded to whole blocks of 8 (a constant in the instantiations:
     * the bound pass then has a fixed trip count -- a variable one mispredicts its exit) */
    const int64_t o1 = C, o2 = C + NR, o3 = C + NR + NG, NN = o3 + NB;
    int64_t *restrict log = A->log;
    const int64_t maxlog = A->maxlog;
    int64_t *restrict cnt = A->cnt, *restrict arrive = A->arrive, *restrict depart = A->depart,
                      *restrict done = A->done, *restrict active_cycles = A->active_cycles;
    uint8_t *restrict forwarded = A->forwarded;

    /* state; every allocation is checked together, and freed together on the way out */
    int64_t *rdy_ = NULL;
    const int64_t NQ = C * 3 * QP; /* queues: field[(c * 3 + kind) * QP + position] */
    if (posix_memalign((void **)&rdy_, 64, NN * RS * 8)) rdy_ = NULL;
    int64_t *restrict rdy = rdy_;
    int64_t *restrict hist = malloc(NN * NCMD * W * 8);
    int64_t *restrict open_row = malloc(NB * 8);
    int64_t *restrict open_cnt = calloc(NR, 8), *restrict open_since = calloc(NR, 8);
    int64_t *restrict act_bank = calloc(NB, 8), *restrict act_rank = calloc(NR, 8);
    int64_t *restrict Qbnd = aligned_slots(NQ); /* lower bound on readiness; padding INF */
    int64_t *restrict Qbr = aligned_slots(NQ);  /* SLOT(global bank id, row, hit); or SLOT_PAD */
    int64_t *restrict Qkey = aligned_slots(NQ); /* key (searched in the write buffer only) */
    int64_t *restrict Qq = aligned_slots(NQ);   /* request index */
    int64_t *restrict ql = calloc(C * 3, 8);
    int64_t *restrict pbuf = calloc(C * PQ, 8), *restrict plen = calloc(C, 8);
    uint8_t *restrict wmode = calloc(C, 1);
    int64_t *restrict next_ref = malloc(C * 8), *restrict wake = calloc(C, 8);
    uint8_t *restrict stat_done = calloc(n > 0 ? n : 1, 1);
    /* node ids of a bank's rank and bank group (global bank id = bank group * B + bank) */
    int64_t *restrict bank_rk = malloc(NB * 8), *restrict bank_bg = malloc(NB * 8);
    int status = 0;
    if (!rdy || !hist || !open_row || !open_cnt || !open_since || !act_bank ||
        !act_rank || !Qbnd || !Qbr || !Qkey || !Qq || !ql ||
        !pbuf || !plen || !wmode || !next_ref || !wake || !stat_done || !bank_rk || !bank_bg) {
        status = -1;
        goto out;
    }
    memset(rdy, 0, NN * RS * 8);
    for (int64_t i = 0; i < NN * NCMD * W; i++) hist[i] = -1;
    for (int64_t i = 0; i < NB; i++) {
        open_row[i] = -1;
        bank_bg[i] = o2 + i / B;
        bank_rk[i] = o1 + i / (G * B);
    }
    for (int64_t i = 0; i < NQ; i++) {
        Qbnd[i] = INF; /* the other slot arrays start zeroed (aligned_slots) */
        Qbr[i] = SLOT_PAD;
    }
    for (int64_t c = 0; c < C; c++) next_ref[c] = nrefi;
    /* the scans take a request's rank and bank group from its bank (bank_rk, bank_bg): the
     * inputs must agree with that numbering, as the decoder's do */
    for (int64_t i = 0; i < n; i++) {
        const int64_t b = q_bank[i], g = q_bg[i], r = q_rank[i];
        if (b < g * B || b >= g * B + B || g < r * G || g >= r * G + G || r < 0 || r >= NR) {
            status = -3;
            goto out;
        }
        if (q_row[i] < 0 || q_row[i] >= ((int64_t)1 << 31)) { /* SLOT packs 31 bits */
            status = -4;
            goto out;
        }
    }
    for (int64_t i = 0; i < n; i++) arrive[i] = depart[i] = done[i] = -1;
    memset(forwarded, 0, n);
    memset(cnt, 0, N_COUNTERS * 8);
    memset(A->cnt_snap, 0, N_COUNTERS * 8);
    memset(active_cycles, 0, NR * 8);
#define RDY(node, cmd) rdy[(node) * RS + (cmd)]
#define QL(c, k) ql[(c) * 3 + (k)]
    /* ready clock of command cc at a bank bq of channel c: its channel and rank (TOP), its bank
     * group and bank (LOW) */
#define TOP(c, bq, cc) mx(RDY(c, cc), RDY(bank_rk[bq], cc))
#define LOW(bq, cc) mx(RDY(bank_bg[bq], cc), RDY(o3 + (bq), cc))
#define BANK_READY(c, bq, cc) mx(TOP(c, bq, cc), LOW(bq, cc))
    /* sibling rule presence per (level, cmd): decides which sibling loops run */
#define HAS_SIB(l, cmd) (RU->any[1][l][cmd])

    int64_t clk = 0, nxt_req = 0, cycles = -1, nlog = 0, ticks = 0;
    const int64_t nslots = dual ? 2 : 1;
    int64_t offers = 1, checked = -1;
    int issued_any = 1;

    for (;;) {
        /* ---- frontend: up to `offers` requests, strictly in order ---- */
        int accepted = 0;
        if (nxt_req < n) {
            for (int64_t o = 0; o < offers; o++) {
                const int64_t j = nxt_req;
                if (q_arr[j] > clk) break;
                const int64_t c = C == 1 ? 0 : q_ch[j], key = q_key[j];
                const int64_t kind = q_wr[j] ? K_WR : K_RD;
                int hit = 0;
                if (j != checked) {
                    /* branch-free OR over the write buffer's keys (numba stops at the first
                     * match; the result is the same) */
                    const int64_t *restrict kk = Qkey + (c * 3 + K_WR) * QP;
                    const int64_t m = QL(c, K_WR);
#ifdef __AVX512F__
                    if (QP <= 64) {
                        /* one compare per block of 8 slots; slots at and above m are not in
                         * the buffer */
                        uint64_t hm = 0;
                        const __m512i vkey = _mm512_set1_epi64(key);
                        for (int64_t i = 0; i < QP; i += 8)
                            hm |= (uint64_t)_mm512_cmpeq_epi64_mask(
                                      _mm512_loadu_si512((const void *)(kk + i)), vkey)
                                  << (i & 63);
                        hit = (hm & (m >= 64 ? ~0ull : ((1ull << m) - 1))) != 0;
                    } else
#endif
                    for (int64_t i = 0; i < m; i++) hit |= kk[i] == key;
                    checked = j;
                }
                if (hit) {
                    arrive[j] = clk;
                    if (kind == K_RD) {
                        forwarded[j] = 1;
                        cnt[C_FWD]++;
                        depart[j] = clk + 1;
                        done[j] = clk + 1;
                    } else {
                        cnt[C_COAL]++;
                        done[j] = clk;
                    }
                } else {
                    const int64_t p = QL(c, kind);
                    if (p >= (kind == K_WR ? WQ : RQ)) break;
                    const int64_t s = (c * 3 + kind) * QP + p;
                    const int64_t bq = q_bank[j];
                    Qbr[s] = SLOT(bq, q_row[j], open_row[bq] == q_row[j]);
                    Qkey[s] = key;
                    Qq[s] = j;
                    Qbnd[s] = 0;
                    QL(c, kind) = p + 1;
                    arrive[j] = clk;
                    if (wake[c] > clk + 1) {
                        /* the channel sleeps until wake[c]: only the new request, or the write
                         * mode its arrival flips, can change that */
                        const int64_t nwq = QL(c, K_WR), nrq = QL(c, K_RD);
                        if (plen[c] == 0 &&
                            ((!wmode[c] && ((double)nwq > wm_hi || nrq == 0)) ||
                             (wmode[c] && (double)nwq < wm_lo && nrq != 0))) {
                            wake[c] = clk + 1;
                        } else {
                            const int64_t orow = open_row[bq];
                            int64_t cc;
                            if (orow == q_row[j]) cc = kind == K_WR ? wr_cmd : rd_cmd;
                            else cc = orow < 0 ? ACT : PREPB;
                            const int64_t t = BANK_READY(c, bq, cc);
                            Qbnd[s] = t;
                            if (t < wake[c]) wake[c] = mx(t, clk + 1);
                        }
                    }
                }
                accepted = 1;
                nxt_req++;
                if (nxt_req == n) break;
            }
        }
        offers = F;

        if (cycles < 0 && nxt_req == n) {
            cycles = clk;
            memcpy(A->cnt_snap, cnt, N_COUNTERS * 8);
            if (!drain) break;
        }
        if (nxt_req == n) {
            int empty = 1;
            for (int64_t c = 0; c < C; c++)
                if (QL(c, 0) > 0 || QL(c, 1) > 0 || QL(c, 2) > 0) {
                    empty = 0;
                    break;
                }
            if (empty) break;
        }

        /* ---- exact jump over cycles in which nothing can happen ---- */
        if (jump && !issued_any && !accepted) {
            int64_t t_next = INF;
            for (int64_t c = 0; c < C; c++) t_next = mn(t_next, wake[c]);
            if (nxt_req < n && clk < q_arr[nxt_req] && q_arr[nxt_req] < t_next)
                t_next = q_arr[nxt_req];
            if (t_next >= INF) {
                status = 1; /* deadlock */
                break;
            }
            if (t_next > clk + 1) clk = t_next - 1;
        }

        clk++;
        ticks++;
        issued_any = 0;

        /* ---- memory tick: every channel controller, in channel order ---- */
        for (int64_t c = 0; c < C; c++) {
            if (ref_on && clk == next_ref[c]) {
                next_ref[c] += nrefi;
                for (int64_t r = 0; r < R; r++)
                    if (plen[c] < PQ) pbuf[c * PQ + plen[c]++] = r;
                wake[c] = clk;
            }
            if (jump && clk < wake[c]) continue;
            int issued_c = 0;
            int64_t fut = ref_on ? next_ref[c] : INF;
            futv_t vfut = FUTV_INIT();
            for (int64_t slot = 0; slot < nslots; slot++) {
                const int want_col = dual && slot == 0, want_row = dual && slot == 1;
                int64_t sel_kind = -1, sel_pos = -1, cmd = -1, rk = 0;
                /* (a) active buffer: the oldest ready column command */
                if (!want_row) {
                    int64_t best_arr = INF;
                    const int64_t m = QL(c, K_ACT), base = (c * 3 + K_ACT) * QP;
                    for (int64_t w0 = 0; w0 < m; w0 += 64) {
                        const int64_t row = base + w0;
                        /* its occupied blocks only: it rarely holds more than a few */
                        uint64_t due = due_mask(Qbnd + row, mn(RUP8(m), w0 + 64) - w0, clk, &vfut);
                        while (due) {
                            const int64_t s = row + __builtin_ctzll(due);
                            due &= due - 1;
                            const int64_t qs = Qq[s];
                            const int64_t cc = q_wr[qs] ? wr_cmd : rd_cmd, bq = SLOT_BANK(Qbr[s]);
                            const int64_t t = BANK_READY(c, bq, cc);
                            Qbnd[s] = t;
                            if (t > clk) {
                                fut = mn(fut, t);
                            } else if (arrive[qs] < best_arr) {
                                best_arr = arrive[qs];
                                cmd = cc;
                                sel_pos = s - base;
                                sel_kind = K_ACT;
                            }
                        }
                    }
                }
                if (sel_kind < 0) {
                    if (plen[c] > 0) {
                        /* (b) priority buffer head (refresh): never in the column slot */
                        if (want_col) continue;
                        rk = c * R + pbuf[c * PQ];
                        cmd = open_cnt[rk] > 0 ? PREAB : REFAB;
                        const int64_t t = mx(RDY(c, cmd), RDY(o1 + rk, cmd));
                        if (t > clk) {
                            fut = mn(fut, t);
                            continue;
                        }
                        if (cmd == PREAB && act_rank[rk] > 0) continue;
                        sel_kind = 3;
                    } else {
                        /* (c) write mode, then the read or the write buffer: first ready */
                        if (!wmode[c]) {
                            if ((double)QL(c, K_WR) > wm_hi || QL(c, K_RD) == 0) wmode[c] = 1;
                        } else {
                            if ((double)QL(c, K_WR) < wm_lo && QL(c, K_RD) != 0) wmode[c] = 0;
                        }
                        const int64_t kind = wmode[c] ? K_WR : K_RD;
                        const int64_t col_cmd = wmode[c] ? wr_cmd : rd_cmd;
                        const int64_t m = QL(c, kind), base = (c * 3 + kind) * QP;
                        /* one rank: the channel's and the rank's ready clocks are common to all
                         * slots -- their max per command, once per scan */
                        int64_t crk[RS] __attribute__((aligned(64)));
                        if (R == 1) {
#ifdef __AVX512F__
                            _mm512_store_si512((void *)crk, _mm512_max_epi64(
                                _mm512_load_si512((const void *)(rdy + c * RS)),
                                _mm512_load_si512((const void *)(rdy + (o1 + c) * RS))));
                            crk[8] = mx(RDY(c, 8), RDY(o1 + c, 8));
#else
                            for (int k = 0; k < NCMD; k++) crk[k] = mx(RDY(c, k), RDY(o1 + c, k));
#endif
                        }
                        int stop = 0;
                        for (int64_t w0 = 0; w0 < m && !stop; w0 += 64) {
                            const int64_t row = base + w0;
                            const int64_t nx = mn(QP, w0 + 64) - w0;
                            uint64_t due = due_mask(Qbnd + row, nx, clk, &vfut);
                            /* dual issue: the column slot considers hits only, the row slot
                             * the others (the rest stay due for the other slot) */
                            if (want_col) due = due_hits(Qbr + row, nx, due);
                            if (want_row) due &= ~due_hits(Qbr + row, nx, due);
                            /* one rank: while the channel or the rank holds the column command
                             * back, no hit is ready -- their bounds become that clock at once */
                            if (R == 1 && !want_row && crk[col_cmd] > clk) {
                                const uint64_t hm = due_hits(Qbr + row, nx, due);
                                if (hm) {
                                    fill_bits(Qbnd + row, nx, hm, crk[col_cmd]);
                                    due &= ~hm;
                                    fut = mn(fut, crk[col_cmd]);
                                }
                            }
                            while (due) {
                                const int64_t s = row + __builtin_ctzll(due);
                                due &= due - 1;
                                const int64_t v = Qbr[s], bq = SLOT_BANK(v);
                                const int64_t cc =
                                    SLOT_HIT(v) ? col_cmd : (open_row[bq] < 0 ? ACT : PREPB);
                                const int64_t t =
                                    mx(R == 1 ? crk[cc] : TOP(c, bq, cc), LOW(bq, cc));
                                Qbnd[s] = t;
                                if (t > clk) {
                                    fut = mn(fut, t);
                                    /* the due slots of the same class (bank, hit or not)
                                     * would evaluate to the same t: set their bounds at
                                     * once */
                                    const uint64_t same =
                                        class_due(Qbr + row, nx, SLOT_CLASS(v), due);
                                    if (same) {
                                        fill_bits(Qbnd + row, nx, same, t);
                                        due &= ~same;
                                    }
                                    continue;
                                }
                                const int closing = cc == PREPB || cc == RDA || cc == WRA;
                                if (closing && act_bank[bq] > 0) {
                                    if (skip_blocked) continue;
                                    stop = 1;
                                    break;
                                }
                                cmd = cc;
                                sel_pos = s - base;
                                sel_kind = kind;
                                stop = 1;
                                break;
                            }
                        }
                        if (sel_kind < 0) continue;
                    }
                }

                /* ---- issue `cmd`: constraint rules on its path ---- */
                int64_t g = -1, bk = -1, q = -1, s = -1;
                if (sel_kind != 3) {
                    s = (c * 3 + sel_kind) * QP + sel_pos;
                    q = Qq[s];
                    bk = SLOT_BANK(Qbr[s]);
                    rk = bank_rk[bk] - o1;
                    g = bank_bg[bk] - o2;
                    if (!stat_done[q]) {
                        stat_done[q] = 1;
                        const int64_t orow = open_row[bk];
                        const int64_t k = orow == q_row[q] ? 0 : (orow >= 0 ? 2 : 1);
                        cnt[(q_wr[q] ? C_HIT_W : C_HIT_R) + k]++;
                    }
                }
                apply_target(RU, rdy, hist, c, 0, cmd, clk);
                if (R > 1 && HAS_SIB(1, cmd))
                    for (int64_t node = c * R; node < c * R + R; node++)
                        if (node != rk) apply_sibling(RU, rdy, o1 + node, 1, cmd, clk);
                apply_target(RU, rdy, hist, o1 + rk, 1, cmd, clk);
                if (g < 0) {
                    /* all-bank command: every bank group and bank of the rank is a target */
                    if (RU->any[0][2][cmd] || RU->any[0][3][cmd])
                        for (int64_t gnode = rk * G; gnode < rk * G + G; gnode++) {
                            apply_target(RU, rdy, hist, o2 + gnode, 2, cmd, clk);
                            for (int64_t bb = 0; bb < B; bb++)
                                apply_target(RU, rdy, hist, o3 + gnode * B + bb, 3, cmd, clk);
                        }
                } else {
                    if (HAS_SIB(2, cmd))
                        for (int64_t gnode = rk * G; gnode < rk * G + G; gnode++)
                            if (gnode != g) apply_sibling(RU, rdy, o2 + gnode, 2, cmd, clk);
                    apply_target(RU, rdy, hist, o2 + g, 2, cmd, clk);
                    if (HAS_SIB(3, cmd))
                        for (int64_t bnode = g * B; bnode < g * B + B; bnode++)
                            if (bnode != bk) apply_sibling(RU, rdy, o3 + bnode, 3, cmd, clk);
                    apply_target(RU, rdy, hist, o3 + bk, 3, cmd, clk);
                }
                cnt[cmd]++;
                issued_any = 1;
                issued_c = 1;
                if (c == 0 && nlog < maxlog) {
                    int64_t *lg = log + nlog * 5;
                    lg[0] = clk;
                    lg[1] = cmd;
                    lg[2] = rk;
                    lg[3] = bk;
                    lg[4] = q < 0 ? -1 : q_row[q];
                    nlog++;
                }

                /* ---- state changes ---- */
                if (sel_kind == 3) {
                    if (cmd == PREAB) {
                        for (int64_t k = rk * G * B; k < (rk + 1) * G * B; k++) open_row[k] = -1;
                        for (int kk = 0; kk < 2; kk++) {
                            int64_t *restrict bd = Qbnd + (c * 3 + kk) * QP;
                            int64_t *restrict br = Qbr + (c * 3 + kk) * QP;
                            for (int64_t i = 0; i < QL(c, kk); i++) {
                                bd[i] = 0;
                                if (SLOT_BANK(br[i]) / (G * B) == rk) br[i] &= ~HIT_BIT;
                            }
                        }
                        active_cycles[rk] += clk - open_since[rk];
                        open_cnt[rk] = 0;
                    } else {
                        int64_t *restrict pb = pbuf + c * PQ;
                        for (int64_t k = 0; k < plen[c] - 1; k++) pb[k] = pb[k + 1];
                        plen[c]--;
                    }
                    continue;
                }
                if (cmd == ACT || cmd == PREPB || cmd == RDA || cmd == WRA) {
                    /* the bank opens or closes: its queued requests get another next command
                     * (read and write buffers are adjacent: one pass over both, padding
                     * included -- its bank is -1) */
                    reset_bank(Qbnd + c * 3 * QP, Qbr + c * 3 * QP, 2 * QP, bk,
                               cmd == ACT ? q_row[q] : -1);
                }
                if (cmd == ACT) {
                    open_row[bk] = q_row[q];
                    if (open_cnt[rk] == 0) open_since[rk] = clk;
                    open_cnt[rk]++;
                    /* leaves the read/write buffer for the active buffer */
                    const int64_t a = (c * 3 + K_ACT) * QP + QL(c, K_ACT);
                    Qbr[a] = Qbr[s];
                    Qq[a] = Qq[s];
                    Qbnd[a] = 0;
                    QL(c, K_ACT)++;
                    act_bank[bk]++;
                    act_rank[rk]++;
                } else if (cmd == PREPB) {
                    open_row[bk] = -1;
                    if (--open_cnt[rk] == 0) active_cycles[rk] += clk - open_since[rk];
                    continue;
                } else {
                    /* final column command: the request retires */
                    if (cmd == RDA || cmd == WRA) {
                        open_row[bk] = -1;
                        if (--open_cnt[rk] == 0) active_cycles[rk] += clk - open_since[rk];
                    }
                    if (q_wr[q]) {
                        done[q] = clk;
                    } else {
                        depart[q] = clk + rl;
                        done[q] = clk + rl;
                    }
                    if (sel_kind == K_ACT) {
                        act_bank[bk]--;
                        act_rank[rk]--;
                    }
                }
                /* remove the slot, keeping the buffer's order; the freed last slot becomes
                 * padding again */
                {
                    const int64_t base = (c * 3 + sel_kind) * QP;
                    const int64_t m = QL(c, sel_kind) - 1;
                    remove_slot(Qbnd + base, QP, sel_pos, m, INF);
                    remove_slot(Qbr + base, QP, sel_pos, m, SLOT_PAD);
                    if (sel_kind == K_WR) remove_slot(Qkey + base, QP, sel_pos, m, 0);
                    remove_slot(Qq + base, QP, sel_pos, m, 0);
                    QL(c, sel_kind) = m;
                }
            }
            wake[c] = issued_c ? clk + 1 : mn(fut, FUTV_MIN(vfut));
        }
    }
    for (int64_t r = 0; r < NR; r++)
        if (open_cnt[r] > 0) active_cycles[r] += clk - open_since[r];
    A->out_scalars[0] = status;
    A->out_scalars[1] = cycles;
    A->out_scalars[2] = clk;
    A->out_scalars[3] = ticks;
out:
    free(rdy); free(hist); free(open_row); free(open_cnt); free(open_since); free(act_bank);
    free(act_rank); free(Qbnd); free(Qbr); free(Qkey); free(Qq);
    free(ql); free(pbuf); free(plen); free(wmode);
    free(next_ref); free(wake); free(stat_done); free(bank_rk); free(bank_bg);
    return status;
}

/* Instantiations: the common configurations get constant C, R, dual, closed (see the header);
 * anything else runs the generic one. */
__attribute__((noinline)) static int sim_1ch_1rk(const Args *A, const Rules *RU)
{
    return sim_core(A, RU, 1, 1, 0, 0, 32);
}

__attribute__((noinline)) static int sim_1ch_2rk(const Args *A, const Rules *RU)
{
    return sim_core(A, RU, 1, 2, 0, 0, 32);
}

__attribute__((noinline)) static int sim_hbm8(const Args *A, const Rules *RU)
{
    return sim_core(A, RU, 8, 2, 1, 0, 32);
}

__attribute__((noinline)) static int sim_generic(const Args *A, const Rules *RU)
{
    const int64_t *p = A->params;
    const int64_t QM = mx(mx(p[4], p[5]), p[1] * p[2] * p[3]);
    return sim_core(A, RU, p[0], p[1], p[9] != 0, p[10] != 0, RUP8(QM));
}

int simulate_c(const int64_t *q_ch, const int64_t *q_rank, const int64_t *q_bg,
               const int64_t *q_bank, const int64_t *q_row, const int8_t *q_wr,
               const int64_t *q_key, const int64_t *q_arr, int64_t n, const int64_t *params,
               const double *wm, const int64_t *tab_i, const int64_t *nxt, const int64_t *lat,
               const int64_t *win, int64_t *log, int64_t maxlog, int64_t *out_scalars,
               int64_t *cnt_snap, int64_t *cnt, int64_t *arrive, int64_t *depart, int64_t *done,
               uint8_t *forwarded, int64_t *active_cycles)
{
    Args A = {q_ch, q_rank, q_bg, q_bank, q_row, q_key, q_arr, q_wr, n, params, wm, tab_i,
              nxt, lat, win, log, maxlog, out_scalars, cnt_snap, cnt, arrive, depart, done,
              active_cycles, forwarded};
    /* regroup the rule table: tab_i[a][level][cmd], a = start, end, sibling start, end */
    Rules *RU = NULL;
    if (posix_memalign((void **)&RU, 64, sizeof(Rules))) return -1;
    memset(RU, 0, sizeof(Rules));
    int32_t nw = 0;
    for (int a = 0; a < 2; a++)
        for (int l = 0; l < 4; l++)
            for (int c = 0; c < NCMD; c++) {
                int64_t *l1 = RU->lat1[a][l][c];
                for (int k = 0; k < RS; k++) l1[k] = NEG;
                const int64_t s0 = tab_i[((2 * a) * 4 + l) * NCMD + c];
                const int64_t e0 = tab_i[((2 * a + 1) * 4 + l) * NCMD + c];
                RU->any[a][l][c] = e0 > s0;
                if (a == 0) RU->ws[l][c] = nw;
                for (int64_t i = s0; i < e0; i++) {
                    if (a == 0 && win[i] > 1) {
                        if (nw == 64 || win[i] > W) { free(RU); return -2; }
                        RU->wrules[nw].lat = lat[i];
                        RU->wrules[nw].nxt = (int32_t)nxt[i];
                        RU->wrules[nw].win = (int32_t)win[i];
                        nw++;
                    } else {
                        l1[nxt[i]] = mx(l1[nxt[i]], lat[i]);
                    }
                }
                if (a == 0) RU->we[l][c] = nw;
            }
    int st;
    const int64_t C = params[0], R = params[1], dual = params[9] != 0, closed = params[10] != 0;
    const int q32 = RUP8(mx(mx(params[4], params[5]), R * params[2] * params[3])) == 32;
    if (!q32)
        st = sim_generic(&A, RU);
    else if (C == 1 && R == 1 && !dual && !closed)
        st = sim_1ch_1rk(&A, RU);
    else if (C == 1 && R == 2 && !dual && !closed)
        st = sim_1ch_2rk(&A, RU);
    else if (C == 8 && R == 2 && dual && !closed)
        st = sim_hbm8(&A, RU);
    else
        st = sim_generic(&A, RU);
    free(RU);
    return st;
}
