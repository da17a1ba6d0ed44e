"""The tutorials in examples/ run as a user runs them (each under a minute) and say what they
promise; the public API they use is what nmp/__init__.py states."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import nmp

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("0*.py"))
# a line each tutorial must print: its point, checked, not just "it ran"
EXPECT = {
    "01_replay_a_trace.py": "cycles 370874, row hits/misses/conflicts 657/225/40078",
    "02_compare_designs.py": "recross   speedup",
    "03_parity_in_memory.py": "rows recovered, bit-identical",
    "04_train_with_failures.py": "ecrec  AUC",
    "05_custom_sweep.py": "4 points",
}


def test_every_tutorial_is_checked() -> None:
    assert [p.name for p in EXAMPLES] == sorted(EXPECT)


@pytest.mark.slow
@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_tutorial_runs(path: Path) -> None:
    proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert EXPECT[path.name] in proc.stdout, proc.stdout
    if path.name == "04_train_with_failures.py":
        assert "failure-free: True" in proc.stdout


def test_public_api_resolves_lazily() -> None:
    code = (
        "import sys, nmp; heavy = [m for m in ('numba', 'torch', 'pyrtl') if m in sys.modules];"
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout
    assert out.strip() == "[]"  # import nmp stays light
    for name in nmp.__all__:
        assert getattr(nmp, name) is not None
