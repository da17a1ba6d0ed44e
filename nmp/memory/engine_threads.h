/* The DRAM engine (engine.c): the channels of a multi-channel run on threads, with the same
 * results as on one (tests/memory/test_mem_native_engine.py compares them on every case).
 *
 * The frontend, which offers the requests strictly in order, is all that couples the channels
 * (engine.c: sim_core). Here the thread that runs the frontend runs some channels itself (each
 * offer on the spot, as on one thread); each other thread owns the channels c with
 * c % threads == its index and serves their offers from a queue of messages, in order. An
 * offer's outcome the frontend needs is the step at which it is accepted: the step it is made
 * at, unless its buffer is full (and the write buffer does not hold its key). The frontend
 * sends an offer without waiting where neither can be: fewer requests offered to that buffer
 * than it holds, less those the channel has already seen leave it (`gone`, which only lags:
 * the bound never errs low), and no write with its key that may still wait in the write
 * buffer (`table`: per key the last write that entered it; it has left once `done` is set).
 * Otherwise it sends the offer and waits for the step (a sync). A thread with nothing to do
 * advances its channels to the frontend's step (every later offer is made at or after it,
 * and a channel is evaluated up to an offer's step before it takes it, so this is the work
 * the offer would do), which keeps `gone` current and syncs rare.
 *
 * A deadlock (an error: the driver raises) is the one end where the other channels may stand
 * later than on one thread (advanced to the frontend's step); the counts are then not
 * reported.
 *
 * The channel steps it calls (ch_offer, ch_advance, ch_next) are declared in engine_offer.h. */
#ifndef NMP_ENGINE_THREADS_H
#define NMP_ENGINE_THREADS_H

#include <pthread.h>
#include <sched.h>

#include "engine_offer.h"

#define RING 1024    /* messages in flight per channel */
#define M_SYNC 2     /* an offer whose outcome the frontend waits for */
#define NO_KEY (-1)  /* an empty slot of the write table */

typedef struct {
    int64_t j, key, kind, fclk; /* kind: K_RD or K_WR, | M_SYNC */
} Msg;

/* One channel's mailbox: what the frontend writes and what the channel's thread writes lie on
 * separate cache lines. */
typedef struct {
    int64_t head __attribute__((aligned(64))); /* messages sent (frontend) */
    int64_t sent[2];                           /* offers to each buffer (frontend only) */
    int64_t tail __attribute__((aligned(64))); /* messages served (channel's thread) */
    int64_t gone[2]; /* of the offers served to each buffer, those no longer in it */
    int64_t reply;   /* of the last sync: the accepted step << 1 | served at once, or -1 */
    int64_t served[2];                        /* (channel's thread only) */
    Msg ring[RING] __attribute__((aligned(64)));
} Mailbox;

typedef struct {
    const Args *A;
    const Rules *RU;
    Sim *sims;
    Mailbox *box;
    int64_t nch, threads;
    int64_t fclk __attribute__((aligned(64))); /* the frontend's step */
    int64_t stop __attribute__((aligned(64)));
} Crew;

typedef struct {
    Crew *crew;
    int64_t self;
} Hand;

#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)

FORCE_INLINE void publish_gone(Mailbox *restrict b, Sim *restrict S, CFG)
{
    UNPACK(S);
    for (int k = 0; k < 2; k++)
        __atomic_store_n(&b->gone[k], b->served[k] - QL(0, k), __ATOMIC_RELAXED);
}

/* Serve channel c's messages; 1 if there were any. */
FORCE_INLINE int serve(Crew *restrict K, int64_t c, CFG)
{
    Mailbox *restrict b = &K->box[c];
    const int64_t h = LOAD(b->head);
    int64_t t = b->tail;
    if (t == h) return 0;
    Sim *restrict S = &K->sims[c];
    for (; t < h; t++) {
        const Msg m = b->ring[t & (RING - 1)];
        const int64_t kind = m.kind & 1;
        int hit;
        const int64_t at = ch_offer(S, K->RU, K->A, m.j, m.key, kind, m.fclk, &hit, CFG_ARGS);
        b->served[kind]++;
        publish_gone(b, S, CFG_ARGS);
        if (m.kind & M_SYNC) b->reply = at < 0 ? -1 : at << 1 | hit;
        STORE(b->tail, t + 1);
    }
    return 1;
}

/* A channel thread: serve its channels' messages; when there are none, advance the channels
 * to the frontend's step; stop when told (after the last message). The step and the stop are
 * read before the messages: every message sent before them is then seen, and every later one
 * is at or after that step. */
FORCE_INLINE void *crew_loop(void *arg, CFG)
{
    Hand *hand = arg;
    Crew *K = hand->crew;
    int64_t idle = 0;
    for (;;) {
        const int64_t f = LOAD(K->fclk), stop = LOAD(K->stop);
        int busy = 0;
        for (int64_t c = hand->self; c < K->nch; c += K->threads) busy |= serve(K, c, CFG_ARGS);
        if (busy) {
            idle = 0;
            continue;
        }
        if (stop) return NULL;
        for (int64_t c = hand->self; c < K->nch; c += K->threads) {
            Sim *S = &K->sims[c];
            if (ch_next(S, CFG_ARGS) <= f) {
                ch_advance(S, K->RU, f, CFG_ARGS);
                publish_gone(&K->box[c], S, CFG_ARGS);
                busy = 1;
            }
        }
        if (!busy && ++idle > 64) sched_yield();
    }
}

