"""The parity unit's front ends (nmp/rtl/input_modes.py): the config takes exactly the
registered names, and the builders, the simulator's stimulus and the exported testbench follow
a mode's data, not its name (a mode registered under a new name with ``old_new``'s data builds
the same unit, with its latency, ports and stimulus)."""

from __future__ import annotations

import dataclasses

import pytest

from nmp.errors import SpecError
from nmp.rtl.input_modes import INPUT_MODES
from nmp.rtl.parity import ParityUnitConfig
from nmp.rtl.sim import entry_inputs, simulate
from nmp.rtl.stream import random_stream
from nmp.rtl.verilog import module_text
from nmp.rtl.verilog import testbench_text as make_testbench


def test_the_config_takes_the_registered_names_only():
    assert list(INPUT_MODES.names()) == ["delta", "old_new"]
    for name in INPUT_MODES.names():
        assert ParityUnitConfig(depth=16, input_mode=name).front_end.name == name
    with pytest.raises(SpecError, match="input mode must be one of delta, old_new"):
        ParityUnitConfig(input_mode="old-new")


def test_each_mode_drives_its_ports_with_its_values():
    cfg = ParityUnitConfig(depth=16, stages=2)
    stream = random_stream(cfg, 8, seed=2)
    delta = entry_inputs(cfg, stream, 0)
    both = entry_inputs(dataclasses.replace(cfg, input_mode="old_new"), stream, 0)
    assert set(delta) == {"in_valid", "in_addr", "dbg_addr", "in_delta"}
    assert set(both) == {"in_valid", "in_addr", "dbg_addr", "in_old", "in_new"}
    assert delta["in_delta"] == both["in_old"] ^ both["in_new"]


def test_the_unit_follows_the_modes_data_not_its_name(monkeypatch):
    twin = dataclasses.replace(INPUT_MODES.get("old_new"), name="old_new_twin")
    monkeypatch.setitem(INPUT_MODES._items, twin.name, twin)
    cfg = {m: ParityUnitConfig(depth=16, stages=3, gf=True, input_mode=m) for m in INPUT_MODES}
    assert cfg["old_new_twin"].latency_cycles == cfg["old_new"].latency_cycles == 4
    assert cfg["delta"].latency_cycles == 3
    assert cfg["old_new_twin"].name == cfg["old_new"].name
    assert module_text(cfg["old_new_twin"]) == module_text(cfg["old_new"])
    stream = random_stream(cfg["old_new"], 60, seed=5)
    got = {m: simulate(c, stream) for m, c in cfg.items()}
    assert got["old_new_twin"].outputs == got["old_new"].outputs
    assert got["old_new_twin"].readback == got["old_new"].readback == got["delta"].readback
    assert got["delta"].outputs != got["old_new"].outputs  # one cycle earlier
    bench = {m: make_testbench(c, stream, 5) for m, c in cfg.items()}
    assert bench["old_new_twin"].replace("old_new_twin", "old_new") == bench["old_new"]
