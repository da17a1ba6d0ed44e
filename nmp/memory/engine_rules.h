/* The DRAM engine (engine.c): constraint rules, regrouped so that issuing a command is a few
 * vector maxes. */
#ifndef NMP_ENGINE_RULES_H
#define NMP_ENGINE_RULES_H

#include "engine_defs.h"
#include "engine_lanes.h"

/* ---- constraint rules ------------------------------------------------------------------ */

/* Channel and rank ready clocks: rdy[node * RS + cmd], a row of RS = 16 int64 (commands 0..8,
 * padding) per node, 64-byte aligned, so the commands 0..7 of a node are one vector. */
#define RS 16
#define NEG (-INF) /* "no rule": clk + NEG is below every ready clock (they start at 0) */

/* A window-w rule (w > 1, i.e. tFAW) of a target node: raise rdy[nxt] to (clock of the
 * w-th last issue of the command on the node) + lat, if there were w issues. */
typedef struct {
    int64_t lat;
    int32_t nxt, win;
} WRule;

/* The constraint table, regrouped.
 *  - Channel and rank (levels 0, 1), per (target 0 / sibling 1, level, command): lat1, the
 *    largest latency of the window-1 rules (sibling rules: of all rules -- the reference
 *    applies them as clk + lat whatever their window) to each following command, NEG if none:
 *    one vector max over a node's row. any: the target rows have a rule at all (the reference
 *    pushes the history only then). wrules[ws .. we): the target rules with a window > 1; the
 *    history of (node, cmd) is read by these only, so it is kept where there is one.
 *  - Bank group and bank (levels 2, 3), per preceding command and bank-table row: the largest
 *    latency of the rules on its bank group (bg), on its bank (bk), on the other bank groups
 *    of its rank (bgs) and on the other banks of its bank group (bks); for an all-bank
 *    command, on every bank group and bank of its rank (all). NEG where there is none. */
typedef struct {
    int64_t lat1[2][2][NCMD][RS] __attribute__((aligned(64)));
    uint8_t any[2][2][NCMD];
    WRule wrules[64];
    int32_t ws[2][NCMD], we[2][NCMD];
    int64_t bg[NCMD][NK], bk[NCMD][NK], bgs[NCMD][NK], bks[NCMD][NK], all[NCMD][NK];
    uint8_t has_bgs[NCMD], has_bks[NCMD];
    int64_t lat_max; /* the largest latency of any rule (the 32-bit bank table's guard) */
    /* the same four as a bank's relations to the issuing bank (REL_*), int32 at or above
     * T32_NEG (engine_lanes.h), for the AVX2 raise of a 32-bit bank table (engine_channel.h's
     * issue_rules): one permutation per block of 8 lanes gives every lane its latency */
    int32_t rel32[NCMD][NK][8] __attribute__((aligned(32)));
    /* rel8[lb][lane]: a channel's lane's relation to its bank lb (REL_*), for lb below the
     * channel's banks (the same in every channel: kept once per run, not per channel) */
    uint8_t rel8[64][64];
} Rules;

/* A lane's relation to the bank a command issued to: none (another rank, padding: no rule),
 * the bank itself (its bank group's rules and its own), another bank of its bank group, a
 * bank of another bank group of its rank */
enum { REL_NONE, REL_BANK, REL_BG, REL_RANK };

/* AVX2 builds without AVX-512 raise a 32-bit bank table by relation (issue_rules: rel8,
 * rel32); AVX-512 builds by masked maxima */
#define REL_RAISE T32_NARROW

/* int32 latencies of a 32-bit table: at or above T32_NEG ("no rule"), below T32_LAT_MAX where
 * the run takes such a table (T32_FITS) and clamped to it where not (never read then) */
FORCE_INLINE int32_t lat32(int64_t lat)
{
    return (int32_t)(lat < T32_NEG ? T32_NEG : lat > T32_LAT_MAX ? T32_LAT_MAX : lat);
}

/* Rules.rel32 from the regrouped rows: a raise takes the largest latency of the rules that
 * apply (max(t, clk + a, clk + b) = max(t, clk + max(a, b))) */
UNUSED static void relation_rows(Rules *RU)
{
    for (int c = 0; c < NCMD; c++)
        for (int k = 0; k < NK; k++) {
            int32_t *r = RU->rel32[c][k];
            for (int i = 0; i < 8; i++) r[i] = (int32_t)T32_NEG;
            r[REL_BANK] = lat32(mx(RU->bg[c][k], RU->bk[c][k]));
            r[REL_BG] = lat32(mx(RU->bg[c][k], RU->bks[c][k]));
            r[REL_RANK] = lat32(RU->bgs[c][k]);
        }
}