/* The write table: per transaction key, the last write that entered a write buffer. */
typedef struct {
    int64_t *key, *q, mask;
} Table;

FORCE_INLINE int64_t *table_slot(Table *T, int64_t key)
{
    uint64_t i = ((uint64_t)key * 0x9E3779B97F4A7C15ull) >> 20;
    for (;; i++) {
        const int64_t k = T->key[i & T->mask];
        if (k == key || k == NO_KEY) return &T->key[i & T->mask];
    }
}

/* The frontend of sim_core with the channels on `threads` threads (worker: the channel
 * threads' entry). Sets *status (1: a deadlock) and returns the last step. */
FORCE_INLINE int64_t front_threads(const Args *restrict A, const Rules *restrict RU, Sim *sims,
                                   int64_t NCH, int64_t threads, void *(*worker)(void *),
                                   int *status, CFG)
{
    const int64_t n = A->n, F = A->P->frontend_ratio, RQ = A->P->read_queue;
    const int64_t WQ = A->P->write_queue;
    Sim *S = sims;
    UNPACK(S);
    int64_t writes = 0;
    for (int64_t i = 0; i < (n >> S->ks); i++) writes += line_wr[i] != 0;
    int64_t cap = 16;
    while (cap < 2 * (writes << S->ks) + 16) cap <<= 1;
    Table T = {malloc(cap * 8), malloc(cap * 8), cap - 1};
    Mailbox *box = NULL;
    if (posix_memalign((void **)&box, 64, NCH * sizeof(Mailbox))) box = NULL;
    Crew K = {.A = A, .RU = RU, .sims = sims, .box = box, .nch = NCH, .threads = threads};
    Hand hands[64];
    pthread_t tid[64];
    int64_t started = 1;
    int64_t fclk = 0;
    if (!T.key || !T.q || !box) {
        *status = -1;
        goto out;
    }
    for (int64_t i = 0; i < cap; i++) T.key[i] = NO_KEY;
    memset(box, 0, NCH * sizeof(Mailbox));
    for (; started < threads; started++) {
        hands[started] = (Hand){&K, started};
        if (pthread_create(&tid[started], NULL, worker, &hands[started])) break;
    }
    K.threads = threads = started; /* (fewer where a thread could not start) */
    int64_t budget = 1;
    for (int64_t j = 0; j < n; j++) {
        const int64_t arr = A->line_arr[j >> S->ks], key = TX_KEY(j);
        if (arr > fclk) {
            fclk = arr;
            budget = F;
        } else if (budget == 0) {
            fclk++;
            budget = F;
        }
        STORE(K.fclk, fclk); /* (after the messages before it: crew_loop) */
        const int64_t c = FIELD(key, F_CH), kind = Q_WR(j) ? K_WR : K_RD;
        int64_t at = fclk, *slot = table_slot(&T, key);
        /* (a write's done, which the table's lookups read, is -1 until it issues: a summed
         * run sets no output beforehand; sent below with the offer) */
        if (kind == K_WR) A->done[j] = -1;
        int hit = 0;
        if (c % threads == 0) {
            /* a channel of this thread: on the spot */
            at = ch_offer(&sims[c], RU, A, j, key, kind, fclk, &hit, CFG_ARGS);
        } else {
            Mailbox *b = &box[c];
            const int64_t q = *slot == key ? T.q[slot - T.key] : -1;
            const int sure = b->sent[kind] - __atomic_load_n(&b->gone[kind], __ATOMIC_RELAXED) <
                                 (kind == K_WR ? WQ : RQ) &&
                             (q < 0 || __atomic_load_n(&A->done[q], __ATOMIC_RELAXED) >= 0);
            while (b->head - LOAD(b->tail) >= RING) sched_yield(); /* (the queue is full) */
            b->ring[b->head & (RING - 1)] = (Msg){j, key, kind | (sure ? 0 : M_SYNC), fclk};
            b->sent[kind]++;
            STORE(b->head, b->head + 1);
            if (!sure) {
                for (int64_t spin = 0; LOAD(b->tail) != b->head; spin++)
                    if (spin > 64) sched_yield();
                const int64_t r = b->reply;
                at = r < 0 ? -1 : r >> 1;
                hit = r >= 0 && (r & 1);
            }
        }
        if (at < 0) {
            *status = 1; /* nothing can ever issue: a deadlock */
            fclk = AT_OF(&sims[c], int64_t, ARENA_LAST_EVAL)[0];
            break;
        }
        if (kind == K_WR && !hit) {
            *slot = key; /* the last write of this key that entered the write buffer */
            T.q[slot - T.key] = j;
        }
        if (at != fclk) {
            fclk = at;
            budget = F;
        }
        budget--;
    }
    STORE(K.stop, 1);
out:
    for (int64_t i = 1; i < started; i++) pthread_join(tid[i], NULL);
    free(T.key);
    free(T.q);
    free(box);
    return fclk;
}

#endif
