/* nmp measure host: the memory microbenchmarks, compiled and run as a program.
 *
 *   probe <bytes> <chains,...> <threads> <steps> <seed> <row_bytes> <huge>
 *
 * builds one random cyclic permutation of the <row_bytes> rows (whole 64-B lines) of a <bytes>
 * buffer (Sattolo's
 * algorithm: a single cycle, so a chase visits every line before it repeats; the next line is
 * unpredictable, so no prefetcher helps) and runs <threads> threads, each following <chains>
 * independent chases through it for <steps> rows per chain (a row's first line holds the next
 * row's address; a step also reads one word of each of the row's other lines, as a lookup reads
 * the whole row). Each row depends on the one before it in its chain: one chain measures the load latency; several chains in one thread
 * keep that many misses in flight (up to what the core allows: its memory-level parallelism);
 * several threads measure the bandwidth the cores reach together.
 *
 * <huge> 1: the buffer asks for 2-MiB pages (madvise MADV_HUGEPAGE), so that a load's address
 * translation hits the TLB and the chase measures the caches and DRAM alone; 0: the pages
 * malloc gives, as an embedding table gets them (the difference is the page walks' cost).
 * <chains> 0: no chase; each thread instead reads its slice of the buffer sequentially <steps>
 * times (the read bandwidth with the prefetchers at work); "rows" are then 64-B lines.
 *
 * <chains,...>: a comma list; the buffer is built once and each count run in turn (<steps>
 * divided by the count, so every run reads as many rows). Prints one line per count:
 * "<ns per row per chain> <rows per ns, all threads>". The buffer comes from
 * malloc, as an embedding table does (the same page size the lookups see). Times are each
 * thread's CPU time (its slowest), so that other programs sharing the cores do not count.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define LINE 64
#define MAX_CHAINS 64

typedef struct line {
    struct line *next;
    char pad[LINE - sizeof(struct line *)];
} line_t;

static long row_lines = 1; /* lines per node: a step reads all of them (an embedding row) */

typedef struct {
    line_t *start[MAX_CHAINS];
    const uint64_t *slice; /* stream mode: this thread's part of the buffer */
    size_t slice_words;
    int chains;
    long steps;
    pthread_barrier_t *barrier;
    double seconds;
    uintptr_t sink;
} job_t;

static uint64_t rng_state;

static uint64_t next_random(void) {
    /* splitmix64: seeded, the same permutation for the same seed */
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* the thread's own CPU time: on a shared machine the wall clock also counts the time other
 * programs held the core */
static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* up to 16 chains advanced in lock step: their loads are independent, so they overlap */
#define CHASE(N)                                                  \
    static uintptr_t chase##N(line_t **p, long steps) {           \
        line_t *q[N];                                             \
        for (int c = 0; c < N; c++) q[c] = p[c];                  \
        uintptr_t acc = 0;                                        \
        for (long s = 0; s < steps; s++)                          \
            for (int c = 0; c < N; c++) {                         \
                for (long k = 1; k < row_lines; k++)              \
                    acc += (uintptr_t)q[c][k].next;               \
                q[c] = q[c]->next;                                \
            }                                                     \
        for (int c = 0; c < N; c++) acc += (uintptr_t)q[c];       \
        return acc;                                               \
    }
CHASE(1)
CHASE(2)
CHASE(4)
CHASE(8)
CHASE(16)
CHASE(32)
CHASE(64)

static uintptr_t stream(const uint64_t *w, size_t n, long passes) {
    uint64_t acc[8] = {0};
    for (long p = 0; p < passes; p++)
        for (size_t i = 0; i + 8 <= n; i += 8)
            for (int k = 0; k < 8; k++) acc[k] += w[i + k];
    return (uintptr_t)(acc[0] + acc[1] + acc[2] + acc[3] + acc[4] + acc[5] + acc[6] + acc[7]);
}

static void *run(void *arg) {
    job_t *job = (job_t *)arg;
    pthread_barrier_wait(job->barrier);
    double t0 = now_s();
    switch (job->chains) {
    case 0: job->sink = stream(job->slice, job->slice_words, job->steps); break;
    case 1: job->sink = chase1(job->start, job->steps); break;
    case 2: job->sink = chase2(job->start, job->steps); break;
    case 4: job->sink = chase4(job->start, job->steps); break;
    case 8: job->sink = chase8(job->start, job->steps); break;
    case 16: job->sink = chase16(job->start, job->steps); break;
    case 32: job->sink = chase32(job->start, job->steps); break;
    default: job->sink = chase64(job->start, job->steps); break;
    }
    job->seconds = now_s() - t0;
    return NULL;
}

