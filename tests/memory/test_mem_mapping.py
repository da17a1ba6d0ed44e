"""Address mapping: README §2's bit layouts, round trips, the bank-group-interleaved mapping."""

from __future__ import annotations

import numpy as np
import pytest

from nmp.errors import SpecError, TraceError
from nmp.memory import decode_address, encode_address, load_memory


def _bits(spec, field, bit_positions):
    """Setting byte-address bit i sets bit j of `field`, for each (i, j)."""
    for i, j in bit_positions:
        f = decode_address(np.uint64(1) << np.uint64(i), spec)
        assert f[field][0] == 1 << j, (field, i, j, {k: int(v[0]) for k, v in f.items()})


def test_ddr4_1r_layout():
    spec = load_memory("ddr4-3200aa")
    _bits(spec, "column", [(6, 0), (12, 6)])
    _bits(spec, "bankgroup", [(13, 0), (14, 1)])
    _bits(spec, "bank", [(15, 0), (16, 1)])
    _bits(spec, "row", [(17, 0), (32, 15)])


def test_ddr4_2r_layout():
    spec = load_memory("ddr4-3200aa", ranks=2)
    _bits(spec, "rank", [(13, 0)])
    _bits(spec, "bankgroup", [(14, 0), (15, 1)])
    _bits(spec, "bank", [(16, 0), (17, 1)])
    _bits(spec, "row", [(18, 0), (33, 15)])


def test_ddr5_layout():
    spec = load_memory("ddr5-4800an")
    _bits(spec, "column", [(6, 0), (11, 5)])
    _bits(spec, "bankgroup", [(12, 0), (14, 2)])
    _bits(spec, "bank", [(15, 0), (16, 1)])
    _bits(spec, "row", [(17, 0)])


def test_hbm2_layout_cache_line_interleave():
    spec = load_memory("hbm2-2000", channels=8)
    _bits(spec, "column", [(5, 0), (9, 1), (12, 4)])
    _bits(spec, "channel", [(6, 0), (7, 1), (8, 2)])
    _bits(spec, "rank", [(13, 0)])
    _bits(spec, "bankgroup", [(14, 0), (15, 1)])
    _bits(spec, "bank", [(16, 0), (17, 1)])
    _bits(spec, "row", [(18, 0), (33, 15)])


@pytest.mark.parametrize(
    ("preset", "mapping"),
    [("ddr4-3200aa", "RoBaRaCoCh"), ("ddr4-3200aa", "RoBaRaCoBgCh"), ("hbm2-2000", "RoCoBaRaCh"),
     ("ddr5-4800-40", "RoBaRaCoBgCh")],
)  # fmt: skip
def test_encode_decode_round_trip(preset, mapping):
    spec = load_memory(preset, mapping=mapping)
    rng = np.random.default_rng(1)
    tx = spec.org.tx_bytes
    addr = rng.integers(0, spec.capacity_bytes // tx, 5000, dtype=np.int64).astype(np.uint64) * tx
    f = decode_address(addr, spec)
    np.testing.assert_array_equal(encode_address(spec, **f), addr)


def test_bankgroup_interleaved_mapping_rotates_bank_groups():
    spec = load_memory("ddr4-3200aa", mapping="RoBaRaCoBgCh")
    f = decode_address(np.arange(8) * 64, spec)
    assert list(f["bankgroup"]) == [0, 1, 2, 3, 0, 1, 2, 3]
    assert list(f["column"]) == [0, 0, 0, 0, 1, 1, 1, 1]


def test_bankgroup_interleave_streams_faster():
    from nmp.memory import make_requests, replay

    reqs = make_requests(np.arange(2048) * 64)
    robaracoch = replay(reqs, load_memory("ddr4-3200aa"))
    bg = replay(reqs, load_memory("ddr4-3200aa", mapping="RoBaRaCoBgCh"))
    # tCCD_S (4) instead of tCCD_L (8) between consecutive lines: ideally half the time, the
    # page openings (4 banks at once instead of one) take the rest
    assert bg.cycles_drained < 0.65 * robaracoch.cycles_drained


def test_mapping_errors():
    with pytest.raises(SpecError, match="unknown address mapping"):
        load_memory("ddr4-3200aa", mapping="RoBaXX")
    with pytest.raises(SpecError, match="once"):
        load_memory("ddr4-3200aa", mapping="RoBaRaCo")
    spec = load_memory("ddr4-3200aa")
    with pytest.raises(TraceError, match="beyond capacity"):
        decode_address(spec.capacity_bytes, spec)
    with pytest.raises(SpecError, match="out of range"):
        encode_address(spec, bank=4)
