"""The embedding all-to-all of model-parallel training, compressed as SC'24 does.

Model parallelism as DLRM runs it on ``N`` nodes: table ``t`` lives on node ``t mod N``
(``train.nodes``), the batch is split in ``N`` equal sample slices (data-parallel MLP). Forward,
the owner of each table sends the pooled vectors of the other nodes' samples to them; backward,
their gradients come back. Exactly those chunks, ``[samples of node j, dim]`` for each table
``t`` and each ``j != owner(t)``, cross a node boundary; the owner's own slice does not. Each
crossing chunk is encoded with the codec of ``train.compress`` and decoded on arrival, and
training runs on the decoded values (:class:`_LossyExchange`, a torch autograd function: the
forward compresses the pooled values, the backward their gradients).

Error bounds (``eb_rel``, relative to each chunk's value range):

- table-wise (``train.eb_tables = "adaptive"``): SC'24 gives sensitive tables 0.01, tolerant
  ones 0.05 and the rest 0.03 (PAPERS.md), i.e. ``eb/3``, ``5 eb/3`` and ``eb`` around the base
  ``train.eb``. Which tables are sensitive is decided here by a rule of our own (the paper's rule
  is not in the sources found; *chosen*): on the first batch, the spread of each table's pooled
  values, ``(max - min) / std``. A table whose range is stretched by a few outliers gets a bound
  that is large against its typical value, so the third with the largest spread is sensitive,
  the third with the smallest tolerant. ``"uniform"`` gives every table ``eb``.
- iteration-wise (``train.eb_schedule = "decay"``): the bound starts at 2x and decays linearly
  to 1x at half the run (PAPERS.md: 2x -> 1x; the half-run length is chosen), then stays.

Parity traffic (ECRec) is *not* compressed lossily: the parity node applies ``parity ^= old XOR
new`` in place, and recovery is exact only if parity is the bit-exact XOR of the data. A lossy
delta leaves ``parity != XOR(data)``, so a rebuilt row would be wrong in bits no later update
repairs. A lossless codec (``zstd``/``lz4``) keeps recovery exact and could carry it.

Evaluation reads the pooled vectors uncompressed: the held-out AUC measures the model that
compressed training produced, not a compressed inference path.

Time: the run's measured ratio and codec throughput (or ``train.codec_gbps``) go into
:func:`nmp.compress.speedup.step_times` on the network preset ``train.network``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import torch

from nmp.compress import make_codec
from nmp.compress.pooled import owner, sample_slices

SENSITIVE, NORMAL, TOLERANT = "sensitive", "normal", "tolerant"
# PAPERS.md (SC'24): 0.01 / 0.03 / 0.05 -> factors of the base bound 0.03.
CLASS_FACTOR = {SENSITIVE: 1.0 / 3.0, NORMAL: 1.0, TOLERANT: 5.0 / 3.0}


def classify_tables(pooled: np.ndarray) -> list[str]:
    """Sensitivity class of each table from one batch ``[B, T, dim]`` (see module doc)."""
    t = pooled.shape[1]
    flat = pooled.transpose(1, 0, 2).reshape(t, -1).astype(np.float64)
    std = flat.std(axis=1)
    spread = np.where(std > 0, (flat.max(axis=1) - flat.min(axis=1)) / np.maximum(std, 1e-30), 0)
    order = np.argsort(-spread, kind="stable")
    third = t // 3
    out = [NORMAL] * t
    for i in order[:third]:
        out[i] = SENSITIVE
    for i in order[t - third :] if third else []:
        out[i] = TOLERANT
    return out


@dataclass
class DirectionStats:
    raw_bytes: int = 0
    sent_bytes: int = 0
    encode_s: float = 0.0
    decode_s: float = 0.0


@dataclass
class CompressedAllToAll:
    """The compressed exchange of one run (see module doc)."""

    codec_name: str
    nodes: int
    eb: float
    eb_schedule: str
    eb_tables: str
    steps: int
    classes: list[str] | None = None
    stats: dict[str, DirectionStats] = field(default_factory=dict)
    network: Any = None  # the NetworkSpec of the step-time model (train.network)

    def __post_init__(self) -> None:
        # One codec per direction: the hybrid's offline choice differs for values and gradients.
        self.codecs = {d: make_codec(self.codec_name) for d in ("forward", "backward")}
        self.stats = {d: DirectionStats() for d in ("forward", "backward")}

    def eb_at(self, step: int, num_tables: int) -> np.ndarray:
        scale = 1.0
        if self.eb_schedule == "decay":
            half = max(1, self.steps // 2)
            scale = 2.0 - min(1.0, step / half)
        if self.eb_tables == "adaptive" and self.classes:
            factors = np.array([CLASS_FACTOR[c] for c in self.classes])
        else:
            factors = np.ones(num_tables)
        return np.minimum(self.eb * scale * factors, 1.0)

    def exchange(self, x: np.ndarray, step: int, direction: str) -> np.ndarray:
        """``x`` [B, T, dim] as the receivers see it after the all-to-all."""
        bsz, t, _ = x.shape
        if self.classes is None:
            self.classes = classify_tables(x) if direction == "forward" else [NORMAL] * t
        ebs = self.eb_at(step, t)
        codec, st = self.codecs[direction], self.stats[direction]
        out = x.copy()
        slices = sample_slices(bsz, self.nodes)
        for tab in range(t):
            src = owner(tab, self.nodes)
            for j, sl in enumerate(slices):
                if j == src:
                    continue
                chunk = np.ascontiguousarray(x[sl, tab])
                t0 = time.process_time()
                enc = codec.encode(chunk, float(ebs[tab]), table=tab)
                t1 = time.process_time()
                out[sl, tab] = codec.decode(enc)
                st.decode_s += time.process_time() - t1
                st.encode_s += t1 - t0
                st.raw_bytes += chunk.nbytes
                st.sent_bytes += enc.nbytes
        return out

    def apply(self, pooled: torch.Tensor, step: int) -> torch.Tensor:
        return _LossyExchange.apply(pooled, self, step)

    def summary(self, geo: Any, codec_gbps: float) -> dict[str, Any]:
        from nmp.compress.speedup import StepSetup, step_times

        raw = sum(s.raw_bytes for s in self.stats.values())
        sent = sum(s.sent_bytes for s in self.stats.values())
        enc_s = sum(s.encode_s for s in self.stats.values())
        dec_s = sum(s.decode_s for s in self.stats.values())
        ratio = raw / sent if sent else 1.0
        comp = codec_gbps or (raw / enc_s / 1e9 if enc_s else float("inf"))
        decomp = codec_gbps or (raw / dec_s / 1e9 if dec_s else float("inf"))
        setup = StepSetup(
            nodes=self.nodes,
            batch=geo.batch,
            num_tables=len(geo.table_rows),
            dim=geo.dim,
            pooling=float(geo.pooling),
            bottom=tuple(geo.bottom),
            top=tuple(geo.top),
        )
        st = step_times(setup, self.network, ratio=ratio, comp_gbps=comp, decomp_gbps=decomp)
        per_dir = {
            d: s.raw_bytes / s.sent_bytes if s.sent_bytes else 1.0 for d, s in self.stats.items()
        }
        extra: dict[str, Any] = {}
        hyb: Any = self.codecs["forward"]  # the hybrid codec has a per-table choice
        if hasattr(hyb, "choice"):
            back: Any = self.codecs["backward"]
            extra["hybrid_choice_forward"] = {int(k): v for k, v in hyb.choice.items()}
            extra["hybrid_choice_backward"] = {int(k): v for k, v in back.choice.items()}
        return {
            "compress": self.codec_name,
            "eb": self.eb,
            "eb_schedule": self.eb_schedule,
            "eb_tables": self.eb_tables,
            "table_classes": self.classes,
            "compression_ratio": ratio,
            "compression_ratio_forward": per_dir["forward"],
            "compression_ratio_backward": per_dir["backward"],
            "alltoall_bytes": sent,
            "alltoall_bytes_uncompressed": raw,
            "codec_compress_gbps": comp,
            "codec_decompress_gbps": decomp,
            "codec_gbps_source": "train.codec_gbps" if codec_gbps else "measured (CPU, 1 thread)",
            "network": self.network.name,
            "step_time_ns_uncompressed": st["step_time_ns_uncompressed"],
            "step_time_ns_compressed": st["step_time_ns_compressed"],
            "speedup_modeled": st["speedup_modeled"],
            "comm_speedup_modeled": st["comm_speedup_modeled"],
            "comm_speedup_paper_formula": st["comm_speedup_paper_formula"],
            **extra,
        }


class _LossyExchange(torch.autograd.Function):
    """Forward: the pooled values through the compressed all-to-all; backward: the gradients
    through the compressed reverse all-to-all."""

    @staticmethod
    def forward(ctx, pooled, a2a, step):  # noqa: D401
        ctx.a2a, ctx.step = a2a, step
        return torch.from_numpy(a2a.exchange(pooled.detach().numpy(), step, "forward"))

    @staticmethod
    def backward(ctx, grad):
        g = ctx.a2a.exchange(np.ascontiguousarray(grad.numpy()), ctx.step, "backward")
        return torch.from_numpy(g), None, None


def make_alltoall(cfg: Any) -> CompressedAllToAll | None:
    """The run's compressed all-to-all, or None when ``train.compress`` is "none". The network
    preset is loaded here, so that a bad ``train.network`` fails before training."""
    if cfg.compress == "none":
        return None
    from nmp.compress.network import load_network

    return CompressedAllToAll(
        cfg.compress,
        cfg.nodes,
        cfg.eb,
        cfg.eb_schedule,
        cfg.eb_tables,
        cfg.steps,
        network=load_network(cfg.network),
    )


# -- reports ---------------------------------------------------------------------------------

SUMMARY_KEYS = (
    "compression_ratio",
    "alltoall_bytes",
    "step_time_ns_uncompressed",
    "step_time_ns_compressed",
    "speedup_modeled",
)


def compression_summary(res: Any) -> dict[str, Any]:
    """The compressed all-to-all's figures of a finished run (empty without compression)."""
    tr = res.trainer
    if tr is None or tr.alltoall is None:
        return {}
    return tr.alltoall.summary(tr.geo, tr.cfg.codec_gbps)


