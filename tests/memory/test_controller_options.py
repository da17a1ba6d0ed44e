"""A controller's named options (nmp/memory/controller_options.py): the spec takes exactly the
registered names, and the engine follows an option's switches, not its name (a row policy
registered under a new name with the closed policy's switch replays as closed)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from nmp.errors import SpecError
from nmp.memory import load_memory, make_requests, replay
from nmp.memory.controller_options import REFRESH_MODES, ROW_POLICIES


@pytest.mark.parametrize(
    ("key", "registry"),
    [("controller.row_policy", ROW_POLICIES), ("controller.refresh", REFRESH_MODES)],
)
def test_each_option_takes_the_registered_names_only(key, registry) -> None:
    for name in registry.names():
        load_memory("ddr4-3200aa", overrides={key: name})
    with pytest.raises(SpecError, match=rf"{key}.*unknown .*'nope' \(known: "):
        load_memory("ddr4-3200aa", overrides={key: "nope"})


def test_the_engine_follows_the_switch_not_the_name(monkeypatch) -> None:
    twin = dataclasses.replace(ROW_POLICIES.get("closed"), name="closed_twin")
    monkeypatch.setitem(ROW_POLICIES._items, twin.name, twin)
    reqs = make_requests(np.arange(64) * 64)  # one page, one bank
    stats = {
        name: replay(reqs, load_memory("ddr4-3200aa", overrides={"controller.row_policy": name}))
        for name in ("open", "closed", "closed_twin")
    }
    assert stats["closed_twin"].cmd_counts == stats["closed"].cmd_counts
    assert stats["closed_twin"].cycles_drained == stats["closed"].cycles_drained
    assert stats["open"].cmd_counts["ACT"] == 1 and stats["closed"].cmd_counts["ACT"] == 64
