"""DLRM pieces: the store's pooling equals torch EmbeddingBag and the architecture's
gather-reduce; metrics; the Criteo TSV reader; checkpoint intervals."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from nmp.errors import NmpError
from nmp.train.checkpoint import daly_interval, young_interval
from nmp.train.data import CriteoTSV, read_criteo_tsv
from nmp.train.failures import parse_failure
from nmp.train.metrics import auc, logloss
from nmp.train.trainer import Trainer
from tests.shipped import assert_shipped_in_order


def test_pooled_equals_embedding_bag_and_arch_gather_reduce(tiny_cfg):
    from nmp.arch.point import load_arch
    from nmp.train.hwcost import ArchBackend
    from nmp.workload.spec import TableSpec

    tr = Trainer(tiny_cfg(max_pooling=3, workload="recross-eval", dim=16), parity=True)
    assert tr.geo.pooling == 3
    b = tr.data.batch_at(0)
    pooled, *_ = tr.pooled(b)  # [B, T, dim]
    values = tr.store.snapshot_all()[:, : tr.geo.dim]
    off = tr.geo.offsets
    arch = load_arch("recnmp")
    tables = [TableSpec(rows=n, dim=tr.geo.dim) for n in tr.geo.table_rows]
    arch.bind(tables)
    for t in range(len(tables)):
        arch.store.write(t, np.arange(tables[t].rows), values[off[t] : off[t + 1]])
    lb = ArchBackend.lookup_batch(tr.cost.backend, b)
    arch_pooled, _ = arch.gather_reduce(lb, tables)
    for t in range(len(tables)):
        bag = torch.nn.EmbeddingBag.from_pretrained(
            torch.from_numpy(values[off[t] : off[t + 1]].copy()), mode="sum"
        )
        ref = bag(torch.from_numpy(b.ids[t])).numpy()  # [B, P] input: fixed-size bags
        np.testing.assert_allclose(pooled[:, t], ref, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(arch_pooled[t], ref, rtol=1e-5, atol=1e-6)


def test_auc_and_logloss_against_definitions():
    rng = np.random.default_rng(1)
    y = rng.random(300) < 0.3
    s = rng.integers(0, 8, 300) + 2 * y  # many ties: they count one half
    pairs = (s[y][:, None] > s[~y][None, :]).mean() + 0.5 * (s[y][:, None] == s[~y][None, :]).mean()
    assert auc(y, s) == pytest.approx(pairs)
    assert logloss([1, 0], [0.9, 0.2]) == pytest.approx(-(math.log(0.9) + math.log(0.8)) / 2)


def test_criteo_tsv_reader_hashes_ids_and_reports_bad_lines(tmp_path):
    dense = "\t".join(["3", "", "0"] + ["1"] * 10)
    cats = "\t".join(["68fd1e64", ""] + ["0000000a"] * 24)
    good = tmp_path / "day.tsv"
    good.write_text("\n".join(f"{i % 2}\t{dense}\t{cats}" for i in range(40)) + "\n")
    d, c, y = read_criteo_tsv(good)
    assert d.shape == (40, 13) and c.shape == (40, 26)
    assert d[0, 0] == pytest.approx(math.log(4.0)) and d[0, 1] == 0.0
    rows = (1000,) * 26
    ds = CriteoTSV(good, rows, batch=8, eval_fraction=0.2)
    b = ds.batch_at(0)
    assert b.ids.shape == (26, 8, 1)
    assert b.ids[0, 0, 0] == 0x68FD1E64 % 1000 and b.ids[1, 0, 0] == 0
    bad = tmp_path / "bad.tsv"
    bad.write_text(f"1\t{dense}\t{cats}\n1\t2\n")
    with pytest.raises(NmpError, match=r"bad.tsv:2"):
        read_criteo_tsv(bad)


@pytest.mark.parametrize("value", ["-1", "1" + "0" * 16, "f" * 40, "0x_1", " 1"])
def test_criteo_tsv_categorical_ids_outside_64_bits_name_line_and_column(tmp_path, value):
    """``-1`` and 17 hex digits were an internal OverflowError (numpy's uint64); ``0x_1`` was
    read as 1."""
    fields = ["1", *["1"] * 13, *["a1"] * 26]
    bad = list(fields)
    bad[16] = value
    path = tmp_path / "ids.tsv"
    path.write_text("\t".join(fields) + "\n" + "\t".join(bad) + "\n")
    with pytest.raises(NmpError, match=r"ids.tsv:2: malformed value in column 17"):
        read_criteo_tsv(path)


def test_criteo_tsv_lines_end_at_newlines_only(tmp_path):
    fields = ["1", *["1"] * 13, *["a1"] * 26]
    path = tmp_path / "lines.tsv"
    path.write_text("\t".join(fields) + "\r\n" + "\t".join(fields) + "\n")
    assert read_criteo_tsv(path)[1].shape == (2, 26)
    fields[20] = "a\u2028b"
    path.write_text("\t".join(fields) + "\n")
    with pytest.raises(NmpError, match=r"lines.tsv:1: malformed value in column 21"):
        read_criteo_tsv(path)


def test_young_and_daly_intervals():
    assert young_interval(2.0, 100.0) == pytest.approx(20.0)
    # Daly adds the higher-order terms and subtracts the write time
    x = 2.0 / 200.0
    assert daly_interval(2.0, 100.0) == pytest.approx(20.0 * (1 + math.sqrt(x) / 3 + x / 9) - 2.0)
    assert daly_interval(300.0, 100.0) == 100.0


def test_interval_rules_are_registered_objects():
    from nmp.errors import NmpError
    from nmp.train.config import TrainConfig
    from nmp.train.intervals import INTERVAL_RULES

    assert_shipped_in_order(INTERVAL_RULES, ["young", "daly", "fixed"])
    assert INTERVAL_RULES.get("young").intervals_ns(2.0, 100.0, ()) == (young_interval(2.0, 100.0),)
    assert INTERVAL_RULES.get("fixed").intervals_ns(2.0, 100.0, (30.0, 60.0)) == (1.8e12, 3.6e12)
    assert INTERVAL_RULES.get("fixed").label("Ckpt", (30.0, 60.0), 1) == "Ckpt-60min"
    with pytest.raises(NmpError, match="interval_min > 0"):
        INTERVAL_RULES.get("fixed").check(())
    with pytest.raises(ValueError, match="interval.*young, daly"):
        TrainConfig(interval="fixed").validate()  # the trainer prices a formula, not minutes


def test_failure_spec_parsing():
    f = parse_failure("step=300,node=1,phase=between")
    assert (f.step, f.node, f.phase) == (300, 1, "between")
    with pytest.raises(NmpError, match="unknown key"):
        parse_failure("step=3,nod=1")


def test_random_failures_follow_the_mtbf_and_the_seed():
    from nmp.train.failures import random_failures

    a = random_failures(100_000, 5, 1000.0, seed=3)
    assert a == random_failures(100_000, 5, 1000.0, seed=3)
    assert 80 <= len(a) <= 120  # Poisson with mean 100
    assert {f.node for f in a} == set(range(5))


def _draw_per_table(d, stream: int):
    """SyntheticCriteo's draw as it was written, a table at a time (the reference the batched
    draw must give bit for bit: the same uniforms, ids, labels and teacher probabilities)."""
    rng = np.random.default_rng([d.seed, stream])
    b, p = d.batch, d.pooling
    dense = rng.standard_normal((b, 13)).astype(np.float32)
    ids = np.empty((len(d.table_rows), b, p), dtype=np.int64)
    logit = dense.astype(np.float64) @ d._v + d._bias
    for t, rows in enumerate(d.table_rows):
        ranks = np.searchsorted(d._cdf[t], rng.random((b, p)), side="right")
        ids[t] = d._perm[t][np.minimum(ranks, rows - 1)]
        logit += d._w[t][ids[t]].sum(axis=1) / p
    for i, j in d._pairs:
        ui = d._u[i][ids[i]].mean(axis=1)
        uj = d._u[j][ids[j]].mean(axis=1)
        logit += d._pair_scale * np.einsum("bd,bd->b", ui, uj)
    prob = 1.0 / (1.0 + np.exp(-logit))
    label = (rng.random(b) < prob).astype(np.float32)
    return dense, ids, label, prob


@pytest.mark.parametrize(
    "rows, batch, pooling, seed",
    [((2000,) * 26, 128, 1, 0), ((5, 1, 300, 7), 64, 3, 4), ((100_000, 20), 16, 40, 9)],
)
def test_synthetic_draw_equals_the_draw_table_by_table(rows, batch, pooling, seed):
    from nmp.train.data import SyntheticCriteo

    d = SyntheticCriteo(rows, batch=batch, pooling=pooling, seed=seed)
    for stream in (0, 7, 10**6):
        got = d.batch_at(stream)
        want = _draw_per_table(d, stream)
        for a, w in zip((got.dense, got.ids, got.label, got.teacher_prob), want, strict=True):
            assert a.dtype == w.dtype and np.array_equal(a.view(np.uint8), w.view(np.uint8))
