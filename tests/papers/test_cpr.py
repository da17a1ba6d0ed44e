"""CPR's claim models under the kit's defaults and under the paper's setup."""

from __future__ import annotations

import pytest

from nmp.errors import NmpError
from nmp.papers.cpr import model as cpr_claims

PAPER = {"train.deployment": "cpr"}


def test_both_columns_run_and_differ_where_the_deployment_does():
    kit = cpr_claims.overhead_pct(quick=True, strategy="checkpoint")
    paper = cpr_claims.overhead_pct(quick=True, strategy="checkpoint", setup=PAPER)
    assert "deployment default" in kit["detail"] and "deployment cpr" in paper["detail"]
    # the cpr deployment fails 6.4x as often per server, saves 4x slower
    assert paper["value"] > 3 * kit["value"]
    mfu = cpr_claims.overhead_pct(quick=True, strategy="cpr-mfu", setup=PAPER)
    ssu = cpr_claims.overhead_pct(quick=True, strategy="cpr-ssu", setup=PAPER)
    assert mfu["value"] != pytest.approx(ssu["value"], rel=0.02)  # not identical at scale
    assert "PLS with partial saves" in mfu["detail"]
    low = cpr_claims.overhead_lower(quick=True, better="cpr-mfu", worse="checkpoint", setup=PAPER)
    assert low["value"] and low["margin"] > 1.0


def test_fields_override_the_deployment():
    base = cpr_claims.overhead_pct(quick=True, strategy="cpr-mfu", setup=PAPER)["value"]
    more = {**PAPER, "train.cpr_fraction": 0.5, "train.bottom": [512, 256, 64]}
    got = cpr_claims.overhead_pct(quick=True, strategy="cpr-mfu", setup=more)["value"]
    assert got > base  # writes five times the rows per partial save


@pytest.mark.parametrize(
    "setup, match",
    [
        ({"train.serverz": 4}, r"unknown setup key\(s\) train\.serverz"),
        ({"train.servers": "8"}, "setup key 'train.servers' must be a int"),
        ({"train.deployment": "nope"}, "unknown training setup 'nope'"),
        ({"train.cpr_ssu_sample": 0.0}, r"key 'train.cpr_ssu_sample': must be in \(0, 1\]"),
    ],
)
def test_bad_setups_are_one_line_errors(setup, match):
    with pytest.raises(NmpError, match=match):
        cpr_claims.overhead_pct(quick=True, strategy="cpr-mfu", setup=setup)
    with pytest.raises(NmpError, match="no strategy 'cpr-lru'"):
        cpr_claims.overhead_pct(quick=True, strategy="cpr-lru")
