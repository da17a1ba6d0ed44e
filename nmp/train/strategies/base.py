"""The strategy interface and its registry: every variant module registers its class."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from nmp.errors import NmpError
from nmp.registry import Registry
from nmp.train.config import TrainConfig
from nmp.train.failures import Failure
from nmp.train.schedule import COMMON, Schedule

# Each variant module of this package registers its strategies when imported; they are listed
# (the comparison's order) by their ``listing_order``, the failure-free baseline last.
REGISTRY: Registry[type[Strategy]] = Registry(
    "strategy", package="nmp.train.strategies", order=lambda cls: cls.listing_order
)


def register(cls: type[Strategy]) -> type[Strategy]:
    """Class decorator: make ``cls`` available under ``cls.name``."""
    return REGISTRY.register(cls)


def strategy_names(*, baseline: bool = False) -> tuple[str, ...]:
    """Registered strategies in listing order (the baseline ``failure-free`` optional)."""
    return tuple(n for n, c in REGISTRY.items() if baseline or not c.is_baseline)


def baseline_name() -> str:
    """The registered baseline's name (no protection, no failures: what overheads are
    measured against)."""
    return next(n for n, c in REGISTRY.items() if c.is_baseline)


def strategy_help() -> str:
    """One line per strategy: name and the first line of its docstring."""
    return "; ".join(
        f"{n}: {(c.__doc__ or '').strip().splitlines()[0].rstrip('.')}" for n, c in REGISTRY.items()
    )


class Strategy:
    """No protection: the baseline that overheads are measured against."""

    name = "failure-free"
    uses_parity = False
    is_baseline = True
    listing_order = 9  # place in the comparison's table (the baseline last; chosen)
    # The step's phases (nmp.train.schedule): the distributed runtime runs and times them, the
    # scale model charges their critical path. A strategy adds its own phases to the common step.
    schedule: Schedule = COMMON
    tracking_bits_per_row = 0.0  # per-row bookkeeping memory (CPR's counters or marks)
    # What the distributed runtime does on a failure and between failures:
    writes_checkpoints = False  # writes checkpoint files every train.ckpt_every steps
    every_save_full = False  # each save is a full one (else every cpr_full_every-th)
    rolls_back = False  # a failure rolls every process back to the newest full save
    tracks_rows = False  # servers keep per-row bookkeeping for partial saves (CPR)
    tracks_samples = False  # its track() reads the input each lookup belongs to (CPR-SSU)

    def __init__(self, cfg: TrainConfig) -> None:
        self.cfg = cfg
        self.events: list[dict[str, Any]] = []
        self.recovery_ns = 0.0  # modeled time training stood still because of failures
        self.redundancy_ns: list[float | None] = []  # per failure: until fully protected again
        self.extra_memory_bytes = 0
        self.dense_reinitialized = 0  # failures that took the MLP's only replica
        self.wall_s: dict[str, float] = {}  # measured wall time of the real work, by part

    def attach(self, trainer) -> None:
        self.t = trainer
        self.store = trainer.store
        self.cost = trainer.cost
        self.ledger = trainer.ledger
        b0 = trainer.data.batch_at(0)
        self.cost.calibrate(b0, np.unique(trainer.global_rows(b0)))

    def before_step(self) -> None:
        pass

    def after_step(self) -> None:
        pass

    def finish(self) -> None:
        pass

    def on_failure(self, f: Failure, pending_commit=None) -> None:
        raise NmpError(f"strategy '{self.name}' was given a failure (node {f.node})")

    def _dense_failure(self, node: int) -> None:
        """The failure erases the MLP replica on ``node``: copy a survivor to the replacement
        node, or (no survivor) :meth:`_dense_lost`."""
        if node not in self.t.dense_nodes:
            return
        if self.t.erase_dense_replica(node):
            t_ns, e_pj = self.cost.copy_bytes_cost(self.t.dense_bytes())
            self.ledger.add("rebuild", t_ns, e_pj)
        else:
            self._dense_lost(node)

    def _dense_lost(self, node: int) -> None:
        """The only MLP replica died: re-create it from the seed (learned weights lost)."""
        self.t.reinit_dense()
        self.dense_reinitialized += 1
        self.events.append({"dense_lost_on": node, "dense_restored_from": "seed (step 0)"})

    def _event(self, f: Failure, **kw: Any) -> dict[str, Any]:
        ev = {"step": f.step, "node": f.node, "phase": f.phase, "at_ns": self.ledger.total_ns}
        ev.update(kw)
        self.events.append(ev)
        return ev

    def memory_overhead(self) -> float:
        """Extra memory of the protection over the unprotected model (fraction)."""
        if self.is_baseline:
            return 0.0  # the unprotected baseline itself
        t = self.t
        base = t.store.data_bytes + t.dense_bytes()
        extra = (self.cfg.dense_replicas - 1) * t.dense_bytes() + self.extra_memory_bytes
        if self.uses_parity:
            extra += t.store.parity_bytes
        return extra / base

    def summary(self) -> dict[str, Any]:
        red = [r for r in self.redundancy_ns if r is not None]
        return {
            "recovery_ns": self.recovery_ns,
            "time_to_full_redundancy_ns": max(red) if red else None,
            "redundancy_restored": all(r is not None for r in self.redundancy_ns),
            "memory_overhead": self.memory_overhead(),
            "dense_reinitialized": self.dense_reinitialized,
            "measured_wall_s": dict(self.wall_s),
        }

    def _timed(self, part: str, t0: float) -> None:
        self.wall_s[part] = self.wall_s.get(part, 0.0) + time.perf_counter() - t0

    # -- the distributed runtime ----------------------------------------------------------------

    @classmethod
    def restore_replacement(
        cls, ctx, role: str, rows: np.ndarray, rec: dict[str, Any]
    ) -> np.ndarray | None:
        """The records a fresh server process starts from in generation ``rec`` (None: it
        holds nothing and is rebuilt, or everyone rolls back)."""
        return None

    # -- at a paper's scale (nmp.train.extrapolate) ---------------------------------------------
    # Each returns the strategy's rows: its failure-free overhead (its schedule's critical path
    # beyond the common step's, plus its saves) and what its failures cost.

    @classmethod
    def scale_expected(cls, md, dep) -> list[dict[str, Any]]:
        raise NmpError(f"strategy '{cls.name}' has no model at scale (scale_expected)")

    @classmethod
    def scale_scheduled(cls, md, dep, horizon_ns: float, failure_steps) -> list[dict[str, Any]]:
        raise NmpError(f"strategy '{cls.name}' has no model at scale (scale_scheduled)")

    @classmethod
    def scale_draws(cls, md, dep, draws) -> list[tuple]:
        raise NmpError(f"strategy '{cls.name}' has no model at scale (scale_draws)")


# ------------------------------------------------------------------------------------------------


def make_strategy(name: str, cfg: TrainConfig) -> Strategy:
    return REGISTRY.get(name)(cfg)
