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
 * Waiting: a thread with nothing to do spins, then yields, then sleeps on a condition variable
 * (park); whoever gives it something to do wakes it. Spinning alone had let the waiting threads
 * take the cores that the thread they wait for needed: with two other busy processes on a
 * 2-core machine, a run on 8 threads took 100-200x its time on one (seconds per reference
 * case), on 2 threads 100x. The one who parks sets its flag, fences, then tests its condition,
 * under the mutex; the one who gives it work writes it, then reads the flag without a fence
 * (nudge: no fence per message on the hot path) and, where it is set, signals under the
 * mutex. A wake-up lost to the unfenced read is bounded: a parked thread naps at most 1 ms at a
 * time, the frontend wakes the thread it waits for before it waits long, and the stop wakes
 * them all. And where the frontend waits for most of its time, it takes the channels back
 * (SLOW_PCT, below).
 *
 * The channel steps it calls (ch_offer, ch_advance, ch_next) are declared in engine_offer.h. */
#ifndef NMP_ENGINE_THREADS_H
#define NMP_ENGINE_THREADS_H

#include <pthread.h>
#include <sched.h>
#include <time.h>

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

#define MAX_THREADS 64
#define SPINS 64   /* a waiting thread's polls before it yields */
#define YIELDS 256 /* ... and its yields before it parks (about 0.1 ms where nothing else runs) */
#define PARK_NS 1000000 /* a parked thread's longest nap (1 ms) */

typedef struct {
    const Args *A;
    const Rules *RU;
    Sim *sims;
    Mailbox *box;
    int64_t nch, threads;
    int64_t fclk __attribute__((aligned(64))); /* the frontend's step */
    int64_t stop __attribute__((aligned(64)));
    /* parking: per channel thread (index 1..) and the frontend's (index 0) flag and wake-up */
    int64_t parked[MAX_THREADS] __attribute__((aligned(64)));
    pthread_mutex_t mu;
    pthread_cond_t wake[MAX_THREADS];
} Crew;

typedef struct {
    Crew *crew;
    int64_t self;
} Hand;

#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)

/* After writing what thread `who` may wait for: wake it if it is parked. */
UNUSED static void unpark(Crew *K, int64_t who)
{
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (__atomic_load_n(&K->parked[who], __ATOMIC_RELAXED)) {
        pthread_mutex_lock(&K->mu);
        pthread_cond_signal(&K->wake[who]);
        pthread_mutex_unlock(&K->mu);
    }
}

/* The same on the hot paths, without the fence where `who` was not seen parking: a wake-up
 * lost to that race costs at most a PARK_NS nap of the parked thread. */
FORCE_INLINE void nudge(Crew *K, int64_t who)
{
    if (__atomic_load_n(&K->parked[who], __ATOMIC_RELAXED)) unpark(K, who);
}

/* Park thread `who` until ready(K, arg) holds (a test of what others write, then unpark), in
 * naps of at most PARK_NS. */
UNUSED static void park(Crew *K, int64_t who, int (*ready)(Crew *, const void *), const void *arg)
{
    pthread_mutex_lock(&K->mu);
    __atomic_store_n(&K->parked[who], 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    while (!ready(K, arg)) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += PARK_NS;
        if (until.tv_nsec >= 1000000000) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&K->wake[who], &K->mu, &until);
    }
    __atomic_store_n(&K->parked[who], 0, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&K->mu);
}

/* A wait's n-th poll: spin, then yield, then 1 (park now) */
UNUSED static int poll_then_park(int64_t *n)
{
    if (++*n <= SPINS) return 0;
    if (*n <= SPINS + YIELDS) {
        sched_yield();
        return 0;
    }
    *n = 0;
    return 1;
}

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
    /* (the frontend waits only for the last message it sent: a sync, or room in a full ring) */
    nudge(K, 0);
    return 1;
}

