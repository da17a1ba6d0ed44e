"""``nmp replay``'s path without numpy (nmp/memory/text_replay.py): the same statistics as the
driver's replay of the same trace, and None (the general path) wherever it does not apply."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from nmp.memory import load_memory, make_requests, native, replay, write_trace
from nmp.memory.text_replay import replay_text
from nmp.memory.trace import parse_trace_bytes
from nmp.reference import case_memory_spec
from tests.memory.memref import load_cases, require_ref

pytestmark = pytest.mark.skipif(not native.available(), reason="the C engine is not built here")


def _both(data: bytes, spec, drain: bool) -> tuple[dict, dict]:
    got = replay_text(data, spec, drain=drain)
    assert got is not None
    want = replay(parse_trace_bytes(data, "trace"), spec, drain=drain)
    return got.to_json(), want.to_json()


# one case of each configuration (HBM2: two transactions per line, 8 channels; writes)
CASES = [
    "emb_zipf_a0.8_r1m_rb64_p40@ddr4_1r",
    "emb_uniform_r4m_rb256_p20@ddr4_2r",
    "random64_4g@ddr5_1r",
    "random_rw50_4g@hbm2_8ch",
]


@pytest.mark.parametrize("case_id", CASES)
@pytest.mark.parametrize("drain", [True, False], ids=["drain", "no-drain"])
def test_a_reference_case_gives_the_drivers_figures(case_id, drain) -> None:
    ref = require_ref()
    case = next(c for c in load_cases() if c["id"] == case_id)
    data = gzip.decompress((ref / case["trace"]).read_bytes())
    got, want = _both(data, case_memory_spec(case["memory_args"]), drain)
    assert got == want
    if not drain:  # Ramulator 2's own figure
        assert got["cycles"] == case["ramulator2"]["cycles"]


def test_writes_and_a_closed_row_policy(tmp_path) -> None:
    """Writes (the write buffer, forwarding) on a two-rank DDR4 with closed rows: the writes
    reach the engine and the read sums skip them."""
    rng = np.random.default_rng(7)
    spec = load_memory("ddr4-3200aa", ranks=2, overrides={"controller.row_policy": "closed"})
    addr = (rng.integers(0, 1 << 22, 3000) * 64).astype(np.uint64)
    path = tmp_path / "t.trace"
    write_trace(make_requests(addr, rng.random(3000) < 0.3), path)
    got, want = _both(path.read_bytes(), spec, True)
    assert got == want and got["writes"] > 0 and got["cmd_counts"]["WR"] > 0


@pytest.mark.parametrize(
    "text",
    [
        b"0x40 READ 0\n0x80 WRITE 3\n",  # DRAMsim3's form
        b"# a comment\nLD 0x40\n",
        b"LD 0x40\r\nLD 0x80\r\n",
        b"",
        b"LD 0x" + b"f" * 12 + b"\n",  # beyond the capacity: the general path names it
    ],
    ids=["dramsim3", "comment", "crlf", "empty", "beyond-capacity"],
)
def test_anything_else_takes_the_general_path(text) -> None:
    assert replay_text(text, load_memory("ddr4-3200aa"), drain=True) is None


def test_the_numba_engine_chosen_takes_the_general_path(monkeypatch) -> None:
    monkeypatch.setenv("NMP_ENGINE", "numba")
    assert replay_text(b"LD 0x40\n", load_memory("ddr4-3200aa"), drain=True) is None