/* Rules.rel8 for channels of R ranks of G bank groups of B banks (lane (rank * G + bank group)
 * * B + bank; at most 64 lanes, which run() checks first): its rows lb < R G B, the lanes past
 * them none */
UNUSED static void lane_relations(Rules *RU, int64_t R, int64_t G, int64_t B)
{
    const int64_t nbc = R * G * B;
    if (nbc > 64) return;
    memset(RU->rel8, REL_NONE, (size_t)nbc * sizeof(RU->rel8[0]));
    int64_t rank[64], group[64]; /* each lane's rank and bank group, in the channel */
    for (int64_t l = 0; l < nbc; l++) {
        rank[l] = l / (G * B);
        group[l] = l / B;
    }
    for (int64_t lb = 0; lb < nbc; lb++)
        for (int64_t l = 0; l < nbc; l++)
            RU->rel8[lb][l] = l == lb                  ? REL_BANK
                              : rank[l] != rank[lb]   ? REL_NONE
                              : group[l] == group[lb] ? REL_BG
                                                      : REL_RANK;
}

/* rdy[0..7] = max(rdy[0..7], clk + lat[0..7]) (REFpb, 8, never issues: its readiness is never
 * read) */
FORCE_INLINE void raise_row(int64_t *restrict r, const int64_t *restrict lat, int64_t clk)
{
#ifdef __AVX512F__
    const __m512i v =
        _mm512_add_epi64(_mm512_load_si512((const void *)lat), _mm512_set1_epi64(clk));
    _mm512_store_si512((void *)r, _mm512_max_epi64(_mm512_load_si512((const void *)r), v));
#else
    for (int k = 0; k < 8; k++) r[k] = mx(r[k], clk + lat[k]);
#endif
}

/* target channel or rank: push clk into its history of cmd, then apply the target rules */
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

/* Regroup the rule table (tab_i[a][level][cmd], a = start, end, sibling start, end, into
 * nxt/lat/win) into RU: 0, or -2 (a window above 4, more than 64 windowed rules), -6 (a
 * windowed rule below the rank). */
UNUSED static int regroup_rules(Rules *RU, const int64_t *tab_i, const int64_t *nxt,
                                const int64_t *lat, const int64_t *win, int closed)
{
    memset(RU, 0, sizeof(Rules));
    for (int c = 0; c < NCMD; c++)
        for (int k = 0; k < NK; k++)
            RU->bg[c][k] = RU->bk[c][k] = RU->bgs[c][k] = RU->bks[c][k] = RU->all[c][k] = NEG;
    int32_t nw = 0;
    for (int a = 0; a < 2; a++)
        for (int l = 0; l < 4; l++)
            for (int c = 0; c < NCMD; c++) {
                const int64_t s0 = tab_i[((2 * a) * 4 + l) * NCMD + c];
                const int64_t e0 = tab_i[((2 * a + 1) * 4 + l) * NCMD + c];
                for (int64_t i = s0; i < e0; i++) RU->lat_max = mx(RU->lat_max, lat[i]);
                if (l >= 2) {
                    /* bank group and bank: the bank table's rows */
                    int64_t *row = a == 0 ? (l == 2 ? RU->bg[c] : RU->bk[c])
                                          : (l == 2 ? RU->bgs[c] : RU->bks[c]);
                    for (int64_t i = s0; i < e0; i++) {
                        if (a == 0 && win[i] > 1) return -6;
                        const int64_t f = nxt[i];
                        const int k = f == ACT                     ? T_ACT
                                      : f == PREPB                 ? T_PRE
                                      : f == (closed ? RDA : RD) ? T_RD
                                      : f == (closed ? WRA : WR) ? T_WR
                                                                   : -1;
                        if (k < 0) continue; /* a command never evaluated below the rank */
                        row[k] = mx(row[k], lat[i]);
                        if (a == 0) RU->all[c][k] = mx(RU->all[c][k], lat[i]);
                        if (a == 1) {
                            if (l == 2) RU->has_bgs[c] = 1;
                            else RU->has_bks[c] = 1;
                        }
                    }
                    continue;
                }
                int64_t *l1 = RU->lat1[a][l][c];
                for (int k = 0; k < RS; k++) l1[k] = NEG;
                RU->any[a][l][c] = e0 > s0;
                if (a == 0) RU->ws[l][c] = nw;
                for (int64_t i = s0; i < e0; i++) {
                    if (a == 0 && win[i] > 1) {
                        if (nw == 64 || win[i] > W) return -2;
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
    relation_rows(RU);
    return 0;
}

#endif
