"""nmp.shard: tiered placement of embedding rows across GPUs and memory tiers.

Per-table access statistics (:mod:`~nmp.shard.stats`) drive sharders (RecShard's MILP and the
table-wise greedy baselines, one module each under :mod:`nmp.shard.sharders`) that place every
table on a GPU and each row in that GPU's HBM or in host memory; :mod:`~nmp.shard.cost` times a
placement with the GPU model (``nmp.gpu``) for HBM rows and the link plus the DRAM engine
(``nmp.memory``) for host rows; :mod:`~nmp.shard.functional` executes it against
``torch.nn.EmbeddingBag``. Topologies are data in ``models/topology/``. Command: ``nmp shard``.
"""

from nmp.shard.topology import DEFAULT_TOPOLOGY, load_topology, topology_names


def __getattr__(name: str):
    # The sharders and their cost model load on first use: every `nmp` start-up imports
    # nmp.shard.topology to build `nmp shard`'s parser, and should not pay for them.
    if name in ("get_sharder", "sharder_names"):
        # numpy: loaded on use (start-up time)
        from nmp.shard import registry

        globals()[name] = getattr(registry, name)
        return globals()[name]
    raise AttributeError(f"module 'nmp.shard' has no attribute '{name}'")


__all__ = ["DEFAULT_TOPOLOGY", "get_sharder", "load_topology", "sharder_names", "topology_names"]