def compression_report(cfg: Any, strategy: str, failures: list, res: Any) -> dict[str, Any]:
    """Summary of ``res`` plus its AUC against the same run uncompressed (with the noise band
    of :func:`nmp.train.compare.auc_change`)."""
    from dataclasses import replace

    from nmp.train.compare import auc_change
    from nmp.train.trainer import run

    base = run(replace(cfg, compress="none"), strategy, failures)
    change, noise = auc_change(res, base)
    return {
        **compression_summary(res),
        "auc_uncompressed": base.metrics["auc"],
        "auc_change_vs_uncompressed": change,
        "auc_change_noise95": noise,
        "auc_change_within_noise": (
            None if change is None or noise is None else bool(abs(change) <= noise)
        ),
    }


def compressed_ecrec_row(cfg: Any, failures: list, base: Any) -> dict[str, Any] | None:
    """``nmp train --compare``'s row for ECRec with the all-to-all compressed (the parity
    deltas stay uncompressed: see the module doc), or None without ``train.compress``."""
    if cfg.compress == "none":
        return None
    from nmp.train.compare import result_row
    from nmp.train.trainer import run

    res = run(cfg, "ecrec", failures)
    row = result_row(res, base)
    row["strategy"] = f"ecrec+{cfg.compress}"
    summary = compression_summary(res)
    row.update({k: summary[k] for k in SUMMARY_KEYS})
    row["parity_compressed"] = "no: lossy parity deltas would break XOR recovery"
    row["parity_delta_zstd_ratio"] = parity_delta_ratio(res.trainer)
    return row


