"""PyRTL simulation of every parity-unit variant against the nmp.coding reference."""

from __future__ import annotations

import numpy as np
import pyrtl
import pytest

from nmp.coding.gf256 import MUL
from nmp.errors import SpecError
from nmp.rtl.gf import gf_scale_word
from nmp.rtl.parity import ParityUnitConfig
from nmp.rtl.sim import simulate
from nmp.rtl.stream import random_stream, reference_writes


def hazards(stream, window: int) -> int:
    """Valid updates whose address a valid update of the previous ``window`` cycles (stream
    entries, bubbles included: after the clear sweep the unit takes one entry per cycle) also
    updated: its SRAM read misses that write, so only forwarding makes it right."""
    v, a = stream.valid, stream.addr
    return sum(
        int(np.any(v[max(0, t - window) : t] & (a[max(0, t - window) : t] == a[t])))
        for t in np.nonzero(v)[0]
    )


VARIANTS = [
    ParityUnitConfig(width=64, depth=16, stages=2),
    ParityUnitConfig(width=64, depth=16, stages=4),
    ParityUnitConfig(width=128, depth=32, stages=3, input_mode="old_new"),
    ParityUnitConfig(width=64, depth=16, stages=2, gf=True),
    ParityUnitConfig(width=64, depth=32, stages=3, gf=True, input_mode="old_new"),
    ParityUnitConfig(width=512, depth=8, stages=2, gf=True),
]


@pytest.mark.parametrize("cfg", VARIANTS, ids=lambda c: c.name)
def test_unit_matches_reference(cfg):
    entries = 600 if cfg.width == 512 else 3000
    stream = random_stream(cfg, entries, seed=cfg.width + cfg.stages)
    assert hazards(stream, cfg.stages - 1) > entries // 50  # read-modify-write hazards abound
    result = simulate(cfg, stream)
    assert result.update_writes(cfg) == reference_writes(stream)
    final = {a: int.from_bytes(w, "little") for a, w in stream.final_parity.items()}
    assert result.readback == final  # parity equals a fresh nmp.coding encode
    ready = [r[0] for r in result.outputs]
    # in_ready is low while the clear sweep runs (the delta unit's buffer takes one entry)
    buffered = int(cfg.input_mode == "old_new")
    assert ready[buffered : cfg.depth] == [0] * (cfg.depth - buffered)
    assert all(ready[cfg.depth :])


def test_gf_lanes_exhaustive():
    """Every (byte, coefficient) pair through gf_scale_word vs the MUL table."""
    block = pyrtl.Block()
    with pyrtl.set_working_block(block):
        word = pyrtl.Input(64, "word")
        coef = pyrtl.Input(8, "coef")
        out = pyrtl.Output(64, "out")
        out <<= gf_scale_word(word, coef)
    sim = pyrtl.FastSimulation(block=block, tracer=None)
    xs = np.arange(256, dtype=np.uint8).reshape(32, 8)
    for c in range(256):
        for row in xs:
            sim.step({"word": int.from_bytes(row.tobytes(), "little"), "coef": c})
            got = np.frombuffer(int(sim.inspect("out")).to_bytes(8, "little"), np.uint8)
            assert np.array_equal(got, MUL[c, row]), (c, row)


@pytest.mark.parametrize(
    "field,value",
    [("width", 32), ("width", 72 + 1), ("depth", 1), ("stages", 1), ("input_mode", "x")],
)
def test_bad_config(field, value):
    with pytest.raises(SpecError, match=field):
        ParityUnitConfig(**{field: value})
