"""The comparison at the papers' scale: closed-form expectation and Monte-Carlo over failures.

A setup (``workloads/train/<name>.toml``, loaded by :mod:`nmp.train.setup`) gives the table
size, servers, workers, storage bandwidth, checkpoint interval rule, MTBF and restart time. The
per-step costs come from the hardware models (:func:`step_costs`): the architecture's
gather-reduce on a generated batch of the workload (split evenly over the servers), its update
of the touched rows with and without parity (``parity_update``: the delta's trip to the parity
node and the read-modify-write there), the dense compute at ``host_flops`` per worker.

Per strategy (system MTBF ``M = server MTBF / servers``; full checkpoint time ``δ = bytes /
(servers × storage bandwidth)``; a failure at time t since the last save):

- ``checkpoint``: saves every τ (fixed minutes, or Young/Daly); a failure costs the work since
  the last save (re-executed), the load of every shard and the restart;
- ``cpr-*``: saves every τ = 2 · PLS · servers · M (CPR's bound on the portion of lost samples),
  every ``cpr_full_every``-th one full, the others the rows the strategy's policy picks
  (:mod:`nmp.train.partial_save`: MFU the ``cpr_fraction`` most used, SSU those a
  ``cpr_ssu_sample`` of the inputs touched), which sets the save's cost and the updates a
  failure loses (``pls_effective``); a failure costs the failed shard's load and the restart;
  no re-execution;
- ``ecrec``: every step pays the parity's extra update work (memory, and with ``network_gbps``
  the deltas sent to the parity servers); a failure costs the rebuild's traffic (the survivors'
  reads and the replacement's writes, or the records pulled over the replacement's NIC,
  whichever is longer); training never pauses. A second failure during the rebuild (r = 1)
  loses data: its probability is reported;
- ``none``: a failure re-initializes the shard (its learned rows are lost).

:func:`monte_carlo` draws failure counts (Poisson) and times (uniform over the horizon) with a
seed and reports each strategy's overhead with a 95 % confidence interval; :func:`expected`
gives the closed-form mean the draws converge to (the crossover sweep uses it).

The deployment and its limits (:mod:`nmp.train.deployment`) and a step's costs
(:mod:`nmp.train.step_costs`) live in modules of their own and are re-exported here; the table,
the setup's sentence and the closing note that ``nmp train --extrapolate`` prints are
:mod:`nmp.train.extrapolate_report`'s.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, cast

import numpy as np

from nmp.errors import NmpError
from nmp.train.deployment import MAX_DIM as MAX_DIM
from nmp.train.deployment import MAX_FULL_EVERY as MAX_FULL_EVERY
from nmp.train.deployment import MAX_NODES as MAX_NODES
from nmp.train.deployment import MIN_SERVER_MTBF_HOURS as MIN_SERVER_MTBF_HOURS
from nmp.train.deployment import DeploymentSpec
from nmp.train.deployment import record_bytes as record_bytes
from nmp.train.intervals import INTERVAL_RULES
from nmp.train.partial_save import at_scale, workload_rates
from nmp.train.schedule import COMMON, phase_costs_ns
from nmp.train.step_costs import StepCosts, step_costs, traffic_profile
from nmp.train.step_costs import _mlp_weights as _mlp_weights
from nmp.train.step_costs import _step_costs as _step_costs
from nmp.train.step_costs import _StoreShape as _StoreShape

HOUR_NS = 3600e9


@dataclass(frozen=True)
class _Model:
    """Every strategy's costs as (per unit time, per failure) pieces, in ns."""

    m_ns: float
    horizon_ns: float
    delta_ns: float
    load_ns: float
    restart_ns: float
    shard_load_ns: float
    ckpt_taus_ns: tuple[float, ...]
    cpr_tau_ns: float
    phase_ns: dict[str, float]  # every phase's time at scale (nmp.train.schedule)
    step_ns: float  # the step the fractions are taken of
    rebuild_traffic_ns: float
    rebuild_ns: float
    reinit_ns: float
    data_bytes: float
    base_mem: float
    c: StepCosts


