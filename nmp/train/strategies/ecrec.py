"""``ecrec``: erasure-coded store; training never pauses (see the package docstring)."""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from nmp.train.failures import Failure
from nmp.train.schedule import COMMON, Phase, RunPhase, Schedule
from nmp.train.strategies.base import Strategy, register

# ECRec's step: the common one plus the parity's two phases. The artifact (Thesys-lab/ECRec,
# xdl/ps-plus/ps-plus/client/client.cc: Client::SparsePushWithParity) sends the parity's update
# inside the gradients' SparsePush, which completes once every server, parity ones included,
# applied it: the parity update is on the push's critical path, not behind it. Here the data's
# server sends ``old XOR new`` to the parity's server before the vote (the commit waits for it)
# and the parity's memory XORs it in place after the commit, before the next step's gather.
SCHEDULE = Schedule(
    COMMON.with_phases(
        Phase(
            "parity_delta", "server", "send", "parity_delta", "server", ("optimizer",),
            what="old XOR new to the parity's server",
        ),
    ).step
    + (
        Phase(
            "parity_xor", "server", "compute", after=("vote",),
            what="parity ^= delta in the parity server's memory",
        ),
    ),
    recovery=(
        "regroup; the replacement repairs the rows each step touches and one range of its lost "
        "positions per step from the survivors (XOR of the stripe), training never pauses",
    ),
    run=(
        *COMMON.run,
        RunPhase(
            "repair", "per_step",
            "the replacement's repair rounds inside the steps until it holds its shard",
        ),
    ),
    basis=(
        "serial: the parity's delta on the gradient push's critical path, as the artifact runs "
        "it (Thesys-lab/ECRec client.cc Client::SparsePushWithParity) and as --procs runs it"
    ),
)  # fmt: skip


