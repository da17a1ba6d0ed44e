"""nmp.cache: embedding caches for inference (LRU, LFU, EVStore's groupScore and three layers)
in front of a real embedded key-value store.

- :mod:`nmp.cache.policy`: the replacement-policy interface and registry; one module per policy
  (:mod:`.lru`, :mod:`.lfu`, :mod:`.groupscore`, :mod:`.evstore`) registers itself.
- :mod:`nmp.cache.engine`: the numba simulator of the layers L1 (fp32) -> L2 (fp16/int8/int4)
  -> L3 (substitute keys) on a request stream.
- :mod:`nmp.cache.quant`: L2's per-row quantization and its error bound.
- :mod:`nmp.cache.neighbors`: L3's key -> nearest-neighbour map within a distance bound.
- :mod:`nmp.cache.requests`: request streams from the workload generators or an index file.
- :mod:`nmp.cache.tiers`: modeled latency of each tier (host DRAM through ``nmp.memory``, SSD).
- :mod:`nmp.cache.kvstore`: the table in SQLite or LMDB on disk (misses read from it).
- :mod:`nmp.cache.serve`: one configuration end to end (``nmp cache``).
- :mod:`nmp.cache.accuracy`: AUC change of inference served through the cache.
"""
