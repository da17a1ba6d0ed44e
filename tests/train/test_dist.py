"""The distributed trainer: real processes on torch.distributed, real SIGKILLs.

Each test is one or two small runs (3 servers, 2 workers, a spare: 6 processes forked from a
warm fork server; a few seconds each on two cores)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from nmp.cli import main
from nmp.train.dist.context import Context, RunSpec
from nmp.train.dist.launch import launch, parse_kill
from nmp.train.dist.outcome import digest
from nmp.train.trainer import run

STEPS = 30
TINY = [
    "--set", "train.max_tables=8",
    "--set", "train.max_rows=400",
    "--set", "train.bottom=[16]",
    "--set", "train.top=[16]",
    "--set", "train.eval_batches=2",
    "--set", "train.batch=64",
    "--set", "train.cost_sample=100000",
    "--set", "train.ckpt_every=10",
    "--steps", str(STEPS),
]  # fmt: skip


@pytest.fixture(scope="module")
def cfg(tiny_cfg):
    return tiny_cfg(steps=STEPS, nodes=3, workers=2, eval_batches=2, ckpt_every=10)


@pytest.fixture(scope="module")
def single(cfg):
    """The single-process trainer's failure-free run of the same configuration."""
    return run(cfg, "failure-free", [])


def _launch(cfg, strategy, kills, tmp_path):
    spec = RunSpec(
        cfg=dataclasses.asdict(cfg),
        strategy=strategy,
        servers=cfg.nodes,
        workers=cfg.workers,
        run_dir=str(tmp_path),
        timeout_s=60,
        ckpt_every=cfg.ckpt_every,
    )
    rec = launch(spec, [parse_kill(k) for k in kills])
    rec.update(digest(tmp_path, Context(spec)))
    return rec


def test_failure_free_processes_match_the_single_process_trainer_bit_for_bit(cfg, single, tmp_path):
    from nmp.train.dist.context import Context
    from nmp.train.traffic import counted, layout, step_units

    rec = _launch(cfg, "ecrec", [], tmp_path)
    assert rec["final_state_sha256"] == single.final_state_sha256
    assert rec["parity_consistent"]  # every server's parity is the XOR of its stripes
    assert rec["results"]["worker:0"]["metrics"]["auc"] == single.metrics["auc"]
    # the bytes the processes sent, per unit of work, are what the scale model charges
    ctx = Context(RunSpec.read(tmp_path / "spec.json"))
    units: dict[str, int] = {}
    for i in range(STEPS):
        for k, v in step_units(ctx, i).items():
            units[k] = units.get(k, 0) + v
    got = counted(rec["traffic"]["bytes"], units)
    want = layout(ctx.geo.dim, 4 * ctx.width, ctx.shard.k).as_dict()
    assert got["parity_delta"] == want["parity_delta"]
    assert got["row_grad"] == want["row_grad"] and got["pooled"] == want["pooled"]
    assert got["lookup"] == pytest.approx(want["lookup"], rel=0.1)  # + each request's shape