@register
class ECRec(Strategy):
    """Erasure-coded store, degraded reads and a background rebuild; training never pauses."""

    name = "ecrec"
    uses_parity = True
    is_baseline = False
    listing_order = 0
    schedule = SCHEDULE

    @classmethod
    def scale_expected(cls, md, dep) -> list[dict[str, Any]]:
        from nmp.train.extrapolate import _row, steady_fraction

        return [_row(cls.name, steady_fraction(md, cls), md.rebuild_traffic_ns / md.m_ns, 0.0)]

    @classmethod
    def scale_scheduled(cls, md, dep, horizon_ns: float, failure_steps) -> list[dict[str, Any]]:
        from nmp.train.extrapolate import _row, steady_fraction

        # one run's failures: the rebuild's traffic; no restart (training goes on, repairing:
        # as in scale_expected and scale_draws; a runtime's regroup is scheduled()'s)
        rebuilds = md.rebuild_traffic_ns * len(failure_steps)
        return [_row(cls.name, steady_fraction(md, cls), rebuilds / horizon_ns, 0.0)]

    @classmethod
    def scale_draws(cls, md, dep, draws) -> list[tuple]:
        from nmp.train.extrapolate import steady_fraction

        # A failure of another server before the rebuild ends exceeds r = 1 parity.
        t, trial, node = draws.t, draws.trial, draws.node
        same_trial = trial[1:] == trial[:-1]
        clash = same_trial & (np.diff(t) < md.rebuild_ns) & (node[1:] != node[:-1])
        lost_trials = np.unique(trial[1:][clash]).size if dep.r == 1 else 0
        extra = draws.per_trial(np.full(t.size, md.rebuild_traffic_ns))
        memory = dep.r / dep.k + draws.replica
        kw = {"p_data_loss": lost_trials / draws.trials}
        return [(cls.name, steady_fraction(md, cls), extra, 0.0, md.rebuild_ns, memory, kw)]

    def attach(self, trainer) -> None:
        super().attach(trainer)
        self.queue: list[int] = []
        self.failed_at: dict[int, list[tuple[int, float]]] = {}  # node -> (failure, time)
        self.range_left = 0  # steps until the range in flight commits
        self.range_ns = 0.0
        self.range_pj = 0.0
        self.ranges_done = 0

    def on_failure(self, f: Failure, pending_commit=None) -> None:
        store = self.store
        if pending_commit is not None and not self.cfg.two_phase:
            # Without a commit log, the deltas of rows whose data unit just died die with it.
            keep = store.node_of_row(pending_commit.rows) != f.node
            pending_commit.rows = pending_commit.rows[keep]
            pending_commit.old = pending_commit.old[keep]
            pending_commit.new = pending_commit.new[keep]
        self._dense_failure(f.node)
        rebuilding = list(self.queue)
        inflight = store.inflight
        if inflight is not None and inflight.node == f.node:
            self.range_left = 0  # the replacement died: its range restarts with the others
        store.fail_node(f.node)
        if f.node not in self.queue:
            self.queue.append(f.node)
        self.failed_at.setdefault(f.node, []).append(
            (len(self.redundancy_ns), self.ledger.total_ns)
        )
        self._event(f, lost_rows=int(len(store.rows_on_node(f.node))), during_rebuild_of=rebuilding)
        self.redundancy_ns.append(None)

    def _range_stripes(self, node: int) -> np.ndarray:
        lost = self.store.lost_positions(node)
        size = math.ceil(self.store.stripes / self.cfg.rebuild_ranges)
        return lost[:size]

    def before_step(self) -> None:
        store = self.store
        while store.inflight is None and self.queue:
            node = self.queue[0]
            stripes = self._range_stripes(node)
            if len(stripes) == 0:
                self.queue.pop(0)
                self._restored(node)
                continue
            t0 = time.perf_counter()
            store.start_range(node, stripes)
            self._timed("rebuild_decode", t0)
            self.range_ns, self.range_pj = self.cost.rebuild_cost(node, stripes)
            budget = self.cfg.rebuild_share * self.cost.baseline_step_ns()
            self.range_left = max(1, math.ceil(self.range_ns / budget))
            self._range_steps = self.range_left

    def after_step(self) -> None:
        if self.store.inflight is None:
            return
        self.ledger.add(
            "rebuild", self.range_ns / self._range_steps, self.range_pj / self._range_steps
        )
        self.range_left -= 1
        if self.range_left <= 0:
            t0 = time.perf_counter()
            self.store.commit_range()
            self._timed("rebuild_commit", t0)
            self.ranges_done += 1
            node = self.queue[0]
            if len(self.store.lost_positions(node)) == 0:
                self.queue.pop(0)
                self._restored(node)

    def _restored(self, node: int) -> None:
        for i, t0 in self.failed_at.pop(node, []):  # every failure of this node is healed
            self.redundancy_ns[i] = self.ledger.total_ns - t0
            after = self.redundancy_ns[i]
            self.events.append(
                {"rebuilt_node": node, "at_ns": self.ledger.total_ns, "after_ns": after}
            )

    def summary(self) -> dict[str, Any]:
        out = super().summary()
        out["code"] = self.cfg.code
        out["parities"] = self.store.r
        out["rebuild_ranges_done"] = self.ranges_done
        out["degraded_decoded_rows"] = self.store.counters["decoded_rows"]
        if (
            self.store.scheme is not None
            and not self.store.scheme.exact
            and not self.store.lost_nodes()
        ):
            out["float_sum_drift"] = float_sum_drift(self.store)
        return out


def float_sum_drift(store) -> dict[str, float]:
    """How far a float-sum parity has drifted: maintained parity vs a fresh sum, and the error
    of rows decoded from it (max abs, fraction of elements not bit-equal)."""
    fresh = store.scheme.encode(store.data)
    par = store.parity
    diff = np.abs(par - fresh)
    k = store.k
    worst, bad, n = 0.0, 0, 0
    for j in range(k):
        erased = store.data.copy()
        erased[:, j] = 0  # unit j lost
        dec = store.scheme.decode(erased, par, [j])[:, j]
        err = np.abs(dec - store.data[:, j])
        worst = max(worst, float(err.max()))
        bad += int(np.count_nonzero(dec.view(np.uint32) != store.data[:, j].view(np.uint32)))
        n += dec.size
    return {
        "parity_max_abs": float(diff.max()),
        "parity_mismatch_fraction": float(np.count_nonzero(diff) / diff.size),
        "decode_max_abs": worst,
        "decode_mismatch_fraction": bad / n,
    }


# ------------------------------------------------------------------------------------------------
