"""A strategy's rows at scale are picked by their labels, never by a prefix of its name.

Checkpointing prices one row per checkpoint interval (``checkpoint``, or ``checkpoint-30min``
and ``checkpoint-60min``); the crossover, the closing note of ``nmp train --extrapolate`` and the
CPR and ECRec claim models took "every row whose label starts with checkpoint", so a strategy a
user added as ``checkpoint-lite`` (docs/extending.md: a module and nothing else) became
checkpointing's cheapest interval and changed the papers' verdicts.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from nmp.train.extrapolate import DeploymentSpec, expected, row_labels
from nmp.train.extrapolate_report import closing_note
from nmp.train.strategies import REGISTRY, register
from nmp.train.strategies.reinit import Reinit

LITE = "checkpoint-lite"


class CheckpointLite(Reinit):
    """Not a checkpoint: the ``none`` strategy under a name that starts like one."""

    name = LITE
    listing_order = 99


@pytest.fixture
def lite() -> Iterator[None]:
    from nmp.papers.cpr import model as cpr
    from nmp.papers.ecrec import model as ecrec

    REGISTRY.load()
    register(CheckpointLite)
    cpr._expected.cache_clear()
    ecrec._expected.cache_clear()
    try:
        yield
    finally:
        REGISTRY.unregister(LITE)
        cpr._expected.cache_clear()
        ecrec._expected.cache_clear()


def test_the_labels_of_a_strategy_are_its_name_or_one_per_interval():
    dep = DeploymentSpec()
    assert row_labels("checkpoint", dep) == {"checkpoint"}
    fixed = replace(dep, interval="fixed", interval_min=(30.0, 60.0))
    assert row_labels("checkpoint", fixed) == {
        "checkpoint",
        "checkpoint-30min",
        "checkpoint-60min",
    }


def test_a_strategy_named_like_checkpointing_is_not_taken_for_it(lite):
    from nmp.papers.cpr.model import overhead_pct
    from nmp.papers.ecrec.model import ecrec_never_pauses
    from nmp.train.crossover import _overheads

    dep = DeploymentSpec()
    rows = {r["strategy"]: r for r in expected(dep)}
    assert rows[LITE]["overhead_pct"] < rows["checkpoint"]["overhead_pct"]  # it would win
    assert _overheads(dep)["checkpoint"] == rows["checkpoint"]["overhead_pct"]
    cpr_full = overhead_pct(quick=True, strategy="checkpoint")["value"]
    assert cpr_full == rows["checkpoint"]["overhead_pct"]
    assert ecrec_never_pauses(quick=True)["value"]  # its pause is not the lite one's
    note = "\n".join(closing_note(list(rows.values()), dep))
    assert f"{LITE}'s" not in note and "checkpoint's" in note
