"""ECRec's claim models under the kit's defaults and under the artifact's setup."""

from __future__ import annotations

import pytest

from nmp.errors import NmpError
from nmp.train import claims

PAPER = {"train.deployment": "ecrec"}


def test_the_artifact_setup_and_the_kit_defaults_are_both_run():
    paper = claims.overhead_reduction_pct(quick=True, setup=PAPER)
    kit = claims.overhead_reduction_pct(quick=True)
    assert "deployment ecrec" in paper["detail"] and "deployment default" in kit["detail"]
    # the artifact's servers have NIC slack for the deltas; the kit's deployment does not
    assert paper["value"] > 50.0 > kit["value"]
    assert claims.overhead_lower(quick=True, better="ecrec", worse="checkpoint", setup=PAPER)[
        "value"
    ]


def test_a_slower_server_nic_reverses_the_order():
    # 25 Gbit/s servers (the artifact's commented-out r5n.8xlarge) bound the step by the deltas
    slow = {**PAPER, "train.network_gbps": 3.125}
    got = claims.overhead_lower(quick=True, better="ecrec", worse="checkpoint", setup=slow)
    assert not got["value"]


def test_recovery_speedup_follows_the_restart_time():
    base = claims.recovery_speedup(quick=True, setup=PAPER)["value"]
    slow = claims.recovery_speedup(quick=True, setup={**PAPER, "train.restart_s": 600.0})["value"]
    assert slow > base * 1.1


def test_an_unknown_setup_key_is_an_error():
    with pytest.raises(NmpError, match="unknown setup key"):
        claims.recovery_speedup(quick=True, setup={"train.no_such_field": 1})
