from dataclasses import replace

import numpy as np
import pytest

from nmp.compress.pooled import owner, sample_slices
from nmp.errors import NmpError
from nmp.train.alltoall.exchange import CLASS_FACTOR, CompressedAllToAll, classify_tables
from nmp.train.alltoall.report import compression_summary
from nmp.train.config import TrainConfig, with_overrides
from nmp.train.trainer import run

CFG = TrainConfig(steps=12, batch=64, max_tables=6, eval_batches=4, nodes=3)


def _x(seed=0, b=40, t=5, d=8):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((b, t, d)).astype(np.float32)
    x[0, 1, 0] = 40.0  # table 1: one outlier stretches its range
    return x


def test_only_crossing_chunks_change_and_stay_in_bound():
    x = _x()
    a2a = CompressedAllToAll("quant", 3, 0.03, "constant", "uniform", steps=10)
    y = a2a.exchange(x, 0, "forward")
    slices = sample_slices(40, 3)
    for t in range(x.shape[1]):
        for j, sl in enumerate(slices):
            c, r = x[sl, t], y[sl, t]
            if j == owner(t, 3):
                assert np.array_equal(c, r)  # the owner's own samples never travel
            else:
                eb = 0.03 * (float(c.max()) - float(c.min()))
                assert np.abs(r.astype(np.float64) - c).max() <= eb
                assert not np.array_equal(c, r)
    raw = sum(x[sl, t].nbytes for t in range(5) for j, sl in enumerate(slices) if j != t % 3)
    assert a2a.stats["forward"].raw_bytes == raw


def test_table_classes_and_decay():
    x = _x()
    classes = classify_tables(x)
    assert classes[1] == "sensitive"  # the stretched range
    assert classes.count("sensitive") == classes.count("tolerant") == 1
    a2a = CompressedAllToAll("quant", 3, 0.03, "decay", "adaptive", steps=100)
    a2a.exchange(x, 0, "forward")
    eb0 = a2a.eb_at(0, 5)
    assert eb0[1] == pytest.approx(2 * 0.03 * CLASS_FACTOR["sensitive"])  # 0.02 at the start
    assert a2a.eb_at(50, 5)[1] == pytest.approx(0.01)  # decayed to 1x at half the run
    assert a2a.eb_at(99, 5)[1] == pytest.approx(0.01)


def test_lossless_codec_trains_bit_identically():
    plain = run(CFG, "none", [])
    zstd = run(replace(CFG, compress="zstd"), "none", [])
    assert zstd.final_state_sha256 == plain.final_state_sha256
    s = compression_summary(zstd)
    steps, b, t, d = CFG.steps, 64, 6, zstd.trainer.geo.dim
    crossing = sum(b - len(range(64)[sample_slices(b, 3)[tt % 3]]) for tt in range(t))
    assert s["alltoall_bytes_uncompressed"] == 2 * steps * crossing * d * 4
    assert compression_summary(plain) == {}


def test_lossy_codec_changes_training_and_reports_step_times():
    res = run(replace(CFG, compress="hybrid", codec_gbps=50.0), "none", [])
    s = compression_summary(res)
    assert s["compression_ratio"] > 3.0
    assert s["alltoall_bytes"] * s["compression_ratio"] == pytest.approx(
        s["alltoall_bytes_uncompressed"]
    )
    assert s["step_time_ns_compressed"] > 0 and s["speedup_modeled"] > 0
    assert res.final_state_sha256 != run(CFG, "none", []).final_state_sha256


def test_bad_compress_config():
    from nmp.errors import NmpError
    from nmp.train.cli import _config

    class Args:
        set = ["train.compress=gzip"]
        workload = steps = seed = code = parities = nodes = arch = data = mtbf_steps = None
        compress = eb = eb_schedule = None

    with pytest.raises(NmpError, match="compress"):
        _config(Args())


def test_compare_gains_an_ecrec_row_with_compression():
    from nmp.train.compare import default_failures, run_compare

    cfg = replace(CFG, compress="quant", steps=9)
    rows = run_compare(cfg, default_failures(cfg), strategies=("ecrec",))
    assert [r["strategy"] for r in rows] == ["failure-free", "ecrec", "ecrec+quant"]
    assert rows[1]["identical_to_failure_free"]  # the plain rows run uncompressed
    assert not rows[2]["identical_to_failure_free"]
    assert rows[2]["compression_ratio"] > 3.0
    assert rows[2]["parity_delta_zstd_ratio"] > 1.0


def test_gradient_messages_follow_the_schedule_under_either_table_rule():
    """A server's gradient message mixes tables: the base bound times the step's factor, for
    adaptive tables as for uniform ones (adaptive had dropped the schedule's 2x)."""
    grads = np.random.default_rng(3).standard_normal((40, 8)).astype(np.float32)
    rows = np.arange(40)
    for tables in ("uniform", "adaptive"):
        a2a = CompressedAllToAll("quant", 3, 0.03, "decay", tables, steps=100)
        assert a2a.step_eb(0) == pytest.approx(0.06) and a2a.step_eb(60) == pytest.approx(0.03)
        early = a2a.decode_grads(*a2a.encode_grads(rows, grads, 0), 8)
        late = a2a.decode_grads(*a2a.encode_grads(rows, grads, 60), 8)
        span = float(grads.max() - grads.min())
        assert np.abs(early - grads).max() > 0.031 * span  # 2x the base bound at the start
        assert np.abs(late - grads).max() <= 0.03 * span * (1 + 1e-6)


def test_a_schedule_registered_at_run_time_sets_the_bound_and_the_config_takes_it():
    from nmp.train.alltoall.bounds import EB_SCHEDULES, EbSchedule

    triple = EbSchedule("test-triple", "3x, down to 1x over the whole run", 3.0, 1.0)
    EB_SCHEDULES.register(triple)
    try:
        a2a = CompressedAllToAll("quant", 3, 0.01, "test-triple", "uniform", steps=10)
        assert a2a.eb_at(0, 2) == pytest.approx([0.03, 0.03])
        assert a2a.eb_at(5, 2) == pytest.approx([0.02, 0.02])
        replace(TrainConfig(), compress="quant", eb_schedule="test-triple").validate()
    finally:
        EB_SCHEDULES.unregister("test-triple")
    with pytest.raises(NmpError, match="train.eb_schedule.*unknown error-bound schedule"):
        with_overrides(TrainConfig(), {"compress": "quant", "eb_schedule": "test-triple"})