def parity_delta_ratio(trainer: Any) -> float:
    """Lossless (zstd) ratio of the parity deltas ``old XOR new`` of one more step of a
    finished run: what compressing ECRec's parity traffic exactly would gain. The step runs
    on the finished trainer (after its result was taken)."""
    from nmp.compress.stages import zstd_compress

    seen: list[Any] = []
    trainer.train_step(between_hook=seen.append)
    p = seen[0]
    delta = np.ascontiguousarray(p.old).view(np.uint32) ^ np.ascontiguousarray(p.new).view(
        np.uint32
    )
    return delta.nbytes / max(1, len(zstd_compress(delta.tobytes())))


def print_compression(row: dict[str, Any]) -> None:
    ch, noise = row.get("auc_change_vs_uncompressed"), row.get("auc_change_noise95")
    verdict = "" if ch is None else f" ({ch:+.4f} ±{noise:.4f} vs uncompressed)"
    print(
        f"  all-to-all: {row['compress']} eb {row['eb']} ({row['eb_schedule']}, "
        f"{row['eb_tables']} tables): ratio {row['compression_ratio']:.2f}, "
        f"{row['alltoall_bytes_uncompressed']} -> {row['alltoall_bytes']} bytes{verdict}"
    )
    print(
        f"  step time on {row['network']}: {row['step_time_ns_uncompressed'] / 1e3:.1f} us -> "
        f"{row['step_time_ns_compressed'] / 1e3:.1f} us, speedup {row['speedup_modeled']:.3f} "
        f"(codec {row['codec_compress_gbps']:.2f}/{row['codec_decompress_gbps']:.2f} GB/s, "
        f"{row['codec_gbps_source']})"
    )


