"""A part no GPU preset has is calibrated once and kept in the user cache, never in the
package's shipped file (which a run only reads)."""

from __future__ import annotations

import os
from dataclasses import replace

import pytest

import nmp.gpu.hbm as hbm_mod
from nmp.gpu import load_gpu


@pytest.fixture
def own_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("NMP_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(hbm_mod, "_MEMO", {})
    return tmp_path / "cache"


def test_new_part_goes_to_the_user_cache_and_is_read_back(own_cache, monkeypatch):
    shipped = hbm_mod.CALIBRATION_FILE.read_bytes()
    base = load_gpu("a100-80gb").hbm
    part = replace(base, channel_interleave_bytes=base.channel_interleave_bytes * 2)
    known = replace(hbm_mod.hbm_calibration(base), calibrated_against="stand-in for a replay")
    calls = []
    monkeypatch.setattr(hbm_mod, "calibrate", lambda h: calls.append(h) or known)

    assert hbm_mod.hbm_calibration(part) == known
    assert calls == [part]
    assert hbm_mod.CALIBRATION_FILE.read_bytes() == shipped
    entries = list((own_cache / "hbm").glob("*.json"))
    assert len(entries) == 1 and not os.stat(entries[0]).st_mode & 0o077

    # a new process (no memo) reads the entry back rather than replaying again
    monkeypatch.setattr(hbm_mod, "_MEMO", {})
    assert hbm_mod.hbm_calibration(part) == known
    assert calls == [part]


def test_an_entry_another_user_could_write_is_not_read(own_cache, monkeypatch):
    base = load_gpu("a100-80gb").hbm
    part = replace(base, read_queue=base.read_queue * 2)
    known = replace(hbm_mod.hbm_calibration(base), calibrated_against="first replay")
    monkeypatch.setattr(hbm_mod, "calibrate", lambda h: known)
    hbm_mod.hbm_calibration(part)
    (entry,) = (own_cache / "hbm").glob("*.json")
    os.chmod(entry, 0o666)

    again = replace(known, calibrated_against="second replay")
    monkeypatch.setattr(hbm_mod, "calibrate", lambda h: again)
    monkeypatch.setattr(hbm_mod, "_MEMO", {})
    assert hbm_mod.hbm_calibration(part) == again
