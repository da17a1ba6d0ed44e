"""What every process of a distributed run shares: the run's spec and the model's geometry.

:class:`RunSpec` is written by the launcher as ``spec.json`` in the run folder; each process
rebuilds the same geometry, data stream, shard map and initial state from it (all seeded), so
nothing but the spec travels at start.

Roles and ranks: ``server:<n>`` is rank ``n``, ``worker:<w>`` is rank ``servers + w`` in every
generation; a replacement takes over the rank of the role it replaces.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nmp.train.config import TrainConfig


@dataclass(frozen=True)
class RunSpec:
    cfg: dict[str, Any]
    strategy: str
    servers: int
    workers: int
    run_dir: str
    host: str = "127.0.0.1"
    port: int = 0
    timeout_s: float = 60.0
    ckpt_every: int = 0  # steps between full checkpoints (rollback) or saves (partial)
    eval: bool = True
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def train_config(self) -> TrainConfig:
        kw = dict(self.cfg)
        for key in ("bottom", "top"):
            kw[key] = tuple(kw[key])
        return TrainConfig(**kw)

    @property
    def world(self) -> int:
        return self.servers + self.workers

    def rank(self, role: str) -> int:
        kind, idx = role.split(":")
        return int(idx) if kind == "server" else self.servers + int(idx)

    def roles(self) -> list[str]:
        return [f"server:{n}" for n in range(self.servers)] + [
            f"worker:{w}" for w in range(self.workers)
        ]

    def write(self, path: Path) -> None:
        from nmp.fileio import atomic_write_text  # a link or device at the path: refused

        atomic_write_text(path, json.dumps(dataclasses.asdict(self), indent=1))

    @classmethod
    def read(cls, path: Path) -> RunSpec:
        return cls(**json.loads(Path(path).read_text()))


def strategy_class(name: str):
    from nmp.train.strategies import REGISTRY

    return REGISTRY.get(name)  # an NmpError naming the known strategies when unknown


class Context:
    """The run's model pieces, rebuilt identically in every process."""

    def __init__(self, spec: RunSpec) -> None:
        import torch

        from nmp.train.shard import ShardMap, worker_slices
        from nmp.train.trainer import make_data, record_width, resolve_geometry

        torch.set_num_threads(1)
        self.spec = spec
        self.cfg = spec.train_config
        self.strategy = strategy_class(spec.strategy)
        self.geo, self.data = make_data(self.cfg, resolve_geometry(self.cfg))
        self.shard = ShardMap(self.geo.table_rows, spec.servers, self.cfg.parities)
        self.slices = worker_slices(self.geo.batch, spec.workers)
        self.width = record_width(self.cfg, self.geo)
        self.run_dir = Path(spec.run_dir)
        self._batch: tuple[int, Any] | None = None
        self.store: Any = None  # the rendezvous store (set by the process that uses it)

    @property
    def coded(self) -> bool:
        return bool(self.strategy.uses_parity)

    @property
    def schedule(self):
        """The strategy's step (nmp.train.schedule): the phases the processes run and time."""
        return self.strategy.schedule

    def batch(self, step: int):
        if self._batch is None or self._batch[0] != step:
            self._batch = (step, self.data.batch_at(step))
        return self._batch[1]

    def server_rank(self, n: int) -> int:
        return n

    def worker_rank(self, w: int) -> int:
        return self.spec.servers + w

    def ckpt_dir(self, step: int) -> Path:
        return self.run_dir / "ckpt" / f"step-{step:08d}"