def _model(dep: DeploymentSpec, units: dict[str, int] | None = None) -> _Model:
    """The pieces of every strategy's cost; ``units`` (lookups, pooled_vectors, worker_rows,
    rows_touched, rows_total) replace the generated batch's where a run's own step is known."""
    dep.validate(given=False)  # (a derived deployment may model a shorter MTBF)
    c = step_costs(dep)
    if units:
        c = replace(c, **cast(dict[str, Any], units))
    data_bytes = float(c.rows_total) * c.record_bytes
    if dep.server_memory_gb:  # (validate checked the workload's rows; a run's own may differ)
        per_server = data_bytes * (dep.k + dep.r) / dep.k / dep.servers / 1e9
        if per_server > dep.server_memory_gb:
            raise NmpError(
                f"setup {dep.name}: {per_server:.0f} GB of records and parity per server do "
                f"not fit in server_memory_gb = {dep.server_memory_gb:g}"
            )
    m_ns = dep.server_mtbf_hours * HOUR_NS / dep.servers
    bw = dep.servers * dep.storage_gbps  # bytes per ns, all servers writing in parallel
    delta_ns = data_bytes / bw
    taus = INTERVAL_RULES.get(dep.interval).intervals_ns(delta_ns, m_ns, dep.interval_min)
    shard_rows = c.rows_total / dep.servers
    # Rebuild: every lost position reads k survivors and writes one record, on the survivors'
    # and the replacement's memory; positions include the parity (shard_rows * (k + r) / k).
    positions = shard_rows * (dep.k + dep.r) / dep.k
    traffic = positions * (dep.k * c.read_ns_per_record + c.write_ns_per_record)
    # Batches a server serves per step: one (the step's batch, split over the workers), or
    # one per worker (every worker trains its own batch: XDL's workers in ECRec's artifact).
    nb = dep.workers if dep.batch_per_worker else 1
    dense_ns = c.step_ns - c.gather_ns - c.upd_plain_ns  # per worker, its share of the batch
    if dep.batch_per_worker:
        dense_ns *= dep.workers  # each worker computes its whole batch
    compute = {
        "gather": nb * c.gather_ns,
        "dense": dense_ns,
        "optimizer": nb * c.upd_plain_ns,
        "parity_xor": nb * (c.upd_coded_ns - c.upd_plain_ns),  # the parity's in-memory update
    }
    step_bytes: dict[str, float] = {}
    if dep.network_gbps:
        # The step's bytes by kind (nmp.train.traffic): lookups in, sparse partial sums out,
        # row gradients in; the coded update's delta per touched row and parity; a rebuild
        # receives k survivors' shards per lost position.
        tp = traffic_profile(dep, c)
        grad_rows = c.rows_touched if dep.batch_per_worker else c.worker_rows
        step_bytes = {
            "lookup": nb * c.lookups * tp.lookup,
            "pooled": nb * c.pooled_vectors * tp.pooled,
            "row_grad": nb * grad_rows * tp.row_grad,
            "parity_delta": nb * c.rows_touched * dep.r * tp.parity_delta,
        }
        traffic = max(traffic, positions * tp.repair / dep.network_gbps)
    phase_ns = phase_costs_ns(
        step_bytes=step_bytes,
        server_gbps=dep.network_gbps,
        worker_gbps=dep.worker_network_gbps,
        servers=dep.servers,
        workers=dep.workers,
        message_ns=dep.message_us * 1e3 if dep.network_gbps else 0.0,
        compute_ns=compute,
    )
    # the plain step's critical path (every strategy's schedule extends the common one)
    step = dep.step_ms * 1e6 or COMMON.critical_path_ns(phase_ns)
    return _Model(
        m_ns=m_ns,
        horizon_ns=dep.horizon_hours * HOUR_NS,
        delta_ns=delta_ns,
        load_ns=delta_ns,
        restart_ns=dep.restart_s * 1e9,
        shard_load_ns=data_bytes / dep.servers / dep.storage_gbps,
        ckpt_taus_ns=taus,
        cpr_tau_ns=2.0 * dep.cpr_pls * dep.servers * m_ns,
        phase_ns=phase_ns,
        step_ns=step,
        rebuild_traffic_ns=traffic,
        rebuild_ns=traffic / dep.rebuild_share,
        reinit_ns=shard_rows * c.write_ns_per_record,
        data_bytes=data_bytes,
        base_mem=data_bytes + c.dense_bytes,
        c=c,
    )


