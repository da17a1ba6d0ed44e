"""Issue 25: the critical path read 856 ps for XOR and GF(2^8) at every width. It is the
read-modify-write hazard path, which depends on the depth (address compare) and not on the
width in PyRTL's timing model (see nmp.rtl.synth's docstring)."""

from __future__ import annotations

from nmp.rtl.parity import ParityUnitConfig
from nmp.rtl.synth import critical_path


def _cp(**kw):
    return critical_path(ParityUnitConfig(**{"width": 64, "depth": 1024, "stages": 2, **kw}))


def test_the_critical_path_is_the_forwarding_path_into_the_write_port() -> None:
    length, ends, ops = _cp()
    assert "wr_data" in ends  # the parity SRAM's write data
    # address compare, enable, forward mux, XOR with the delta, clear mux
    assert ops == ["=", "&", "x", "^", "x"]
    assert 700 < length < 1000


def test_it_grows_with_the_depth_not_the_width() -> None:
    assert _cp(depth=16)[0] < _cp(depth=1024)[0] < _cp(depth=65536)[0]
    assert _cp(width=64)[0] == _cp(width=512)[0]
    # the GF(2^8) multiply has its own stage: same clock as XOR
    assert _cp(gf=True, width=512)[0] == _cp(width=512)[0]
