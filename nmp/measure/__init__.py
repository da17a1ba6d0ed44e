"""Measuring the machine the kit runs on (``nmp measure host``): its cores and caches, load
latency per working-set size, misses in flight and read bandwidth per thread count, written as
a host preset; and real embedding lookups on it, set beside the model configured from that
preset (docs/host-model.md)."""
