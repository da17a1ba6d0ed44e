/* The DRAM engine (engine.c): commands, counters and the arguments of a run. */
#ifndef NMP_ENGINE_DEFS_H
#define NMP_ENGINE_DEFS_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__AVX512F__) || defined(__AVX2__)
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
/* cycles a bank had a row open, summed over the banks (DRAMPower's bank-wise background):
 * less the cycle of each ACT, plus the cycle of each close, plus the open banks at the end */
#define C_BANK_OPEN (NCMD + 8)
#define N_COUNTERS (NCMD + 9)
/* where a picked request is: the read or the write buffer, the active buffer, refresh */
enum { K_RD, K_WR, K_ACTIVE, K_REF };
/* rows of the bank table: the commands evaluated below the rank */
#define NK 4
enum { T_ACT, T_PRE, T_RD, T_WR };
#define FORCE_INLINE static inline __attribute__((always_inline))
/* (on a static function too: each of engine.c's parts uses some of the headers' helpers) */
#define UNUSED __attribute__((unused))

FORCE_INLINE int64_t mx(int64_t a, int64_t b) { return a > b ? a : b; }
FORCE_INLINE int64_t mn(int64_t a, int64_t b) { return a < b ? a : b; }

/* The fields of a transaction number (address >> tx_shift): channel, rank, bank group, bank
 * and row, each one bit range */
enum { F_CH, F_RK, F_BG, F_BK, F_ROW, NF };

/* A run's configuration, by name: nmp/memory/engine_params.py's ENGINE_PARAMS (numpy,
 * align=True) and engine_fields.py's ParamsStruct are this struct field for field;
 * native_lib.py checks its size (struct_size_c). */
typedef struct {
    int64_t channels, ranks, bankgroups, banks; /* the organization */
    int64_t read_queue, write_queue;            /* buffer entries per channel */
    int64_t frontend_ratio;                     /* requests offered per memory cycle */
    int64_t nrefi, read_latency;                /* cycles */
    int64_t dual_issue, closed_row, refresh_on, drain, skip_blocked, jump; /* 0 / 1 */
    int64_t hold_hit_rows; /* 1: a PRE waits while its bank's open row has hits queued */
    double wm_high, wm_low; /* write-buffer watermarks (entries) */
} Params;

/* The arguments of a run: engine_fields.py's EngineArgs (a ctypes Structure) field for field. */
typedef struct {
    /* the lines (their address, write flag and arrival cycle), each split into 1 << ks
     * transactions: transaction q is line q >> ks at address addr + (q & (2^ks - 1)) * tx */
    const uint64_t *addr;
    const uint8_t *line_wr;
    const int64_t *line_arr;
    int64_t n; /* transactions */
    /* ks, the transaction shift, then per field (F_*) its bit position and mask */
    const int64_t *dec;
    const Params *P;
    /* the constraint table (nmp/memory/standards.py: build_table) */
    const int64_t *tab_i, *nxt, *lat, *win;
    /* the command log of channel 0: maxlog rows of (clock, command, rank, bank, row) */
    int64_t *log;
    int64_t maxlog;
    /* outputs: status, cycles, last cycle, evaluations; the counters at `cycles` and at the
     * end; per transaction; per rank the cycles it had a row open */
    int64_t *out_scalars, *cnt_snap, *cnt, *arrive, *depart, *done, *active_cycles;
    uint8_t *forwarded;
    int64_t threads; /* a multi-channel run: its channels on up to this many threads */
} Args;

#endif