def recovery_parts_s(dep: DeploymentSpec) -> dict[str, float]:
    """A failure's recovery pieces in seconds: loading every shard of a checkpoint, the
    restart, and ECRec's rebuild of the lost shard (the model's terms, for a claim's detail)."""
    md = _model(dep)
    return {
        "load_s": md.load_ns / 1e9,
        "restart_s": md.restart_ns / 1e9,
        "rebuild_s": md.rebuild_ns / 1e9,
    }


def _partial_save(md: _Model, dep: DeploymentSpec, cls) -> tuple[float, Any]:
    """(mean write time of one CPR save, full and partial mixed; the policy's PartialSave)."""
    rates = workload_rates(dep.workload, dep.table_rows, dep.batch)
    steps = md.cpr_tau_ns / md.step_ns
    f = dep.cpr_full_every
    ps = at_scale(cls.partial_rows, rates, steps, f, dep.cpr_fraction, dep.cpr_ssu_sample)
    # a partial save writes its rows' records and their int64 ids
    partial_ns = md.delta_ns * ps.rows_per_partial * (md.c.record_bytes + 8) / md.data_bytes
    return (md.delta_ns + (f - 1) * partial_ns) / f, ps


def _ckpt_name(name: str, dep: DeploymentSpec, i: int) -> str:
    return INTERVAL_RULES.get(dep.interval).label(name, dep.interval_min, i)


def row_labels(name: str, dep: DeploymentSpec) -> frozenset[str]:
    """The ``strategy`` labels of strategy ``name``'s rows at scale: its name, or one label per
    checkpoint interval (``checkpoint-30min``). A stage picks a strategy's rows by these, never by
    a prefix of its name, which would take another strategy's rows (``checkpoint-lite``)."""
    rule = INTERVAL_RULES.get(dep.interval)
    return frozenset(
        {name, *(rule.label(name, dep.interval_min, i) for i in range(len(dep.interval_min)))}
    )


def _strategies() -> list[tuple[str, Any]]:
    """The registered protections (each prices itself at scale: ``scale_expected``,
    ``scale_scheduled``, ``scale_draws``)."""
    from nmp.train.strategies import REGISTRY

    return [(name, cls) for name, cls in REGISTRY.items() if not cls.is_baseline]


def steady_fraction(md: _Model, cls) -> float:
    """A strategy's failure-free time per unit of training: its schedule's critical path beyond
    the common step's (the phases it adds in series; background phases cost nothing)."""
    extra = cls.schedule.critical_path_ns(md.phase_ns) - COMMON.critical_path_ns(md.phase_ns)
    return extra / md.step_ns


def expected(dep: DeploymentSpec) -> list[dict[str, Any]]:
    """Closed-form expected overhead per strategy (failures at rate 1/M, a failure a uniform
    time after the last save)."""
    md = _model(dep)
    return [row for _, cls in _strategies() for row in cls.scale_expected(md, dep)]


