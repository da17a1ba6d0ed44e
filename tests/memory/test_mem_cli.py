"""``nmp replay`` and ``nmp models`` from the command line: output and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nmp.cli import main
from nmp.memory import catalog_rows, load_memory

PRESETS = ["ddr4-3200aa", "ddr4-2400", "ddr5-4800an", "ddr5-4800-40", "hbm2-2000", "hbm3-6400"]


@pytest.fixture()
def small_trace(tmp_path):
    p = tmp_path / "s.trace"
    p.write_text("".join(f"LD {i * 64:#x}\nST {(i * 8192 + 64):#x}\n" for i in range(200)))
    return p


@pytest.mark.parametrize("preset", PRESETS)
def test_replay_json_every_preset(preset, small_trace, capsys):
    assert main(["replay", str(small_trace), "--memory", preset, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("cycles", "requests", "row_hits", "row_misses", "row_conflicts",
                "avg_read_latency_cycles", "energy_pj", "cycles_drained"):  # fmt: skip
        assert key in out
    spec = load_memory(preset)
    assert out["requests"] == 400 * spec.requests_per_line
    assert out["cycles_drained"] >= out["cycles"] > 0
    assert out["energy_pj"] > out["energy_breakdown_pj"]["io"] > 0


def test_replay_table(small_trace, capsys):
    assert main(["replay", str(small_trace), "--memory", "DDR4-3200AA", "--ranks", "2"]) == 0
    out = capsys.readouterr().out
    assert "row hits / misses / conflicts" in out and "ddr4-3200aa" in out


def _error(argv, capsys) -> str:
    rc = main(argv)
    err = capsys.readouterr().err.strip()
    assert rc != 0
    assert err.startswith("nmp: error:") and "\n" not in err
    return err


def test_bad_inputs_one_line_errors(tmp_path, small_trace, capsys):
    bad = tmp_path / "bad.trace"
    bad.write_text("LD 0x0\nLD 0x40\nLD 0x80 junk\n")
    assert "bad.trace:3:" in _error(["replay", str(bad)], capsys)
    assert "unknown memory preset 'ddr9'" in _error(["replay", str(small_trace), "--memory",
                                                     "ddr9"], capsys)  # fmt: skip
    far = tmp_path / "far.trace"
    far.write_text("LD 0x0\nLD 0x400000000\n")  # 16 GiB > 8 GiB
    assert "beyond capacity" in _error(["replay", str(far)], capsys)
    err = _error(["replay", str(small_trace), "--channels", "3"], capsys)
    assert "key '--channels'" in err and "power of two" in err  # the flag, not org.channels
    err = _error(["replay", str(small_trace), "--set", "org.channels=3"], capsys)
    assert "key 'org.channels'" in err and "power of two" in err
    err = _error(["replay", str(small_trace), "--set", "org.tx_bytes=128"], capsys)
    assert "inconsistent organization" in err
    err = _error(["replay", str(small_trace), "--mapping", "RoRoCo"], capsys)
    assert "mapping" in err
    err = _error(["replay", str(small_trace), "--set", "timing.nCl=24"], capsys)  # nCL misspelt
    assert "timing.nCl" in err and "not a timing parameter of DDR4" in err


def test_catalog_rows():
    rows = {r["name"]: r for r in catalog_rows()}
    assert set(PRESETS) <= set(rows)
    assert rows["ddr4-3200aa"]["peak_GB/s"] == 25.6
    assert rows["hbm2-2000"]["peak_GB/s"] == 256.0
    assert rows["hbm3-6400"]["peak_GB/s"] == 819.2
    assert rows["ddr5-4800-40"]["CL-tRCD-tRP"] == "40-40-40"
    assert rows["ddr4-2400"]["CL-tRCD-tRP"] == "16-16-16"
    assert rows["ddr4-3200aa"]["capacity_GiB"] == 8.0


def test_energy_per_command_matches_papers():
    from nmp.memory import command_energy_pj

    spec = load_memory("ddr4-3200aa")
    e = command_energy_pj(spec, {"ACT": 1, "RD": 1}, cycles=0)
    assert e["act"] == pytest.approx(4200, rel=0.01)  # PAPERS.md: about 4.2 nJ per ACT
    assert e["rd"] == pytest.approx(2784, rel=0.01)  # about 2.8 nJ per 64-B read
    assert e["io"] == pytest.approx(4.0 * 512)
    hbm = load_memory("hbm2-2000")
    e = command_energy_pj(hbm, {"ACT": 2, "RD": 2}, cycles=0)  # one 64-B line on a legacy channel
    assert e["act"] == pytest.approx(828, rel=0.02)  # PAPERS.md: about 0.83 nJ per ACT
    assert e["rd"] == pytest.approx(804, rel=0.02)  # about 0.80 nJ per 64-B read


def test_internal_view_and_with_org():
    from nmp.memory import encode_address, internal_view, make_requests, replay

    spec = load_memory("ddr4-3200aa", ranks=2)
    one = spec.with_org(ranks=1)
    assert one.org.ranks == 1 and one.capacity_bytes == spec.capacity_bytes // 2
    # a stream of row hits in one bank group: tCCD_L-bound whatever the bus level above
    reqs = make_requests(encode_address(one, column=list(range(128))))
    full = replay(reqs, one).cycles_drained
    assert replay(reqs, internal_view(one, "bankgroup")).cycles_drained == full
    # four bank groups in turn: tCCD_S (data bus) bound on the channel, tCCD_L per group inside
    cols = [c for c in range(32) for _ in range(4)]
    bgs = [g for _ in range(32) for g in range(4)]
    reqs = make_requests(encode_address(one, bankgroup=bgs, column=cols))
    shared = replay(reqs, one).cycles_drained
    private = replay(reqs, internal_view(one, "bankgroup")).cycles_drained
    assert private < shared


def test_replay_progress_hook_counts_transactions() -> None:
    """The driver's hook (issue 25: progress on long runs) sees every engine run, then none."""
    import numpy as np

    from nmp.memory import load_memory, make_requests, replay
    from nmp.memory.driver import on_replay

    seen: list[int] = []
    spec = load_memory("ddr4-3200aa")
    reqs = make_requests(np.arange(300, dtype=np.uint64) * 64)
    with on_replay(seen.append):
        replay(reqs, spec)
        replay(reqs[:100], spec)
    replay(reqs, spec)
    assert seen == [300, 100]


