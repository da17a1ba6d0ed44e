"""Training data: a synthetic Criteo-like stream with a hidden teacher, and a Criteo TSV reader.

Both yield :class:`Batch` objects: 13 dense features, one fixed-size bag of ids per sparse
feature (pooling ``P``; Criteo itself is one-hot, ``P = 1``) and a 0/1 label.

The synthetic stream draws ids from a power law (rank ``r`` has probability ∝ ``(r+1)^-alpha``,
ranks scattered over the table by a fixed permutation so hot rows land on every memory node) and
sets the label from a hidden teacher: a logistic model over the dense features, one scalar
weight per (table, row) and dot products of hidden per-row vectors for a few table pairs. A
DLRM can learn all three terms, so the AUC rises well above 0.5, and losing the learned rows of
one memory node costs a measurable amount of AUC. Batch ``s`` is a pure function of
``(seed, s)``: re-executing a step after a rollback sees exactly the same data.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from nmp.errors import NmpError

NUM_DENSE = 13
NUM_SPARSE_CRITEO = 26
EVAL_STREAM = 1 << 40  # step ids of the held-out stream never collide with training steps


@dataclass
class Batch:
    """One mini-batch. ``ids`` [T, B, P] int64 are row numbers within each table."""

    dense: np.ndarray  # float32 [B, 13]
    ids: np.ndarray  # int64 [T, B, P]
    label: np.ndarray  # float32 [B]
    teacher_prob: np.ndarray | None = None  # the synthetic teacher's click probability [B]

    @property
    def size(self) -> int:
        return int(self.label.shape[0])


class SyntheticCriteo:
    """Power-law ids plus a hidden teacher (see module docstring)."""

    def __init__(
        self,
        table_rows: tuple[int, ...],
        *,
        batch: int,
        pooling: int = 1,
        alpha: float = 1.05,
        teacher_dim: int = 4,
        teacher_pairs: int = 8,
        teacher_scale: float = 1.5,
        seed: int = 0,
    ) -> None:
        if batch <= 0 or pooling <= 0:
            raise NmpError(f"batch and pooling must be positive, got {batch}, {pooling}")
        self.table_rows = tuple(int(r) for r in table_rows)
        self.batch = batch
        self.pooling = pooling
        self.seed = seed
        rng = np.random.default_rng([seed, 0xDA7A])
        self._cdf: list[np.ndarray] = []
        self._perm: list[np.ndarray] = []
        for rows in self.table_rows:
            p = (np.arange(rows, dtype=np.float64) + 1.0) ** -alpha
            self._cdf.append(np.cumsum(p / p.sum()))
            self._perm.append(rng.permutation(rows))
        t = len(self.table_rows)
        # Teacher: per-row scalar weight, per-row hidden vector for pairwise terms, dense weights.
        self._w = [rng.standard_normal(rows) * teacher_scale / np.sqrt(t) for rows in table_rows]
        self._u = [rng.standard_normal((rows, teacher_dim)) for rows in table_rows]
        pairs = rng.choice(
            t * (t - 1) // 2, size=min(teacher_pairs, t * (t - 1) // 2), replace=False
        )
        ii, jj = np.tril_indices(t, k=-1)
        self._pairs = list(zip(ii[pairs].tolist(), jj[pairs].tolist(), strict=True))
        self._pair_tables = sorted({t for pair in self._pairs for t in pair})
        # the tables end to end, for the draws of all tables at once (_draw)
        rows_of = np.asarray(self.table_rows, dtype=np.int64)
        self._first_row = (np.cumsum(rows_of) - rows_of)[:, None, None]
        self._last_rank = (rows_of - 1)[:, None, None]
        self._perm_flat = np.concatenate(self._perm) + self._first_row.ravel().repeat(rows_of)
        self._w_flat = np.concatenate(self._w)
        self._pair_scale = teacher_scale / np.sqrt(max(1, len(self._pairs)) * teacher_dim)
        self._v = rng.standard_normal(NUM_DENSE) * teacher_scale / np.sqrt(NUM_DENSE)
        self._bias = -0.6  # about a 1:3 click ratio, like Criteo's 25 % positives

    def _draw(self, stream: int) -> Batch:
        rng = np.random.default_rng([self.seed, stream])
        b, p = self.batch, self.pooling
        dense = rng.standard_normal((b, NUM_DENSE)).astype(np.float32)
        t_n = len(self.table_rows)
        logit = dense.astype(np.float64) @ self._v + self._bias
        # the tables' uniforms in one call (the stream a call per table drew, in its order),
        # ranks per table, then ids and teacher weights of all tables at once
        u = rng.random((t_n, b, p))
        ranks = np.empty((t_n, b, p), dtype=np.int64)
        for t in range(t_n):
            ranks[t] = np.searchsorted(self._cdf[t], u[t], side="right")
        np.minimum(ranks, self._last_rank, out=ranks)
        ids = self._perm_flat[ranks + self._first_row] - self._first_row
        w_sums = self._w_flat[ids + self._first_row].sum(axis=2) / p
        for t in range(t_n):  # added table by table, as the logits always were
            logit += w_sums[t]
        # each table's mean hidden vector once, for every pair it is in (the same arrays the
        # pairs computed each time: the logits keep their bits)
        u_mean = {t: self._u[t][ids[t]].mean(axis=1) for t in self._pair_tables}
        for i, j in self._pairs:
            logit += self._pair_scale * np.einsum("bd,bd->b", u_mean[i], u_mean[j])
        prob = 1.0 / (1.0 + np.exp(-logit))
        label = (rng.random(b) < prob).astype(np.float32)
        return Batch(dense=dense, ids=ids, label=label, teacher_prob=prob)

    def batch_at(self, step: int) -> Batch:
        """Training batch of ``step`` (a pure function of seed and step)."""
        return self._draw(step)

    def eval_batches(self, count: int) -> list[Batch]:
        """The held-out split: ``count`` batches from a stream no training step draws."""
        return [self._draw(EVAL_STREAM + i) for i in range(count)]


class CriteoTSV:
    """Criteo TSV (``label \\t I1..I13 \\t C1..C26``) with ids hashed into the table sizes.

    Empty integers read as 0 and dense values become ``log(1 + max(x, 0))`` as in the DLRM
    reference; categoricals are 8-hex-digit hashes (empty reads as 0) taken modulo the table's
    row count. The last ``eval_fraction`` of the lines form the held-out split.
    """

    def __init__(
        self,
        path: str | Path,
        table_rows: tuple[int, ...],
        *,
        batch: int,
        eval_fraction: float = 0.1,
        max_lines: int | None = None,
    ) -> None:
        if len(table_rows) != NUM_SPARSE_CRITEO:
            raise NmpError(f"Criteo TSV has 26 sparse features; the model has {len(table_rows)}")
        self.table_rows = tuple(table_rows)
        self.batch = batch
        self.pooling = 1
        dense, cats, labels = read_criteo_tsv(path, max_lines=max_lines)
        rows = np.asarray(self.table_rows, dtype=np.uint64)
        ids = (cats % rows[None, :]).astype(np.int64)  # [N, 26]
        n = labels.shape[0]
        n_eval = max(batch, int(n * eval_fraction))
        if n - n_eval < batch:
            raise NmpError(f"{path}: {n} lines are too few for batch {batch} plus a held-out split")
        self._dense, self._ids, self._label = dense, ids, labels
        self._n_train = n - n_eval

    def _slice(self, lo: int, hi: int) -> Batch:
        ids = self._ids[lo:hi].T[:, :, None].copy()
        return Batch(dense=self._dense[lo:hi], ids=ids, label=self._label[lo:hi])

    def batch_at(self, step: int) -> Batch:
        per_epoch = self._n_train // self.batch
        lo = (step % per_epoch) * self.batch
        return self._slice(lo, lo + self.batch)

    def eval_batches(self, count: int) -> list[Batch]:
        lo = self._n_train
        n = self._label.shape[0]
        out: list[Batch] = []
        while lo < n and len(out) < count:
            out.append(self._slice(lo, min(n, lo + self.batch)))
            lo += self.batch
        return out


_HEX_ID = re.compile(r"[0-9a-fA-F]{1,16}")


def _hex_id(text: str) -> int:
    """A categorical value: 1 to 16 hex digits, nothing else ("" is 0); ValueError else
    (``-1`` and 17 digits did not fit numpy's uint64: an internal OverflowError; ``0x_1`` and
    `` 1`` were read as 1)."""
    if not text:
        return 0
    if not _HEX_ID.fullmatch(text):
        raise ValueError(
            f"categorical id {text[:40]!r} is not 1 to 16 hex digits (a 64-bit unsigned id)"
        )
    return int(text, 16)


# A label or dense value: a decimal number in ASCII (nan and inf pass here, to be refused as
# not finite). Python's float() (and numpy's) also takes what no number is written as: it strips
# any Unicode space ("1\u2028", " 1"), reads other scripts' digits and underscores ("1_0": 10).
_NUMBER = re.compile(
    r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?(?:nan|inf|infinity)",
    re.IGNORECASE,
)
# a column of nothing but these characters needs no value-by-value look (float() parses it)
_NUMBER_CHARS = re.compile(r"[0-9.eE+\-\t]*")


def _number(text: str) -> float:
    """A label or dense value ("" is 0); ValueError unless it is written as a number."""
    if not text:
        return 0.0
    if not _NUMBER.fullmatch(text):
        raise ValueError(f"{text[:40]!r} is not a number (ASCII digits, '.', an exponent)")
    return float(text)


def _check_numbers(fields: list[list[str]], cols: Sequence[tuple[str, ...]], file: str) -> None:
    """Raise :class:`NmpError` at the first label or dense value (columns 1..14) with a
    character no number has, naming its line and column."""
    for j in range(1 + NUM_DENSE):
        if _NUMBER_CHARS.fullmatch("\t".join(cols[j])):
            continue
        for i, f in enumerate(fields):
            try:
                _number(f[j])
            except ValueError as exc:
                raise NmpError(
                    f"malformed value in column {j + 1}: {exc}", file=file, line=i + 1
                ) from None


def _first_bad_value(fields: list[list[str]]) -> tuple[int | None, int | None]:
    """(line, column), 1-based, of the first value that does not parse (label and dense:
    numbers; categorical: hex), for the error message only."""
    for i, f in enumerate(fields):
        for j, v in enumerate(f):
            try:
                if j <= NUM_DENSE:
                    _number(v)
                else:
                    _hex_id(v)
            except ValueError:
                return i + 1, j + 1
    return None, None


def read_criteo_tsv(
    path: str | Path, *, max_lines: int | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Parse a Criteo TSV file -> (dense float32 [N,13], categorical uint64 [N,26], label [N]).

    A malformed line raises :class:`NmpError` naming the file and line.
    """
    import nmp.guard as guard
    from nmp.fileio import open_regular

    path = Path(path)
    try:
        with open_regular(path) as fh:  # a pipe or folder is refused, without blocking
            guard.check(guard.text_file_estimate(os.fstat(fh.fileno()).st_size, str(path)))
            text = fh.read().decode("utf-8")
    except OSError as exc:
        raise NmpError(f"cannot read: {exc.strerror}", file=str(path)) from None
    except UnicodeDecodeError:
        raise NmpError("not a Criteo TSV text file (not UTF-8 text)", file=str(path)) from None
    # lines end at a newline only: a U+2028 or form feed inside a field is a bad value of its
    # line (str.splitlines split there and shifted every later line number)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    lines = [line.removesuffix("\r") for line in lines]
    if max_lines is not None:
        lines = lines[:max_lines]
    n = len(lines)
    width = 1 + NUM_DENSE + NUM_SPARSE_CRITEO
    fields = [line.split("\t") for line in lines]
    for i, f in enumerate(fields):
        if len(f) != width:
            raise NmpError(
                f"expected {width} tab-separated fields, got {len(f)}", file=str(path), line=i + 1
            )
    # Column-wise conversion keeps the per-value work inside numpy/C.
    cols = list(zip(*fields, strict=True)) if n else [()] * width
    _check_numbers(fields, cols, str(path))
    if "" in cols[0]:  # (a missing dense value reads as 0; a missing label is no sample)
        raise NmpError(
            "label must be 0 or 1, got an empty field", file=str(path), line=cols[0].index("") + 1
        )
    try:
        label = np.asarray(cols[0], dtype=np.float32)
        dense = np.stack(
            [
                np.asarray([v or "0" for v in cols[1 + j]], dtype=np.float64)
                for j in range(NUM_DENSE)
            ],
            axis=1,
        )
        cats = np.stack(
            [
                np.asarray([_hex_id(v) for v in cols[1 + NUM_DENSE + j]], dtype=np.uint64)
                for j in range(NUM_SPARSE_CRITEO)
            ],
            axis=1,
        )
    except ValueError as exc:
        line, column = _first_bad_value(fields)
        raise NmpError(
            f"malformed value in column {column}: {exc}", file=str(path), line=line
        ) from None
    if not np.isin(label, (0.0, 1.0)).all():
        bad = int(np.flatnonzero(~np.isin(label, (0.0, 1.0)))[0])
        raise NmpError("label must be 0 or 1", file=str(path), line=bad + 1)
    if not np.isfinite(dense).all():
        bad = int(np.flatnonzero(~np.isfinite(dense).all(axis=1))[0])
        raise NmpError("dense features must be finite numbers", file=str(path), line=bad + 1)
    dense = np.log1p(np.maximum(dense, 0.0)).astype(np.float32)
    return dense, cats.reshape(n, NUM_SPARSE_CRITEO), label
