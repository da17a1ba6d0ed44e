"""The streams of a design point on fewer bank groups or banks (nmp.memory.plan's
``narrowed``): a ReCross rank unit's lines lie in half of its view's bank groups, a
bank-group unit's in one; each stream's run on the narrower organization gives every output
of the full one (tests/memory/test_mem_narrow.py compares command logs too)."""

from __future__ import annotations

import numpy as np
import pytest

from nmp.arch import run_design_point
from nmp.arch.replay_cache import REPLAYS
from nmp.memory import native
from nmp.memory import plan as plan_module

pytestmark = pytest.mark.skipif(not native.available(), reason="the native engine is not built")


def test_design_point_streams_run_narrower_with_the_same_results(monkeypatch):
    seen: list = []
    original = plan_module._Plan.narrowed

    def spy(self, addr, drain, bits=None):
        seen.append((self, addr.copy(), drain))
        return original(self, addr, drain, bits)

    monkeypatch.setattr(plan_module._Plan, "narrowed", spy)
    monkeypatch.setattr(REPLAYS, "max_bytes", 0)
    small = {"workload": {"rows": [1000, 500, 3000, 7], "batch": 8}}
    run_design_point("recross", "recross-eval", overrides=small, seed=3)
    monkeypatch.setattr(plan_module._Plan, "narrowed", original)
    narrowed = 0
    for plan, addr, drain in seen:
        n = len(addr)
        lines = (addr, np.zeros(n, np.int8), np.zeros(n, np.int64))
        full = (plan.native_decode, plan.engine_params(drain, True))
        narrow = plan.narrowed(addr, drain)
        no_log = np.full((0, 5), -1, np.int64)
        a = native.simulate(*lines, *full, *plan.tables, no_log)
        b = native.simulate(*lines, *narrow, *plan.tables, no_log)
        for k, (x, y) in enumerate(zip(a, b, strict=True)):  # (the evaluations included)
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y), err_msg=f"output {k}")
        narrowed += narrow[1] is not full[1]
    # the rank and the bank-group units' streams (not the bank units': all 8 banks)
    assert 2 <= narrowed < len(seen)
