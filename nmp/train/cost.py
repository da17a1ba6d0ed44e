"""Modeled time and energy of a training run on the near-memory hardware.

Every part of a step is charged from a hardware model:

- gather-reduce of the batch's lookups and the update of the touched rows (with in-memory
  parity maintenance where the strategy keeps parity, a plain write of the new rows where it
  does not) come from :mod:`nmp.arch` (``gather_reduce`` and ``parity_update``: DRAM timing and
  energy of the data and parity units and the traffic between nodes) — see
  :mod:`nmp.train.hwcost` for the adapter and its fallback;
- the rebuild of each range: the architecture's gather-reduce over the records of the range's
  stripes (the ``k`` shards each lost position is decoded from) plus one record write per
  position; degraded reads during training: ``k`` shard reads per decoded row at the gather's
  measured cost per lookup (too many small reads to time each one);
- dense compute of the MLP (forward + backward, 6 flops per weight per sample) at
  ``host_flops``;
- checkpoint writes and loads at ``storage_gbps``.

The architecture's timing model runs on every ``cost_sample``-th step's real batch and touched
rows; the other steps are charged at the running mean cost per lookup and per updated row (the
batch size and pooling are fixed, so steps differ only in which rows they touch).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nmp.train.config import TrainConfig

CATEGORIES = (
    "gather",
    "update",
    "dense",
    "degraded_decode",
    "rebuild",
    "ckpt_write",
    "ckpt_load",
    "reexec",
    "restart",
    "reinit",
)


@dataclass
class CostLedger:
    """Modeled time (ns) and energy (pJ) by category."""

    t_ns: dict[str, float] = field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0.0))
    energy_pj: dict[str, float] = field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0.0))
    reexec_until: int = -1  # steps below this are re-executions (charged to "reexec")
    step_ns: list[float] = field(default_factory=list)  # per executed step, every category

    def add(self, category: str, t_ns: float, energy_pj: float = 0.0) -> None:
        self.t_ns[category] += float(t_ns)
        self.energy_pj[category] += float(energy_pj)

    @property
    def total_ns(self) -> float:
        return float(sum(self.t_ns.values()))

    @property
    def total_energy_pj(self) -> float:
        return float(sum(self.energy_pj.values()))

    def to_json(self) -> dict[str, Any]:
        return {
            "total_ns": self.total_ns,
            "total_energy_pj": self.total_energy_pj,
            "t_ns": dict(self.t_ns),
            "energy_pj": dict(self.energy_pj),
        }


class CostModel:
    """Charges modeled time/energy to a ledger (see module docstring)."""

    def __init__(self, cfg: TrainConfig, geo, store) -> None:
        from nmp.train.hwcost import make_backend

        self.cfg = cfg
        self.geo = geo
        self.store = store
        self.backend = make_backend(cfg, geo, store)
        # (batch) -> (ns, pJ) of the batch's gathers on the servers' designs; the trainer sets it
        # (its servers' NodeMemory), the backend's one-design gather stands in without one.
        self.gather_fn = self.backend.gather
        self._sums = np.zeros(8)  # gather ns, pJ, lookups, update ns, pJ, rows, samples, -
        self._last_decoded = 0
        # Error of charging an untimed step at the running mean: on every timed step after the
        # first, the mean's prediction against the step's timing (relative, per part).
        self.sample_errors: dict[str, list[float]] = {"gather": [], "update": []}
        params = sum(mlp_weights(geo).values())
        self.dense_ns_per_step = 6.0 * params * geo.batch / cfg.host_flops * 1e9

    # -- rates -------------------------------------------------------------------------------

    def wants_sample(self, step: int) -> bool:
        """Whether ``step`` is timed by the hardware models (the others are charged the mean)."""
        return self._sums[6] == 0 or step % self.cfg.cost_sample == 0

    def _sample(self, batch, rows: np.ndarray, gather=None) -> None:
        g_ns, g_pj = gather if gather is not None else self.gather_fn(batch)
        u_ns, u_pj = self.backend.update(rows)
        if self._sums[6] > 0:
            for part, got, pred in (
                ("gather", g_ns, batch.ids.size * self.ns_per_lookup),
                ("update", u_ns, len(rows) * self.ns_per_update),
            ):
                if got > 0:
                    self.sample_errors[part].append(pred / got - 1.0)
        self._sums += [g_ns, g_pj, batch.ids.size, u_ns, u_pj, max(1, len(rows)), 1, 0]

    @property
    def ns_per_lookup(self) -> float:
        return self._sums[0] / max(1.0, self._sums[2])

    @property
    def pj_per_lookup(self) -> float:
        return self._sums[1] / max(1.0, self._sums[2])

    @property
    def ns_per_update(self) -> float:
        return self._sums[3] / max(1.0, self._sums[5])

    @property
    def pj_per_update(self) -> float:
        return self._sums[4] / max(1.0, self._sums[5])

    def calibrate(self, batch, rows: np.ndarray) -> None:
        if self._sums[6] == 0:
            self._sample(batch, rows)

    def sampling_report(self) -> dict[str, Any]:
        """How far charging untimed steps at the running mean is off, measured on this run's
        timed steps (``train.cost_sample = 1`` times every step: no error)."""
        out: dict[str, Any] = {
            "cost_sample": self.cfg.cost_sample,
            "timed_steps": int(self._sums[6]),
        }
        for part, errs in self.sample_errors.items():
            e = np.abs(np.asarray(errs))
            out[f"{part}_mean_abs_error_pct"] = float(100 * e.mean()) if e.size else None
            out[f"{part}_max_abs_error_pct"] = float(100 * e.max()) if e.size else None
        return out

    # -- charges -------------------------------------------------------------------------------

    def charge_step(
        self, ledger: CostLedger, step: int, batch, rows: np.ndarray, gather=None, schedule=None
    ) -> None:
        """Charge one step; ``gather`` = (ns, pJ) of its gathers when the trainer timed them.
        The step's time is ``schedule``'s critical path (:mod:`nmp.train.schedule`) over its
        phases in one process (no network: the sends cost nothing; ECRec's parity work is
        inside the coded store's update), plus a degraded read's decode in series."""
        if gather is not None or self.wants_sample(step):
            self._sample(batch, rows, gather)
        lookups = batch.ids.size
        parts = {
            "gather": (lookups * self.ns_per_lookup, lookups * self.pj_per_lookup),
            "update": (len(rows) * self.ns_per_update, len(rows) * self.pj_per_update),
            "dense": (self.dense_ns_per_step, 0.0),
        }
        decoded = self.store.counters["decoded_rows"] - self._last_decoded
        self._last_decoded = self.store.counters["decoded_rows"]
        if decoded:
            parts["degraded_decode"] = self.decode_cost(decoded)
        from nmp.train.schedule import COMMON

        on_path = {"gather": parts["gather"][0], "optimizer": parts["update"][0]}
        on_path["dense"] = parts["dense"][0]
        total = (schedule or COMMON).critical_path_ns(on_path)
        total += parts["degraded_decode"][0] if decoded else 0.0
        if step < ledger.reexec_until:
            ledger.add("reexec", total, sum(e for _, e in parts.values()))
        else:
            for cat, (t, e) in parts.items():
                ledger.add(cat, t, e)
        ledger.step_ns.append(total)

    def decode_cost(self, rows: int) -> tuple[float, float]:
        """Reading the ``k`` surviving shards of each of ``rows`` lost rows (for degraded reads
        the decoded row goes to the requesting unit, not back to memory)."""
        k = self.store.k
        return rows * k * self.ns_per_lookup, rows * k * self.pj_per_lookup

    def rebuild_cost(self, node: int, stripes: np.ndarray) -> tuple[float, float]:
        """Rebuilding ``node``'s positions in ``stripes``: the survivors' reads timed by the
        hardware model on their real rows, plus one record write per position.

        A lost data row reads the k - 1 other data rows of its stripe and the parity; a lost
        parity reads the k data rows. The parity is not a table row of the timing model, so its
        read is timed as a read of one more record of the stripe (same size, same level).
        """
        store = self.store
        k = store.k
        rows = stripes[:, None] * k + np.arange(k)[None, :]  # every data row of each stripe
        rows = np.minimum(rows, store.total_rows - 1)  # the last stripe's padding rows
        t, e = self.backend.read_records(rows)
        n = len(stripes)
        return t + n * self.ns_per_update, e + n * self.pj_per_update

    def storage_ns(self, bytes_: float) -> float:
        return bytes_ / self.cfg.storage_gbps  # GB/s is bytes per ns

    def write_rows_cost(self, rows: int) -> tuple[float, float]:
        """Writing ``rows`` records into memory (checkpoint reload, re-initialization)."""
        return rows * self.ns_per_update, rows * self.pj_per_update

    def copy_bytes_cost(self, nbytes: float) -> tuple[float, float]:
        """Copying ``nbytes`` between nodes, at the update's cost per record byte."""
        rows = nbytes / self.store.record_bytes
        return rows * self.ns_per_update, rows * self.pj_per_update

    def baseline_step_ns(self) -> float:
        """Modeled time of one failure-free step (for converting step counts to time)."""
        lookups = self.geo.batch * self.geo.pooling * len(self.geo.table_rows)
        rows = self._sums[5] / max(1.0, self._sums[6])
        return lookups * self.ns_per_lookup + rows * self.ns_per_update + self.dense_ns_per_step


def layer_weights(widths) -> int:
    """An MLP's weights: one per pair of consecutive layers' units (its inputs first)."""
    return sum(a * b for a, b in zip(widths[:-1], widths[1:], strict=True))


def mlp_weights(geo) -> dict[str, int]:
    """The weights of ``geo``'s bottom MLP (over the dense inputs) and top MLP (over the
    interaction), by name."""
    from nmp.train.data import NUM_DENSE
    from nmp.train.model import interaction_dim

    return {
        "bottom": layer_weights((NUM_DENSE, *geo.bottom)),
        "top": layer_weights((interaction_dim(len(geo.table_rows), geo.dim), *geo.top)),
    }