# -- the SC'24 study's training half -----------------------------------------------------------

TRAIN_DEFAULTS: dict[str, Any] = {
    "workloads": ["dlrm-benchmark", "criteo-terabyte"],
    "steps": 300,
    "nodes": 4,
    "seed": 0,
    # (codec, eb_tables, eb_schedule) per eb of the study; the first is run at every eb.
    "variants": [
        ["hybrid", "adaptive", "constant"],
        ["quant", "uniform", "constant"],
        ["hybrid", "adaptive", "decay"],
    ],
}


def check_train_params(train: Any, ebs: list[float]) -> list[tuple[Any, list[Any]]]:
    """The AUC half's runs, validated before anything runs: per workload, the uncompressed
    config and the compressed ones (``variants[0]`` at every eb of ``ebs``, the others at 0.03
    or the first eb). Bad keys or values raise :class:`NmpError` naming ``params.train.*``."""
    from nmp.config import apply_overrides
    from nmp.errors import NmpError
    from nmp.train.config import TrainConfig
    from nmp.workload import load_workload

    if not isinstance(train, dict):
        raise NmpError("params.train: must be a table")
    unknown = sorted(set(train) - set(TRAIN_DEFAULTS))
    if unknown:
        raise NmpError(
            f"params.train.{unknown[0]}: unknown key (known: {', '.join(TRAIN_DEFAULTS)})"
        )
    p = {**TRAIN_DEFAULTS, **train}
    for key in ("workloads", "variants"):
        if not isinstance(p[key], list):
            raise NmpError(f"params.train.{key}: must be a list")
    for v in p["variants"]:
        if not (isinstance(v, list) and len(v) == 3):
            raise NmpError(f"params.train.variants: {v!r} is not [codec, eb_tables, eb_schedule]")
    plan = []
    for wl in p["workloads"]:
        try:
            load_workload(wl)
        except NmpError as exc:
            raise NmpError(f"params.train.workloads: {exc}") from None
        common = {"workload": wl, "steps": p["steps"], "nodes": p["nodes"], "seed": p["seed"]}
        base = apply_overrides(TrainConfig(), {**common, "dense_replicas": 1}, root="params.train")
        runs = []
        for i, (codec, tables, schedule) in enumerate(p["variants"]):
            for eb in ebs if i == 0 else [0.03 if 0.03 in ebs else ebs[0]]:
                knobs = {"compress": codec, "eb": eb, "eb_tables": tables, "eb_schedule": schedule}
                runs.append(apply_overrides(base, knobs, root="params.train"))
        plan.append((base, runs))
    return plan


def auc_rows(plan: list[tuple[Any, list[Any]]]) -> list[dict[str, Any]]:
    """AUC change of compressed training against uncompressed, per run of
    :func:`check_train_params`'s plan."""
    from nmp.train.compare import auc_change
    from nmp.train.trainer import run

    rows = []
    for cfg, runs in plan:
        base = run(cfg, "none", [])
        for c in runs:
            res = run(c, "none", [])
            change, noise = auc_change(res, base)
            rows.append(
                {
                    "workload": c.workload,
                    "codec": c.compress,
                    "eb": c.eb,
                    "eb_tables": c.eb_tables,
                    "eb_schedule": c.eb_schedule,
                    "steps": c.steps,
                    "auc_uncompressed": base.metrics["auc"],
                    "auc": res.metrics["auc"],
                    "auc_change": change,
                    "auc_change_noise95": noise,
                    "ratio_in_training": compression_summary(res)["compression_ratio"],
                }
            )
    return rows


