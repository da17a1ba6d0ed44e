"""One sharding experiment: profile a workload, place it with a sharder, cost the placement.

Which batches the placement is timed on is the **profile policy** (:data:`PROFILE_POLICIES`):

* ``"held-out"`` (the kit's default): batches the profile did not see, so a placement is judged
  on data it was not fitted to, as in training after an offline profile of a sample;
* ``"served"``: the profiled batches themselves, RecShard's setting (its statistics come from
  the training data it then shards and trains on).

Shared work (profiles, evaluation batches, cost coefficients) is cached per process so that a
study or several claims reuse it.
"""

from __future__ import annotations

import functools
from dataclasses import replace
from typing import Any

from nmp.errors import NmpError
from nmp.shard.bound import placement_lower_bound
from nmp.shard.cost import coefficients, evaluate
from nmp.shard.registry import ShardProblem, get_sharder
from nmp.shard.stats import WorkloadStats, profile_index_file, profile_workload
from nmp.shard.topology import DEFAULT_TOPOLOGY, TopologySpec, load_topology
from nmp.workload import generate_batch, load_index_file, load_workload
from nmp.workload.indexfile import index_file_estimate

PROFILE_BATCHES = 8  # chosen: 16K samples of Criteo Terabyte at batch 2048
EVAL_BATCHES = 2  # chosen: held-out batches the placement is timed on
EVAL_SEED_OFFSET = 1_000_003  # evaluation seeds start here, apart from the profile's
MILP_TIME_LIMIT_S = 60.0
# What the placement is timed on (see the module docstring).
HELD_OUT = "held-out"  # the profile policy that times batches the profile did not see
PROFILE_POLICIES = (HELD_OUT, "served")


def _frozen(overrides: dict[str, Any] | None) -> tuple:
    """Overrides as a hashable cache key (lists become tuples)."""
    return tuple(
        sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in (overrides or {}).items())
    )


def workload_of(name: str, overrides: dict[str, Any] | None):
    return load_workload(name, dict(overrides or {}))  # load_workload caches specs itself


@functools.cache
def _profile(name: str, okey: str, items: tuple, batches: int, seed: int, index_file: str):
    spec = workload_of(name, dict(items))
    if index_file:
        return profile_index_file(spec, index_file)
    return profile_workload(spec, batches, seed)


@functools.cache
def _eval_batches(
    name: str, okey: str, items: tuple, batches: int, seed: int, held_out: bool = True,
    index_file: str = "",
):  # fmt: skip
    """Held out: generated batches the profile did not see; else the profile's first batches
    (the index file's batch where the profile is one)."""
    spec = workload_of(name, dict(items))
    if index_file and not held_out:
        return [load_index_file(index_file, spec)]
    first = seed + (EVAL_SEED_OFFSET if held_out else 0)
    return [generate_batch(spec, seed=first + i) for i in range(batches)]


def shard_problem(
    workload: str,
    overrides: dict[str, Any] | None,
    topo: TopologySpec,
    profile_batches: int = PROFILE_BATCHES,
    seed: int = 0,
    index_file: str = "",
    time_limit_s: float = MILP_TIME_LIMIT_S,
    unseen: str = "zero",
) -> ShardProblem:
    """What a sharder sees: the workload's profile (cached per process) and the linearized
    costs of its tables on ``topo``."""
    items = _frozen(overrides)
    spec = workload_of(workload, overrides)
    stats = _profile(workload, repr(items), items, profile_batches, seed, index_file)
    elem = [t.element.bytes for t in spec.tables]
    coef = coefficients(topo, [t.dim for t in spec.tables], elem, spec.batch)
    return ShardProblem(
        stats, topo.gpus, topo.hbm_bytes_per_gpu, topo.host_bytes, tuple(coef), time_limit_s,
        unseen,
    )  # fmt: skip


@functools.cache
def _placement(
    workload, okey, items, topology, tkey, titems, sharder, profile_batches, seed, index_file,
    time_limit_s, unseen,
):  # fmt: skip
    """The sharder's placement (cached: evaluation switches such as ``overlap`` reuse it)."""
    topo = load_topology(topology, dict(titems))
    problem = shard_problem(
        workload, dict(items), topo, profile_batches, seed, index_file, time_limit_s, unseen
    )
    return get_sharder(sharder).place(problem)


def _check_memory(
    spec, topo, sharder: str, profile_batches, eval_batches, max_memory, topology_file=None
) -> None:
    """Refuse before profiling a run that cannot fit the memory limit (:mod:`nmp.guard`);
    ``topology_file``: the file whose ``gpus`` set the count (none: a preset or --set did)."""
    import nmp.guard as guard

    per_batch = spec.lookups_per_batch
    key = "--profile-batches" if profile_batches >= eval_batches else "--eval-batches"
    if spec.batch * 2 > max(profile_batches, eval_batches):
        # the workload's lookups per batch: its batch or its pooling, whichever is the larger
        pooling = per_batch / max(spec.batch * len(spec.tables), 1)
        key = "workload.pooling" if pooling > spec.batch else "workload.batch"
    per_gpu_table = getattr(get_sharder(sharder), "memory_per_gpu_table_bytes", 0)
    estimate = guard.shard_estimate(
        (profile_batches + eval_batches) * per_batch,
        topo.gpus,
        len(spec.tables),
        per_gpu_table,
        key,
    )
    if estimate.key == "topology.gpus" and topology_file:
        estimate = replace(estimate, key="gpus", file=topology_file)
    guard.check(estimate, max_memory)


