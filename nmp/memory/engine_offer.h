/* The DRAM engine (engine.c): the channel steps that the run's frontend makes, on one thread
 * (engine.c) and on several (engine_threads.h). Declared here, defined in engine.c, so that
 * engine_threads.h needs nothing of the file that includes it (no file cycle; tests/
 * test_layers.py checks the C files too). */
#ifndef NMP_ENGINE_OFFER_H
#define NMP_ENGINE_OFFER_H

#include "engine_channel.h"

/* The cycle of channel S's next evaluation. */
FORCE_INLINE int64_t ch_next(Sim *restrict S, CFG);

/* Channel S through its evaluations up to cycle t. */
FORCE_INLINE void ch_advance(Sim *restrict S, const Rules *restrict RU, int64_t t, CFG);

/* Offer request j (transaction number key, buffer kind) to channel S at frontend step fclk:
 * the step it was accepted at (*hit_out: served by the write buffer), or -1 (a deadlock). */
FORCE_INLINE int64_t ch_offer(Sim *restrict S, const Rules *restrict RU, const Args *restrict A,
                              int64_t j, int64_t key, int64_t kind, int64_t fclk, int *hit_out,
                              CFG);

#endif