static int chain_count_ok(int c) {
    return c == 0 || c == 1 || c == 2 || c == 4 || c == 8 || c == 16 || c == 32 || c == 64;
}

int main(int argc, char **argv) {
    if (argc != 8) {
        fprintf(stderr, "usage: probe <bytes> <chains,...> <threads> <steps> <seed> <row_bytes> <huge>\n");
        return 2;
    }
    size_t bytes = strtoull(argv[1], NULL, 10);
    int counts[16], ncounts = 0;
    for (char *tok = strtok(argv[2], ","); tok && ncounts < 16; tok = strtok(NULL, ","))
        counts[ncounts++] = atoi(tok);
    int threads = atoi(argv[3]);
    long steps = atol(argv[4]);
    rng_state = strtoull(argv[5], NULL, 10);
    long row_bytes = atol(argv[6]);
    int huge = atoi(argv[7]);
    row_lines = row_bytes > LINE ? (row_bytes + LINE - 1) / LINE : 1;
    size_t n = bytes / (LINE * (size_t)row_lines); /* rows */
    int ok = ncounts > 0;
    for (int i = 0; i < ncounts; i++) ok = ok && chain_count_ok(counts[i]);
    if (n < 2 || !ok || threads < 1 || threads > 1024 || steps < 1) {
        fprintf(stderr, "probe: bad arguments (bytes >= 2 rows, chains powers of 2 up to 64)\n");
        return 2;
    }
    size_t buf_bytes = n * (size_t)row_lines * sizeof(line_t);
    line_t *buf;
    if (huge) {
        size_t page = (size_t)1 << 21;
        buf = aligned_alloc(page, (buf_bytes + page - 1) / page * page);
        if (buf) madvise(buf, buf_bytes, MADV_HUGEPAGE);
    } else {
        buf = malloc(buf_bytes);
    }
    size_t *order = malloc(n * sizeof(size_t));
    if (!buf || !order) {
        fprintf(stderr, "probe: out of memory for %zu bytes\n", bytes);
        return 1;
    }
    for (size_t i = 0; i < n; i++) order[i] = i;
    for (size_t i = n - 1; i > 0; i--) { /* Sattolo: one cycle through all rows */
        size_t j = (size_t)(next_random() % i);
        size_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (size_t i = 0; i < n; i++)
        buf[order[i] * row_lines].next = &buf[order[(i + 1) % n] * row_lines];
    /* warm: one pass over the buffer (its pages mapped, caches holding what fits) */
    line_t *p = &buf[order[0] * row_lines];
    for (size_t i = 0; i < n; i++) p = p->next;
    uintptr_t sink = (uintptr_t)p;
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, (unsigned)threads);
    job_t *jobs = calloc((size_t)threads, sizeof(job_t));
    pthread_t *tid = calloc((size_t)threads, sizeof(pthread_t));
    size_t words = buf_bytes / sizeof(uint64_t), per = words / (size_t)threads;
    for (int i = 0; i < ncounts; i++) {
        int chains = counts[i];
        long my_steps = chains ? (steps / chains > 0 ? steps / chains : 1) : steps;
        size_t spread = n / ((size_t)(chains ? chains : 1) * (size_t)threads) + 1;
        for (int t = 0; t < threads; t++) {
            jobs[t].chains = chains;
            jobs[t].steps = my_steps;
            jobs[t].barrier = &barrier;
            jobs[t].slice = (const uint64_t *)buf + (size_t)t * per;
            jobs[t].slice_words = per;
            for (int c = 0; c < chains; c++) /* chains start apart on the cycle */
                jobs[t].start[c] = &buf[order[((size_t)(t * chains + c) * spread) % n] * row_lines];
        }
        for (int t = 1; t < threads; t++) pthread_create(&tid[t], NULL, run, &jobs[t]);
        run(&jobs[0]);
        for (int t = 1; t < threads; t++) pthread_join(tid[t], NULL);
        double slowest = 0.0;
        for (int t = 0; t < threads; t++) {
            if (jobs[t].seconds > slowest) slowest = jobs[t].seconds;
            sink += jobs[t].sink;
        }
        double loads = chains ? (double)threads * chains * (double)my_steps
                              : (double)my_steps * (double)(per / 8) * (double)threads;
        printf("%.4f %.6f %lu\n", slowest * 1e9 / (double)my_steps, loads / (slowest * 1e9),
               (unsigned long)(sink & 1));
    }
    free(buf);
    free(order);
    free(jobs);
    free(tid);
    return 0;
}