def run_shard(
    *,
    workload: str,
    sharder: str,
    topology: str = DEFAULT_TOPOLOGY,
    workload_overrides: dict[str, Any] | None = None,
    topology_overrides: dict[str, Any] | None = None,
    profile_batches: int = PROFILE_BATCHES,
    eval_batches: int = EVAL_BATCHES,
    seed: int = 0,
    index_file: str = "",
    overlap: bool = False,
    time_limit_s: float = MILP_TIME_LIMIT_S,
    profile_policy: str = HELD_OUT,
    unseen: str = "zero",
    max_memory: str | None = None,
) -> dict[str, Any]:
    """Place ``workload`` with ``sharder`` on ``topology`` and return the result row.

    ``profile_policy="served"`` times the placement on batches of its own profile (the setting
    of a sharder that profiles the very training data it shards), ``"held-out"`` on other
    batches."""
    if profile_policy not in PROFILE_POLICIES:
        raise NmpError(
            f"profile policy must be one of {', '.join(PROFILE_POLICIES)}, got '{profile_policy}'"
        )
    held_out = profile_policy == HELD_OUT
    if eval_batches < 1:
        raise NmpError(f"eval batches must be >= 1, got {eval_batches}")
    if not time_limit_s > 0:
        raise NmpError(f"--time-limit (the MILP's) must be > 0 s, got {time_limit_s}")
    if not held_out and eval_batches > (1 if index_file else profile_batches):
        raise NmpError(
            f"profile policy 'served' times the profiled batches: eval batches ({eval_batches}) "
            f"must be at most the profile's ({1 if index_file else profile_batches})"
        )
    titems = _frozen(topology_overrides)
    topo = load_topology(topology, dict(titems))
    items = _frozen(workload_overrides)
    okey = repr(items)  # with items in the cache keys: 1, 1.0 and True hash alike, not so repr
    spec = workload_of(workload, workload_overrides)
    _check_memory(
        spec, topo, sharder, 0 if index_file else profile_batches, eval_batches, max_memory,
        topology_file=topology if topology.endswith(".toml") and "gpus" not in dict(titems)
        else None,
    )  # fmt: skip
    if index_file:  # bounded as it is read, by the sizes it declares
        import nmp.guard as guard

        guard.check(index_file_estimate(index_file), max_memory)
    stats: WorkloadStats = _profile(workload, okey, items, profile_batches, seed, index_file)
    placement = _placement(
        workload, okey, items, topology, repr(titems), titems, sharder,
        profile_batches, seed, index_file, time_limit_s, unseen,
    )  # fmt: skip
    elem = [t.element.bytes for t in spec.tables]
    batches = _eval_batches(workload, okey, items, eval_batches, seed, held_out, index_file)
    cost = evaluate(placement, topo, batches, elem, overlap=overlap)
    per_gpu = [
        {
            "gpu": g,
            "tables": placement.tables_of(g),
            "hbm_bytes": int(cost.hbm_bytes[g]),
            "t_ms": cost.gpu_ns[g] / 1e6,
            "hbm_ms": cost.hbm_ns[g] / 1e6,
            "slow_ms": cost.slow_ns[g] / 1e6,
            "lookups_per_batch": float(cost.lookups[g]),
            "slow_accesses_per_batch": float(cost.slow_lookups[g]),
        }
        for g in range(topo.gpus)
    ]
    lookups = float(cost.lookups.sum())
    return {
        "sharder": sharder,
        "workload": spec.name,
        "topology": topo.name,
        "gpu": topo.gpu,
        "gpus": topo.gpus,
        "hbm_gib_per_gpu": topo.hbm_gib,
        "tables_gib": spec.bytes_ / 2**30,
        "step_ms": cost.step_ns / 1e6,
        "load_balance": cost.load_balance,
        "slow_accesses_per_batch": cost.slow_accesses_per_batch,
        "slow_access_fraction": cost.slow_accesses_per_batch / lookups if lookups else 0.0,
        "hbm_bytes": int(cost.hbm_bytes.sum()),
        "solve_s": placement.solve_s,
        "host_gbps": cost.host_gbps,
        "overlap": overlap,
        "profile": stats.describe(),
        "eval_batches": eval_batches,
        "held_out": held_out,
        "profile_policy": profile_policy,
        "unseen": unseen,
        "solver": placement.info,  # the MILP's size and gap; empty for the greedy sharders
        "per_gpu": per_gpu,
    }


def step_lower_bound(
    *,
    workload: str,
    topology: str = DEFAULT_TOPOLOGY,
    workload_overrides: dict[str, Any] | None = None,
    topology_overrides: dict[str, Any] | None = None,
    eval_batches: int = EVAL_BATCHES,
    seed: int = 0,
    profile_policy: str = HELD_OUT,
) -> dict[str, float]:
    """:func:`nmp.shard.bound.placement_lower_bound` on the batches :func:`run_shard` times (the
    same profile policy): no sharder's step can be shorter under the model."""
    topo = load_topology(topology, dict(_frozen(topology_overrides)))
    items = _frozen(workload_overrides)
    spec = workload_of(workload, workload_overrides)
    held_out = profile_policy == HELD_OUT
    batches = _eval_batches(workload, repr(items), items, eval_batches, seed, held_out)
    return placement_lower_bound(topo, batches, [t.element.bytes for t in spec.tables])
