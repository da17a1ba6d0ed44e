"""Every preset's ``nmp run --json`` output against a recorded fixture.

The fixture (``data/golden_runs.json``) holds each NMP preset on the default sweep's workloads,
on its own memory and on the default sweep's shared memory (DDR5-4800-40, 1 channel, 2 ranks).
It guards restructurings (outputs must stay identical) and is rewritten only in a commit that
changes the model on purpose, saying why:

    .venv/bin/python -m tests.arch.test_golden --write
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

from nmp.arch import load_arch_spec, run_design_point

DATA = Path(__file__).parent / "data" / "golden_runs.json"
PRESETS = ("host-cpu", "tensordimm", "recnmp", "trim-g", "trim-b", "recross")
WORKLOADS = ("recross-eval", "dlrm-benchmark")
SHARED = {"memory.preset": "ddr5-4800-40", "memory.channels": 1, "memory.ranks": 2}
# wall-clock measurements inside the breakdown (not model outputs)
VOLATILE = {"lp_solve_s"}
REL_TOL = 1e-9


def run_point(key: str) -> dict:
    arch, workload, memory = key.split("|")
    overrides = {"arch": SHARED} if memory == "shared" else {}
    return run_design_point(arch, workload, overrides=overrides).to_json()


def _own_is_shared(arch: str) -> bool:
    m = load_arch_spec(arch).memory
    return (m.preset, m.channels, m.ranks) == tuple(SHARED.values())


def keys(workload: str) -> list[str]:
    """Each preset on the shared memory, and on its own where that differs."""
    return [
        f"{a}|{workload}|{m}"
        for a in PRESETS
        for m in ("own", "shared")
        if m == "shared" or not _own_is_shared(a)
    ]


def diffs(want, got, path: str = "") -> list[str]:
    """Paths where ``got`` differs from ``want`` (floats to REL_TOL)."""
    if isinstance(want, dict) and isinstance(got, dict):
        out = []
        for k in sorted(set(want) | set(got)):
            if k in VOLATILE:
                continue
            if k not in want or k not in got:
                out.append(f"{path}.{k}: only in {'fixture' if k in want else 'run'}")
            else:
                out += diffs(want[k], got[k], f"{path}.{k}")
        return out
    if isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
        return [
            d
            for i, (a, b) in enumerate(zip(want, got, strict=True))
            for d in diffs(a, b, f"{path}[{i}]")
        ]
    if (
        isinstance(want, float | int)
        and isinstance(got, float | int)
        and not isinstance(want, bool)
    ):
        if math.isclose(want, got, rel_tol=REL_TOL, abs_tol=1e-12):
            return []
    elif want == got:
        return []
    return [f"{path}: fixture {want!r}, run {got!r}"]


@pytest.fixture(scope="module")
def golden() -> dict:
    return json.loads(DATA.read_text())


def _check(golden: dict, key: str) -> None:
    got = json.loads(json.dumps(run_point(key), default=float))
    found = diffs(golden[key], got)
    assert not found, f"{key}: " + "; ".join(found[:8])


@pytest.mark.parametrize("key", keys("recross-eval"))
def test_golden_recross_eval(golden, key):
    _check(golden, key)


@pytest.mark.slow
@pytest.mark.parametrize("key", keys("dlrm-benchmark"))
def test_golden_dlrm_benchmark(golden, key):
    _check(golden, key)


def write() -> None:
    out = {key: run_point(key) for w in WORKLOADS for key in keys(w)}
    DATA.parent.mkdir(exist_ok=True)
    tmp = DATA.with_suffix(".tmp")
    tmp.write_text(json.dumps(out, indent=1, sort_keys=True, default=float) + "\n")
    tmp.replace(DATA)


if __name__ == "__main__" and "--write" in sys.argv:
    write()