def plot_auc(rows: list[dict[str, Any]], path: Any) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from nmp.compress.study import save_png

    fig, ax = plt.subplots(figsize=(6, 4))
    for wl in dict.fromkeys(r["workload"] for r in rows):
        sel = [
            r
            for r in rows
            if r["workload"] == wl and r["codec"] == "hybrid" and r["eb_schedule"] == "constant"
        ]
        sel.sort(key=lambda r: r["eb"])
        ax.errorbar(
            [r["eb"] for r in sel],
            [r["auc_change"] for r in sel],
            yerr=[r["auc_change_noise95"] for r in sel],
            marker="o",
            capsize=3,
            label=wl,
        )
    ax.axhline(0.0, color="k", lw=0.8)
    ax.set(xlabel="relative error bound (hybrid, table-wise)", ylabel="AUC change (95% noise)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    save_png(fig, path)
    plt.close(fig)


def check_params(params: dict[str, Any]) -> list[tuple[Any, list[Any]]]:
    """The ratio/speedup half's parameters and every training run of the AUC half."""
    from nmp.compress import study as cs

    ebs = [float(e) for e in cs.check_params(params)["eb"]]
    return check_train_params(params.get("train", {}), ebs)


def run_study(params: dict[str, Any], *, out_dir: Any, jobs: int = 1) -> list[dict[str, Any]]:
    """``nmp evaluate papers/sc24-*``: ratio, throughput and speedup (nmp.compress.study) plus
    the AUC change of compressed training; returns the main codec's speedup rows and the AUC
    rows (every row is in the CSV files)."""
    from pathlib import Path

    from nmp.compress import study as cs
    from nmp.evaluate.store import atomic_write_text

    out_dir = Path(out_dir)
    plan = check_params(params)  # every run checked before any
    res = cs.run_ratio_speedup({k: v for k, v in params.items() if k != "train"}, out_dir)
    aucs = auc_rows(plan)
    if aucs:
        cs.write_table(out_dir / "auc.csv", aucs)
        plot_auc(aucs, out_dir / "auc.png")
    codec, eb = res["main"]
    main = [r for r in res["speedup"] if r["codec"] == codec and r["eb"] == eb]
    rows = [{"part": "speedup", **r} for r in main] + [{"part": "auc", **r} for r in aucs]
    cs.write_table(out_dir / "results.csv", rows)
    cs.write_jsonl(out_dir / "results.jsonl", rows)
    atomic_write_text(out_dir / "report.md", cs.report_markdown(res, aucs))
    return rows


def accuracy_claim(
    *,
    quick: bool,
    workload: str,
    codec: str,
    eb: float,
    eb_schedule: Literal["constant", "decay"],
    steps: int,
) -> dict:
    """SC'24 claim model: is compressed training's AUC change within the noise of the
    held-out set (Hanley-McNeil, 95 %)? ``quick`` runs a third of the steps."""
    from dataclasses import replace

    from nmp.train.compare import auc_change
    from nmp.train.config import TrainConfig
    from nmp.train.trainer import run

    n = max(30, steps // 3) if quick else steps
    cfg = TrainConfig(workload=workload, steps=n)
    base = run(cfg, "none", [])
    res = run(replace(cfg, compress=codec, eb=eb, eb_schedule=eb_schedule), "none", [])
    change, noise = auc_change(res, base)
    ratio = compression_summary(res)["compression_ratio"]
    return {
        "value": bool(change is not None and noise is not None and abs(change) <= noise),
        "detail": (
            f"{workload}, {n} steps, {cfg.nodes} nodes, {codec} eb {eb} ({eb_schedule}): AUC "
            f"{res.metrics['auc']:.4f} vs {base.metrics['auc']:.4f}, change {change:+.4f} "
            f"(noise ±{noise:.4f}), ratio {ratio:.2f} in training"
        ),
    }
