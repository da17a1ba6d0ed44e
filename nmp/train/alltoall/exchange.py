"""The exchange: the embedding all-to-all of model-parallel training, compressed as SC'24 does.

Model parallelism as DLRM runs it on ``N`` nodes: table ``t`` lives on node ``t mod N``
(``train.nodes``), the batch is split in ``N`` equal sample slices (data-parallel MLP). Forward,
the owner of each table sends the pooled vectors of the other nodes' samples to them; backward,
their gradients come back. Exactly those chunks, ``[samples of node j, dim]`` for each table
``t`` and each ``j != owner(t)``, cross a node boundary; the owner's own slice does not. Each
crossing chunk is encoded with the codec of ``train.compress`` and decoded on arrival, and
training runs on the decoded values (:class:`_LossyExchange`, a torch autograd function: the
forward compresses the pooled values, the backward their gradients).

Error bounds (``eb_rel``, relative to each chunk's value range): the base ``train.eb`` times
the factor of the step (``train.eb_schedule``) and of the table (``train.eb_tables``), both
registered in :mod:`nmp.train.alltoall.bounds`. Table-wise (``adaptive``), SC'24 gives sensitive
tables 0.01, tolerant ones 0.05 and the rest 0.03 (PAPERS.md). Which tables are sensitive is
decided here by a rule of our own (the paper's rule is not in the sources found; *chosen*): on
the first batch, the spread of each table's pooled values, ``(max - min) / std``. A table whose
range is stretched by a few outliers gets a bound that is large against its typical value, so
the third with the largest spread is sensitive, the third with the smallest tolerant. The
distributed trainer's gradient messages mix a server's tables: they go at the base bound times
the step's factor.

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
from typing import Any

import numpy as np
import torch

from nmp.compress import make_codec
from nmp.compress.pooled import owner, sample_slices
from nmp.train.alltoall.bounds import (
    CLASS_FACTOR,
    EB_SCHEDULES,
    EB_TABLE_RULES,
    NORMAL,
    SENSITIVE,
    TOLERANT,
)

__all__ = ["CLASS_FACTOR", "CompressedAllToAll", "classify_tables"]


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

    def _scaled(self, step: int) -> float:
        return self.eb * EB_SCHEDULES.get(self.eb_schedule).scale(step, self.steps)

    def step_eb(self, step: int) -> float:
        """The base bound at ``step``: the schedule's factor, no table's."""
        return min(self._scaled(step), 1.0)

    def eb_at(self, step: int, num_tables: int) -> np.ndarray:
        factors = EB_TABLE_RULES.get(self.eb_tables).factors(self.classes, num_tables)
        return np.minimum(self._scaled(step) * factors, 1.0)

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

    # -- the distributed trainer's exchanges: real compressed bytes between processes --------

    def _encode(self, chunk: np.ndarray, eb: float, table: int, direction: str) -> bytes:
        codec, st = self.codecs[direction], self.stats[direction]
        t0 = time.process_time()
        enc = codec.encode(np.ascontiguousarray(chunk, dtype=np.float32), eb, table=table)
        st.encode_s += time.process_time() - t0
        st.raw_bytes += chunk.nbytes
        wire = to_wire(enc)
        st.sent_bytes += len(wire)
        return wire

    def _decode(self, wire: bytes, direction: str) -> np.ndarray:
        t0 = time.process_time()
        out = self.codecs[direction].decode(from_wire(wire))
        self.stats[direction].decode_s += time.process_time() - t0
        return out

    def encode_partial(self, slots: np.ndarray, vectors: np.ndarray, tables: int, step: int):
        """A server's sparse partial sums for one worker as (slots, blob, offsets): one blob per
        table (its vectors in slot order) at the table's bound."""
        if self.classes is None:
            dense = np.zeros((int(slots.max(initial=0)) // tables + 1, tables, vectors.shape[1]))
            dense.reshape(-1, vectors.shape[1])[slots] = vectors
            self.classes = classify_tables(dense.astype(np.float32))
        ebs = self.eb_at(max(step, 0), tables)
        table = slots % tables
        order = np.argsort(table, kind="stable")
        bounds = np.searchsorted(table[order], np.arange(tables + 1))
        blobs = []
        for t in range(tables):
            sel = order[bounds[t] : bounds[t + 1]]
            blobs.append(
                self._encode(vectors[sel], float(ebs[t]), t, "forward") if len(sel) else b""
            )
        offsets = np.cumsum([0] + [len(b) for b in blobs]).astype(np.int64)
        blob = np.frombuffer(b"".join(blobs), dtype=np.uint8)
        return slots.astype(np.int32), blob, offsets

    def decode_partial(self, slots, blob, offsets, tables: int, dim: int):
        """(slots, vectors) of :meth:`encode_partial`'s message."""
        table = slots % tables
        order = np.argsort(table, kind="stable")
        bounds = np.searchsorted(table[order], np.arange(tables + 1))
        out = np.zeros((len(slots), dim), dtype=np.float32)
        raw = blob.tobytes()
        for t in range(tables):
            if bounds[t + 1] > bounds[t]:
                got = self._decode(raw[offsets[t] : offsets[t + 1]], "forward")
                out[order[bounds[t] : bounds[t + 1]]] = got.reshape(-1, dim)
        return slots.astype(np.int64), out

    def encode_grads(self, rows: np.ndarray, grads: np.ndarray, step: int):
        """A worker's row gradients for one server: (rows, blob) at the base bound."""
        if len(rows) == 0:
            return rows, np.zeros(0, np.uint8)
        eb = self.step_eb(max(step, 0))
        return rows, np.frombuffer(self._encode(grads, eb, 0, "backward"), dtype=np.uint8)

    def decode_grads(self, rows: np.ndarray, blob: np.ndarray, dim: int) -> np.ndarray:
        if len(rows) == 0:
            return np.zeros((0, dim), np.float32)
        return self._decode(blob.tobytes(), "backward").reshape(len(rows), dim)

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
    if not cfg.compresses:
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


def to_wire(enc) -> bytes:
    """An :class:`~nmp.compress.codec.Encoded` blob as the bytes that cross the wire: a JSON
    header (codec, shape, typed metadata, part lengths) and the parts. JSON, not pickle: a
    receiver never runs what it reads."""
    import json

    meta = {}
    for k, v in enc.meta.items():
        if isinstance(v, np.floating):
            meta[k] = ["f", np.dtype(type(v)).str, float(v)]
        elif isinstance(v, np.integer | int) and not isinstance(v, bool):
            meta[k] = ["i", int(v)]
        else:
            meta[k] = ["v", v]
    head = json.dumps(
        {
            "codec": enc.codec,
            "shape": list(enc.shape),
            "meta": meta,
            "parts": [[name, len(part)] for name, part in enc.parts.items()],
        }
    ).encode()
    return len(head).to_bytes(4, "little") + head + b"".join(enc.parts.values())


def from_wire(buf: bytes):
    import json

    from nmp.compress.codec import Encoded

    n = int.from_bytes(buf[:4], "little")
    head = json.loads(buf[4 : 4 + n])
    meta = {}
    for k, (kind, *rest) in head["meta"].items():
        if kind == "f":
            meta[k] = np.dtype(rest[0]).type(rest[1])
        else:
            meta[k] = rest[-1]
    parts, at = {}, 4 + n
    for name, size in head["parts"]:
        parts[name] = buf[at : at + size]
        at += size
    return Encoded(codec=head["codec"], shape=tuple(head["shape"]), parts=parts, meta=meta)