def scheduled(
    dep: DeploymentSpec,
    steps: int,
    failure_steps: list[int],
    units: dict[str, int] | None = None,
    regroup_s: float = 0.0,
) -> list[dict[str, Any]]:
    """Overhead per strategy of one run of ``steps`` steps with a failure before each of
    ``failure_steps``: the closed form's pieces on that schedule (no draws), the restart where
    the closed form charges it (the rolling-back strategies). The checkpoint rows use the
    first interval; a failure at step f re-executes f mod the interval. ``regroup_s``: a
    runtime's regroup on every failure, which every strategy stands still for (the kit's
    processes re-form their group whatever the strategy, ``nmp train --procs``; 0, as the
    papers' models, where no such runtime is modeled)."""
    md = _model(dep, units)
    horizon = steps * md.step_ns
    regroup_ns = regroup_s * 1e9 * len(failure_steps)
    rows = [
        row
        for _, cls in _strategies()
        for row in cls.scale_scheduled(md, dep, horizon, failure_steps)
    ]
    for row in rows:
        row["overhead_pct"] += 100.0 * regroup_ns / horizon
        if failure_steps:
            row["recovery_s"] += regroup_s
    return rows


def _row(name: str, steady: float, failures: float, recovery_ns: float) -> dict[str, Any]:
    return {
        "strategy": name,
        "overhead_pct": 100.0 * (steady + failures),
        "overhead_no_failure_pct": 100.0 * steady,
        "recovery_s": recovery_ns / 1e9,
    }


@dataclass(frozen=True)
class Draws:
    """The Monte-Carlo's failures (sorted by trial, then time) for the strategies' pricing."""

    t: np.ndarray  # ns into the horizon
    trial: np.ndarray
    node: np.ndarray
    per_trial: Any  # per-failure ns -> per-trial sums
    replica: float  # the MLP replica's memory, a fraction of the protected bytes
    trials: int


def monte_carlo(dep: DeploymentSpec, trials: int | None = None) -> list[dict[str, Any]]:
    """Overheads over ``trials`` seeded draws of the failures in ``horizon_hours``, with 95 %
    confidence intervals of the mean, next to the closed-form expectation."""
    md = _model(dep)
    trials = trials or dep.trials
    rng = np.random.default_rng([dep.seed, 0x3C])
    h = md.horizon_ns
    counts = rng.poisson(h / md.m_ns, trials)
    trial = np.repeat(np.arange(trials), counts)
    t = rng.uniform(0.0, h, trial.size)
    node = rng.integers(0, dep.servers, trial.size)
    order = np.lexsort((t, trial))
    trial, t, node = trial[order], t[order], node[order]
    exp = {r["strategy"]: r for r in expected(dep)}

    def per_trial(per_failure: np.ndarray) -> np.ndarray:
        return np.bincount(trial, weights=per_failure, minlength=trials)

    out: list[dict[str, Any]] = []

    def add(name, steady, extra, recovery, redundancy, memory, **kw):
        frac = steady + extra / h
        mean, half = float(frac.mean()), 1.96 * float(frac.std(ddof=1)) / np.sqrt(trials)
        row = {
            "strategy": name,
            "overhead_pct": 100.0 * mean,
            "overhead_ci95_pct": 100.0 * half,
            "overhead_expected_pct": exp[name]["overhead_pct"],
            "overhead_no_failure_pct": 100.0 * steady,
            "recovery_s": None if recovery is None else recovery / 1e9,
            "time_to_full_redundancy_s": None if redundancy is None else redundancy / 1e9,
            "memory_overhead_pct": 100.0 * memory,
        }
        row.update(kw)
        out.append(row)

    draws = Draws(t, trial, node, per_trial, md.c.dense_bytes / md.base_mem, trials)
    for _, cls in _strategies():
        for name, steady, extra, recovery, redundancy, memory, kw in cls.scale_draws(
            md, dep, draws
        ):
            add(name, steady, extra, recovery, redundancy, memory, **kw)
    c = md.c
    for r in out:
        r.update(
            setup=dep.name,
            trials=trials,
            failures_mean=float(counts.mean()),
            step_ms=md.step_ns / 1e6,
            step_source="setup"
            if dep.step_ms
            else ("modeled, with network" if dep.network_gbps else "modeled"),
            checkpoint_write_s=md.delta_ns / 1e9,
            system_mtbf_h=md.m_ns / HOUR_NS,
            table_bytes=md.data_bytes,
            update_plain_ns=c.upd_plain_ns,
            update_coded_ns=c.upd_coded_ns,
            cost_backend=c.backend,
        )
    return out
