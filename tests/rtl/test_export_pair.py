"""`nmp rtl export` writes the module and its testbench together or neither."""

from __future__ import annotations

import errno
import os

import pytest

from nmp.errors import NmpError
from nmp.rtl.parity import ParityUnitConfig
from nmp.rtl.verilog import export

CFG = ParityUnitConfig(width=64, depth=16, stages=2)


def test_a_full_disk_leaves_neither_file(tmp_path, monkeypatch) -> None:
    """The disk fills while the testbench is synced: the module written before it is not
    renamed into place either (it was, without its testbench), and no temporary is left."""
    real_fsync, calls = os.fsync, []

    def full_on_second(fd: int) -> None:
        calls.append(fd)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", full_on_second)
    with pytest.raises(NmpError, match="No space left on device"):
        export(CFG, tmp_path / "out", entries=64, seed=5)
    assert list((tmp_path / "out").iterdir()) == []


def test_both_files_are_replaced_together(tmp_path) -> None:
    first = {p.name: p.read_text() for p in export(CFG, tmp_path, entries=8)}
    second = {p.name: p.read_text() for p in export(CFG, tmp_path, entries=64, seed=5)}
    assert set(first) == set(second) == {p.name for p in tmp_path.iterdir()}
    assert any(first[n] != second[n] for n in first)  # the testbench's stream changed
