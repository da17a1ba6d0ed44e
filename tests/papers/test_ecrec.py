"""ECRec's claim models under the kit's defaults and under the artifact's setup."""

from __future__ import annotations

import pytest

from nmp.errors import NmpError
from nmp.papers.ecrec import model as claims

PAPER = {"train.deployment": "ecrec"}


def test_the_artifact_setup_and_the_kit_defaults_are_both_run():
    paper = claims.overhead_reduction_pct(quick=True, setup=PAPER)
    kit = claims.overhead_reduction_pct(quick=True)
    assert "deployment ecrec" in paper["detail"] and "deployment default" in kit["detail"]
    # The parity's delta and XOR are on the push's critical path (the artifact's schedule):
    # on the artifact's setup they add ~5.5 % to every step, above Ckpt-30's 1.4 %, so ECRec
    # removes none of checkpointing's overhead; nor under the kit's defaults.
    assert paper["value"] < 0.0 and kit["value"] < 0.0
    assert not claims.overhead_lower(quick=True, better="ecrec", worse="checkpoint", setup=PAPER)[
        "value"
    ]


def test_the_order_turns_on_the_schedule(monkeypatch):
    """Declared in the background (overlapped with the next step, which the artifact does not
    do), the parity's phases cost nothing and ECRec's overhead falls below checkpointing's:
    the conclusion rests on the schedule, which the strategy's one object states."""
    from dataclasses import replace

    from nmp.train.schedule import COMMON, Schedule
    from nmp.train.strategies import REGISTRY

    cls = REGISTRY.get("ecrec")
    behind = Schedule(
        tuple(p if COMMON.has(p.name) else replace(p, background=True) for p in cls.schedule.step)
    )
    monkeypatch.setattr(cls, "schedule", behind)
    claims._expected.cache_clear()  # (the claims cache the rows of a setup)
    got = claims.overhead_lower(quick=True, better="ecrec", worse="checkpoint", setup=PAPER)
    claims._expected.cache_clear()
    assert got["value"]


def test_recovery_speedup_follows_the_restart_time():
    base = claims.recovery_speedup(quick=True, setup=PAPER)["value"]
    slow = claims.recovery_speedup(quick=True, setup={**PAPER, "train.restart_s": 600.0})["value"]
    assert slow > base * 1.1


def test_an_unknown_setup_key_is_an_error():
    with pytest.raises(NmpError, match="unknown setup key"):
        claims.recovery_speedup(quick=True, setup={"train.no_such_field": 1})