/* Channel thread `self` has work: a message for one of its channels, or the stop. */
UNUSED static int crew_news(Crew *K, const void *arg)
{
    const int64_t self = *(const int64_t *)arg;
    if (LOAD(K->stop)) return 1;
    for (int64_t c = self; c < K->nch; c += K->threads)
        if (LOAD(K->box[c].head) != K->box[c].tail) return 1;
    return 0;
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
        if (!busy && poll_then_park(&idle)) park(K, hand->self, crew_news, &hand->self);
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

/* The frontend waits until channel c's thread has served `upto` messages */
typedef struct {
    const Mailbox *b;
    int64_t upto;
} TailWait;

UNUSED static int tail_reached(Crew *K, const void *arg)
{
    (void)K;
    const TailWait *w = arg;
    return LOAD(w->b->tail) >= w->upto;
}

UNUSED static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* (of channel thread `who`; returns the nanoseconds it waited after its spins: the clock is read
 * only then, and `who` woken for sure, should it have missed a nudge) */
UNUSED static int64_t front_wait(Crew *K, const Mailbox *b, int64_t upto, int64_t who)
{
    const TailWait w = {b, upto};
    int64_t n = 0, t0 = 0;
    while (!tail_reached(K, &w)) {
        if (!t0 && n >= SPINS) {
            t0 = now_ns();
            unpark(K, who);
        }
        if (poll_then_park(&n)) park(K, 0, tail_reached, &w);
    }
    return t0 ? now_ns() - t0 : 0;
}

/* Stop the channel threads (each serves what it was sent first) */
UNUSED static void stop_crew(Crew *K, int64_t started, pthread_t *tid)
{
    STORE(K->stop, 1);
    for (int64_t i = 1; i < started; i++) unpark(K, i);
    for (int64_t i = 1; i < started; i++) pthread_join(tid[i], NULL);
}

/* The frontend gives up the channel threads and runs every channel itself from the next offer
 * on where, over a window of WINDOW offers, it spent more than SLOW_PCT % of its time waiting
 * for them: they do not get the cores they need (other processes took them, or more threads
 * than cores), and every wait is then a scheduler's time slice. The results do not change: each
 * channel takes the same offers at the same steps, whoever runs it. */
#define WINDOW 512
#define SLOW_PCT 90

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
    pthread_mutex_init(&K.mu, NULL);
    for (int64_t i = 0; i < MAX_THREADS; i++) pthread_cond_init(&K.wake[i], NULL);
    Hand hands[MAX_THREADS];
    pthread_t tid[MAX_THREADS];
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
    int64_t budget = 1, win_t0 = now_ns(), win_wait = 0;
    int solo = 0; /* the channel threads stopped: every channel on the spot */
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
        if (solo || c % threads == 0) {
            /* a channel of this thread: on the spot */
            at = ch_offer(&sims[c], RU, A, j, key, kind, fclk, &hit, CFG_ARGS);
        } else {
            Mailbox *b = &box[c];
            const int64_t q = *slot == key ? T.q[slot - T.key] : -1;
            const int sure = b->sent[kind] - __atomic_load_n(&b->gone[kind], __ATOMIC_RELAXED) <
                                 (kind == K_WR ? WQ : RQ) &&
                             (q < 0 || __atomic_load_n(&A->done[q], __ATOMIC_RELAXED) >= 0);
            if (b->head - LOAD(b->tail) >= RING) /* (the ring is full) */
                win_wait += front_wait(&K, b, b->head - RING + 1, c % threads);
            b->ring[b->head & (RING - 1)] = (Msg){j, key, kind | (sure ? 0 : M_SYNC), fclk};
            b->sent[kind]++;
            STORE(b->head, b->head + 1);
            nudge(&K, c % threads);
            if (!sure) {
                win_wait += front_wait(&K, b, b->head, c % threads);
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
        if (!solo && j % WINDOW == WINDOW - 1) {
            const int64_t t = now_ns();
            if (win_wait * 100 > (t - win_t0) * SLOW_PCT) {
                stop_crew(&K, started, tid);
                started = 1;
                solo = 1;
            }
            win_t0 = t;
            win_wait = 0;
        }
    }
out:
    stop_crew(&K, started, tid);
    for (int64_t i = 0; i < MAX_THREADS; i++) pthread_cond_destroy(&K.wake[i]);
    pthread_mutex_destroy(&K.mu);
    free(T.key);
    free(T.q);
    free(box);
    return fclk;
}

#endif
