"""Training configuration: one frozen spec, built from a workload preset plus training knobs.

The workload preset (``nmp.workload``) gives the tables (rows, dim), batch, pooling and the
access skew. A training run on a CPU in seconds needs smaller tables, so rows are capped at
``max_rows`` per table (synthetic ids are drawn within the cap; Criteo TSV ids are hashed into
it, like DLRM's ``--max-ind-range``);
everything else keeps the preset's values unless set. Every knob can be changed with
``--set train.<field>=value``.

The defaults below are chosen, not measured, and say why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from nmp.config import KeyedValueError, apply_overrides, require_at_least
from nmp.parity_codes import PARITY_CODES
from nmp.train.intervals import INTERVAL_RULES
from nmp.train.optim import DENSE_OPTIMIZERS, OPTIMIZERS

# The slowest storage and host a run may model: below them a checkpoint's or a step's time
# overflows to inf (storage_gbps = 1e-300 printed "nan %" rows and invalid JSON). Chosen: a
# kilobyte a second, a thousand operations a second.
SLOWEST = {"storage_gbps": 1e-6, "host_flops": 1e3}
# The shortest MTBF a run may model (chosen: one step): below it the system fails more often
# than it steps, so that no strategy makes progress, and --random-failures drew failures
# without end (mtbf_steps = 1e-300 never finished).
MIN_MTBF_STEPS = 1.0


@dataclass(frozen=True)
class TrainConfig:
    workload: str = "criteo-kaggle"
    # --- model and data -----------------------------------------------------------------------
    steps: int = 600  # enough for the synthetic teacher's AUC to climb well above 0.5
    batch: int = 0  # 0: the workload's batch (criteo-kaggle: 128)
    max_rows: int = 2000  # rows per table cap for CPU runs (criteo-kaggle has 10M-row tables)
    max_tables: int = 0  # 0: every table of the workload
    max_pooling: int = 4  # cap of the lookups per bag (recross-eval's 80 is slow on a CPU)
    dim: int = 0  # 0: the workload's dim
    # MLP widths after the input; the bottom must end at dim. Chosen: PAPERS.md's Criteo Kaggle
    # bottom 13-512-256-64-16 / top 512-256-1 divided by 8 so a step takes milliseconds on one
    # CPU core; the paper sizes are --set train.bottom=[512,256,64] train.top=[512,256].
    bottom: tuple[int, ...] = (64, 32)
    top: tuple[int, ...] = (64, 32)
    # Tables: row-wise Adagrad as in DLRM/torchrec, or Adam (nmp/train/optim.py); the whole
    # optimizer state sits in each row's record and is encoded with it.
    optimizer: str = "adagrad"  # a name of nmp.train.optim.OPTIMIZERS
    lr_embedding: float = 0.05  # chosen: stable for row-wise Adagrad on the synthetic data
    # Dense MLP: plain SGD is dlrm_s_pytorch's default optimizer; "momentum" keeps a velocity per
    # weight (state that the replicas and checkpoints carry).
    dense_optimizer: str = "sgd"  # a name of nmp.train.optim.DENSE_OPTIMIZERS
    lr_dense: float = 0.1  # chosen: SGD on the MLP, as dlrm_s_pytorch's default optimizer
    momentum: float = 0.9  # chosen: the usual heavy-ball coefficient (dense_optimizer momentum)
    zipf_alpha: float = 0.0  # 0: the workload's alpha (1.05 for Criteo presets)
    eval_batches: int = 32  # held-out batches for AUC/logloss/accuracy (4096 samples at 128)
    # The stated training criterion of --until-plateau: evaluate every plateau_every steps and
    # stop when the held-out AUC gains less than plateau_gain (chosen: 0.002, a tenth of the
    # AUC's 95 % interval at 4096 held-out samples, so further gains are below resolution).
    plateau_every: int = 200
    plateau_gain: float = 0.002
    seed: int = 0
    data: str = ""  # a Criteo TSV file; empty: the synthetic teacher stream
    # --- memory nodes and parity --------------------------------------------------------------
    nodes: int = 5  # PAPERS.md: ECRec evaluated with 5 servers; here memory nodes
    # Data-parallel workers: the batch is split into this many contiguous micro-batches whose
    # gradients are added in worker order (the distributed run's workers; nmp train --procs).
    workers: int = 1
    code: str = "xor"  # a name of nmp.parity_codes.PARITY_CODES
    parities: int = 1  # r; with code = "rs" r = 2 survives two concurrent failures
    two_phase: bool = True  # two-phase commit of data update and parity delta
    rebuild_ranges: int = 10  # PAPERS.md: the ECRec code rebuilds in 10 ranges
    # Chosen: the background rebuild may add up to this fraction of a step's time per step
    # (it shares the memory nodes with training instead of stopping it).
    rebuild_share: float = 0.5
    dense_replicas: int = 2  # dense MLP replicated on two nodes (ECRec)
    # --- hardware cost model ------------------------------------------------------------------
    arch: str = "recnmp"
    memory: str = ""  # empty: the architecture preset's memory
    cost_sample: int = 25  # run the architecture's timing model on every n-th step's batch
    # Chosen: dense compute of the MLP on the host at 1 TFLOP/s (a CPU socket with AVX-512).
    host_flops: float = 1.0e12
    # --- checkpoints and failures -------------------------------------------------------------
    storage_gbps: float = 2.0  # chosen: one NVMe SSD's sequential write bandwidth
    # Rescheduling after a failure (CPR's fourth part of full recovery's overhead). A CPU-sized
    # run's modeled time is compressed (its MTBF is mtbf_steps steps of milliseconds), so the
    # restart is stated as a fraction of the MTBF: chosen, 60 s of a 14 h system MTBF (the cpr
    # setup, workloads/train/cpr.toml) = 0.0012. restart_s > 0 sets it in seconds instead.
    restart_s: float = 0.0
    restart_mtbf_fraction: float = 60.0 / (14 * 3600.0)
    interval: str = "young"  # a checkpoint interval rule by formula (nmp.train.intervals)
    # δ of Young/Daly: "model" = checkpoint bytes / storage_gbps (reproducible); "measured" =
    # the wall time of writing the first checkpoint file here (varies from run to run).
    write_time: Literal["model", "measured"] = "model"
    # MTBF in steps of modeled time: a CPU-sized run lasts milliseconds of modeled time, so the
    # failure rate is stated per step; Young/Daly convert it with the modeled step time.
    mtbf_steps: float = 600.0
    # CPR (Maeng et al., MLSys'21): the save interval comes from the user's bound on the
    # portion of lost samples, PLS = interval / (2 * nodes * MTBF) (a failure loses on average
    # half an interval of one node's updates), so interval = 2 * PLS * nodes * MTBF.
    cpr_pls: float = 0.02  # chosen: a 2 % bound; CPR leaves it to the user (crossover axis)
    cpr_fraction: float = 0.1  # MFU: rows saved by each partial save (top-k by use since then)
    cpr_full_every: int = 4  # chosen: every 4th save full (a cold row's age; crossover axis)
    ssu_sample: float = 0.05  # fraction of each batch's samples whose rows SSU records
    # empty: a temporary folder removed after the run; else each run writes into a folder of
    # its own inside it (run-<strategy>-<unique>), kept
    ckpt_dir: str = ""
    # Steps between saves; 0: Young/Daly (checkpoint) or CPR's bound on lost samples (cpr-*).
    ckpt_every: int = 0
    # --- all-to-all compression (SC'24; nmp/train/alltoall.py) ---------------------------------
    compress: str = "none"  # codec (nmp.compress) of the pooled vectors crossing nodes
    eb: float = 0.03  # PAPERS.md: SC'24's base relative error bound (0.01 / 0.05 by table)
    # nmp.train.alltoall.bounds: decay 2x -> 1x (PAPERS.md); adaptive: table-wise bounds
    eb_schedule: str = "constant"
    eb_tables: str = "adaptive"
    network: str = "infiniband-hdr-200g"  # models/network preset of the step-time model
    codec_gbps: float = 0.0  # 0: the codec throughput measured in the run (CPU, one thread)

    @property
    def compresses(self) -> bool:
        """Whether the all-to-all runs through a codec that changes its bytes (the codec says:
        ``none`` sends them as they are)."""
        from nmp.compress.codec import CODECS

        return bool(getattr(CODECS.get(self.compress), "compresses", True))

    def validate(self) -> None:
        require_at_least(
            self,
            1,
            "steps",
            "max_rows",
            "max_pooling",
            "nodes",
            "workers",
            "rebuild_ranges",
            "eval_batches",
            "cost_sample",
            "cpr_full_every",
        )
        require_at_least(self, 0, "batch", "max_tables", "dim", "seed", "ckpt_every")
        if self.interval not in INTERVAL_RULES or INTERVAL_RULES.get(self.interval).takes_minutes:
            formulas = [n for n, rule in INTERVAL_RULES.items() if not rule.takes_minutes]
            raise KeyedValueError(
                "interval", f"must be one of {', '.join(formulas)}, got {self.interval!r}"
            )
        if self.steps > MAX_STEPS:  # a run that could not end within a day is a typo
            raise KeyedValueError("steps", f"must be <= {MAX_STEPS:,}, got {self.steps:,}")
        if self.parities < 1:
            raise KeyedValueError("parities", "must be >= 1")
        for key, registry in (("optimizer", OPTIMIZERS), ("dense_optimizer", DENSE_OPTIMIZERS)):
            if getattr(self, key) not in registry:
                raise KeyedValueError(key, registry.unknown_message(getattr(self, key)))
        if self.code not in PARITY_CODES:
            raise KeyedValueError("code", PARITY_CODES.unknown_message(self.code))
        error = PARITY_CODES.get(self.code).parities_error(self.parities)
        if error:
            raise KeyedValueError("parities", error)
        if self.nodes <= self.parities:
            # both named: `--parities 1000` alone blamed train.nodes (issue 42's wrong-key kind)
            raise KeyedValueError(
                "nodes",
                f"{self.nodes} nodes must exceed train.parities ({self.parities}): fewer "
                "parities or more nodes",
            )
        if not self.rebuild_share > 0.0:
            raise KeyedValueError("rebuild_share", "must be > 0")
        for name in ("storage_gbps", "host_flops", "mtbf_steps", "lr_embedding", "lr_dense"):
            if not getattr(self, name) > 0:  # NaN fails too
                raise KeyedValueError(name, "must be > 0")
        if self.mtbf_steps < MIN_MTBF_STEPS:
            raise KeyedValueError(
                "mtbf_steps",
                f"must be >= {MIN_MTBF_STEPS:g} step (a system that fails more often than it "
                f"steps trains nothing), got {self.mtbf_steps:g}",
            )
        for name, least in SLOWEST.items():
            if getattr(self, name) < least:
                raise KeyedValueError(name, f"must be >= {least:g}, got {getattr(self, name):g}")
        if not 0.0 < self.cpr_fraction <= 1.0:
            raise KeyedValueError("cpr_fraction", "must be in (0, 1]")
        if not 0.0 < self.ssu_sample <= 1.0:
            raise KeyedValueError("ssu_sample", "must be in (0, 1]")
        if not self.zipf_alpha >= 0.0:
            raise KeyedValueError("zipf_alpha", "must be >= 0 (0: the workload's)")
        for name in ("bottom", "top"):
            if any(w < 1 for w in getattr(self, name)):
                raise KeyedValueError(name, "layer widths must be >= 1")
        if self.plateau_every < 1:
            raise KeyedValueError("plateau_every", "must be >= 1")
        if not self.plateau_gain > 0.0:
            raise KeyedValueError("plateau_gain", "must be > 0")
        if not 0.0 < self.cpr_pls < 1.0:
            raise KeyedValueError("cpr_pls", "must be in (0, 1)")
        if not 0.0 <= self.momentum < 1.0:
            raise KeyedValueError("momentum", "must be in [0, 1)")
        if self.restart_s < 0:
            raise KeyedValueError("restart_s", "must be >= 0")
        if not 0.0 <= self.restart_mtbf_fraction < 1.0:
            raise KeyedValueError("restart_mtbf_fraction", "must be in [0, 1)")
        if self.dense_replicas < 1 or self.dense_replicas > self.nodes:
            raise KeyedValueError("dense_replicas", f"must be in 1..{self.nodes}")
        _check_compression(self)


# Chosen: a CPU-sized step takes milliseconds (600 steps in seconds), so 10^7 steps is about a
# day of training; a larger count (--steps 1e12) ran silently until interrupted.
MAX_STEPS = 10_000_000


def _check_compression(cfg: TrainConfig) -> None:
    from nmp.compress.codec import CODECS

    if cfg.compress not in CODECS:  # the registry's one-line error: the name and the known ones
        raise KeyedValueError("compress", CODECS.unknown_message(cfg.compress))
    if not 0.0 < cfg.eb <= 0.5:
        raise KeyedValueError("eb", "must be in (0, 0.5]")
    from nmp.train.alltoall.bounds import EB_SCHEDULES, EB_TABLE_RULES

    for key, registry in (("eb_schedule", EB_SCHEDULES), ("eb_tables", EB_TABLE_RULES)):
        if getattr(cfg, key) not in registry:
            raise KeyedValueError(key, registry.unknown_message(getattr(cfg, key)))
    if cfg.codec_gbps < 0:
        raise KeyedValueError("codec_gbps", "must be >= 0 (0: measured)")


def with_overrides(cfg: TrainConfig, overrides: dict) -> TrainConfig:
    return apply_overrides(cfg, overrides, root="train")