def test_ecrec_survives_a_sigkill_bit_identical_without_pause(capsys, single, tmp_path):
    argv = ["train", "--procs", "3,2", "--strategy", "ecrec", "--kill", "server=1,step=15"]
    assert main([*argv, *TINY, "--run-dir", str(tmp_path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["final_state_sha256"] == out["failure_free_sha256"] == single.final_state_sha256
    assert out["identical_to_failure_free"] and out["parity_consistent"]
    assert out["pause_s"] < 0.05  # no state to restore, no step to re-execute
    kill, failed = out["events"][0], out["events"][1]
    assert kill["kill"] == "server:1" and failed["rebuilding"] == ["server:1"]
    assert out["traffic_bytes"]["repair"] > 0  # the replacement rebuilt from parity
    assert isinstance(out["overhead_pct"], float) and out["modeled_overhead_pct"] > 0
    # every phase of ECRec's schedule was timed in the processes and modeled beside
    from nmp.train.strategies import REGISTRY

    assert tuple(out["phases"]) == REGISTRY.get("ecrec").schedule.names()
    assert all(p["measured_ms"] is not None for p in out["phases"].values())
    assert all(p["modeled_ms"] is not None for p in out["phases"].values())
    assert out["measured"]["failure_free_repeat_pct"] is not None  # interleaved A B A
    repair = out["modeled"]["repair_s"]
    assert repair["rebuilds"] == 1 and repair["ranges"] >= 1 and repair["round_s"] > 0
    # the repair modeled: one blocking round among the replacement's peers per range, and the
    # repair's bytes on the link (none here: the processes share this machine)
    assert repair["modeled"] == pytest.approx(
        repair["rebuilds"] * repair["ranges"] * repair["round_s"] + repair["wire_s"], rel=1e-12
    )
    # the step modeled: the failure-free step at this run's speed plus the phases ECRec adds
    step, phases = out["modeled"]["step_ms"], out["phases"]
    added = out["modeled"]["added_phases"]
    assert added and step["modeled"] == pytest.approx(
        step["failure_free_at_speed"] + sum(phases[n]["modeled_ms"] for n in added), rel=1e-12
    )
    # the servers timed their parity update on the memory design (nmp.train.hwcost)
    assert out["phases"]["parity_xor"]["memory_model_ms"] > 0
    # ... and it is physical: the parity's in-memory XOR of a row costs more than nothing and
    # at most the data row's own read-modify-write plus a quarter (the XOR pass), on every
    # step the servers timed (tripling the design's parity_update breaks it)
    res = json.loads((tmp_path / "ecrec" / "result" / "server-0.json").read_text())["modeled"]
    assert res["parity_update_ns"] and len(res["parity_update_ns"]) == len(res["plain_update_ns"])
    for extra, plain in zip(res["parity_update_ns"], res["plain_update_ns"], strict=True):
        assert 0 < extra <= 1.25 * plain
    from nmp.train.dist.report import print_procs  # the text output of the same row

    print_procs(out)
    text = capsys.readouterr().out
    assert "parity_delta (server)" in text and "step " in text and "repair rounds" in text
    for key in ("auc", "final_state_sha256", "recovery_ns", "events"):  # nmp train's keys
        assert key in out


def test_ecrec_kill_in_the_commit_phase_and_again_during_the_rebuild(cfg, single, tmp_path):
    kills = ["server=1,step=12,phase=commit", "server=1,step=14"]
    rec = _launch(cfg, "ecrec", kills, tmp_path)
    failed = [e for e in rec["events"] if "failed" in e]
    assert len(failed) == 2 and failed[1]["rebuilding"] == ["server:1"]
    assert failed[0]["committed_steps"] == 13  # the commit held: the victim's step rolls forward
    assert rec["final_state_sha256"] == single.final_state_sha256
    assert rec["parity_consistent"]


def test_checkpoint_rolls_every_process_back_and_reexecutes(capsys, single, tmp_path):
    argv = ["train", "--procs", "3,2", "--strategy", "checkpoint", "--kill", "server=2,step=16"]
    assert main([*argv, *TINY, "--run-dir", str(tmp_path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["final_state_sha256"] == single.final_state_sha256
    assert out["events"][1]["rollback_to"] == 10
    assert out["pause_s"] > 0 and out["measured"]["reexec_s"] > 0
    # its schedule has no parity phase: the processes run none and send no delta
    assert "parity_delta" not in out["phases"] and not out["traffic_bytes"].get("parity_delta")
    files = list((tmp_path / "checkpoint" / "ckpt").glob("step-*/server-*.npz"))
    assert len(files) >= 3 * 3  # real files, every server, saves at steps 0, 10, 20
    # the run phases its schedule declares, each measured in the processes and modeled
    rp = out["modeled"]["run_phases"]
    assert set(rp["phases"]) == {"steps", "save", "regroup", "restore", "reexec", "between"}
    assert all(v["measured_s"] > 0 for k, v in rp["phases"].items() if k != "between")
    # six steps re-executed (16 -> 10), each at the failure-free runs' modeled step
    assert rp["phases"]["reexec"]["modeled_s"] == pytest.approx(6 * rp["inputs"]["step_s"])
    assert out["modeled_overhead_pct"] == pytest.approx(rp["overhead_pct"]["modeled"])
    assert out["measured"]["cpu"]["overhead_pct"] > 0  # the processes' CPU seconds


def test_cpr_reloads_only_the_lost_shard(cfg, single, tmp_path):
    rec = _launch(cfg, "cpr-ssu", ["server=0,step=15"], tmp_path)
    assert rec["final_state_sha256"] != single.final_state_sha256  # partial: some updates lost
    assert [e["resume_step"] for e in rec["events"] if "failed" in e] == [15]  # no rollback
    auc = rec["results"]["worker:0"]["metrics"]["auc"]
    assert abs(auc - single.metrics["auc"]) < 0.1


def test_kill_input_errors(capsys):
    base = ["train", "--strategy", "ecrec", *TINY]
    for extra, needle in (
        (["--kill", "server=1,step=5"], "--procs"),
        (["--procs", "3,2", "--kill", "server=9,step=5"], "servers 0..2"),
        (["--procs", "3,2", "--kill", "server=1,step=500"], "steps 1.."),
        (["--procs", "3,2", "--kill", "disk=1,step=5"], "unknown key"),
        (["--procs", "x"], "SERVERS,WORKERS"),
        (["--procs", "3,2", "--repeat", "0"], "--repeat"),
    ):
        try:
            code = main([*base, *extra])
        except SystemExit as exc:  # refused as the flag is parsed
            code = exc.code
        assert code == 1, extra
        err = capsys.readouterr().err
        assert needle in err and len(err.strip().splitlines()) == 1, err


def test_validate_states_the_extrapolations_error_against_the_small_cluster(monkeypatch):
    """The check's rows come from real runs; here the runs are stubbed to test the verdict."""
    from nmp.train import measured

    def fake(quick):
        row = {
            "strategy": "ecrec",
            # the run's CPUs ran 25 % slower: against the measured failure-free time +40 %,
            # against failure-free at the run's speed (as the model's) +12 %
            "overhead_pct": 40.0,
            "overhead_at_speed_pct": 12.0,
            "modeled_overhead_pct": 10.0,
            "overhead_noise95_pct": 1.25,
            "overhead_noise95_at_speed_pct": 1.0,
            "identical_to_failure_free": True,
            "procs": {"servers": 3, "workers": 2},
            "pause_s": 0.0,
            "measured": {"step_ms_median": 30.0, "failure_free_step_ms_median": 27.0},
            "modeled": {
                "model_inputs": {"link_gbps": 1.0, "link_latency_us": 50.0},
                "run_phases": {"inputs": {"work_speed": 1.25}},
            },
        }
        return [row, {**row, "strategy": "checkpoint", "modeled_overhead_pct": 36.0}]

    monkeypatch.setattr(measured, "rows", fake)
    ok, bad = measured.check_rows(True)
    # like with like: the measured overhead at the run's speed (not the raw +40 %)
    assert ok.verdict == "agrees" and "error -2.0 pp" in ok.model  # within 1 + 5 pp
    assert "+12.0 %" in ok.published and "1.250x" in ok.detail and "+40.0 %" in ok.detail
    assert bad.verdict == "disagrees" and bad.explanation  # 24 pp off: said, with why

    # the failure-free run repeated after the strategies' runs moved by 20 %: the machine's
    # drift widens the band by as much (24 pp off is then within 1 + 20 + 5), and is said
    def drifted(quick):
        return [{**r, "failure_free_repeat_pct": -20.0} for r in fake(quick)]

    monkeypatch.setattr(measured, "rows", drifted)
    ok, widened = measured.check_rows(True)
    assert widened.verdict == "agrees" and "failure-free again -20.0 %" in widened.published
    assert measured.band_pp(drifted(True)[0]) == pytest.approx(1.0 + 20.0 + measured.SLACK_PP)


def test_sc24_codec_sends_real_compressed_bytes_through_the_group(cfg, tmp_path):
    """The servers' partial sums and the workers' gradients cross the process group encoded
    by the codec (real bytes, decoded on arrival); training still learns."""
    comp = dataclasses.replace(cfg, compress="quant", steps=12, eval_batches=2)
    rec = _launch(comp, "failure-free", [], tmp_path)
    st = {"raw_bytes": 0, "sent_bytes": 0}
    for res in rec["results"].values():
        for d in (res.get("codec") or {}).values():
            st["raw_bytes"] += d["raw_bytes"]
            st["sent_bytes"] += d["sent_bytes"]
    assert st["raw_bytes"] > 2 * st["sent_bytes"]  # int8/int16 codes instead of float32
    assert rec["traffic"]["bytes"]["pooled"] < st["raw_bytes"]  # what went on the wire
    assert len(rec["results"]["worker:0"]["exchange_s"]) == 12


def test_a_codec_blob_survives_the_wire_bit_for_bit():
    import numpy as np

    from nmp.compress import make_codec
    from nmp.train.alltoall.exchange import from_wire, to_wire

    x = np.random.default_rng(0).standard_normal((40, 16)).astype(np.float32)
    for name in ("quant", "hybrid", "zstd"):
        codec = make_codec(name)
        enc = codec.encode(x, 0.03, table=0)
        assert np.array_equal(codec.decode(from_wire(to_wire(enc))), codec.decode(enc)), name