@pytest.mark.parametrize("value", ["-1", "0", "many"])
def test_engine_threads_from_the_environment_are_a_count(monkeypatch, value) -> None:
    """NMP_ENGINE_THREADS=-1 ran on one thread without a word (NMP_THREADS refuses it)."""
    from nmp.errors import NmpError
    from nmp.memory.backend import engine_threads

    monkeypatch.setenv("NMP_ENGINE_THREADS", value)
    with pytest.raises(NmpError, match="NMP_ENGINE_THREADS=.*a count of threads >= 1"):
        engine_threads(8, 10**6)
    monkeypatch.setenv("NMP_ENGINE_THREADS", "3")
    assert engine_threads(8, 10**6) == 3


TRACE = str(Path(__file__).resolve().parents[2] / "traces" / "emb_zipf_a0.8_r1m_rb64_p40.trace.gz")


@pytest.mark.parametrize(("debug", "raises"), [("", False), ("0", False), ("1", True)])
def test_nmp_debug_0_keeps_the_one_line_error(monkeypatch, capsys, debug, raises) -> None:
    """NMP_DEBUG=0 showed the traceback, as NMP_DEBUG=1 does."""
    import nmp.memory.cli as memory_cli

    def broken(args):
        raise RuntimeError("a bug")

    monkeypatch.setattr(memory_cli, "memory_spec", broken)
    monkeypatch.setenv("NMP_DEBUG", debug)
    if raises:
        with pytest.raises(RuntimeError, match="a bug"):
            main(["replay", TRACE])
        return
    assert main(["replay", TRACE]) == 1
    assert "internal error: RuntimeError: a bug" in capsys.readouterr().err
