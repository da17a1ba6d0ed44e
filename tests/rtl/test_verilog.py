"""Verilog export: deterministic, legal names, and Icarus / Verilator reproduce PyRTL exactly."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from nmp.rtl.parity import ParityUnitConfig, build_unit
from nmp.rtl.sim import simulate
from nmp.rtl.stream import random_stream
from nmp.rtl.verilog import (
    DEFAULT_ENTRIES,
    DEFAULT_SEED,
    check_identifiers,
    export,
    module_text,
)
from nmp.rtl.verilog import testbench_text as make_testbench

from .conftest import require_tool

REPO = Path(__file__).resolve().parents[2]
ENTRIES = 300
SEED = 7
VARIANTS = [
    ParityUnitConfig(width=64, depth=16, stages=2),
    ParityUnitConfig(width=64, depth=16, stages=3, input_mode="old_new"),
    ParityUnitConfig(width=128, depth=16, stages=2, gf=True),
    ParityUnitConfig(width=64, depth=16, stages=4, gf=True, input_mode="old_new"),
]
VERILATOR_VARIANTS = [VARIANTS[1], VARIANTS[2]]  # between them: XOR, GF, delta, old/new


def parse_run(text: str) -> tuple[list[tuple[int, ...]], dict[int, int], bool]:
    cycles, readback = [], {}
    for line in text.splitlines():
        parts = line.split()
        if parts[:1] == ["C"]:
            cycles.append(tuple(int(p, 16) for p in parts[2:6]))
        elif parts[:1] == ["R"]:
            readback[int(parts[1], 16)] = int(parts[2], 16)
    return cycles, readback, any(line.startswith("PASS") for line in text.splitlines())


def pyrtl_run(cfg: ParityUnitConfig):
    result = simulate(cfg, random_stream(cfg, ENTRIES, seed=SEED))
    return result.outputs, result.readback


def test_default_export_in_repo_is_current(tmp_path):
    cfg = ParityUnitConfig()
    for path in export(cfg, tmp_path, entries=DEFAULT_ENTRIES, seed=DEFAULT_SEED):
        kept = REPO / "rtl" / path.name
        assert kept.exists(), f"{kept} missing: run `nmp rtl export`"
        assert kept.read_text() == path.read_text(), f"{kept} is stale: run `nmp rtl export`"


def test_export_is_deterministic_and_names_are_legal():
    cfg = VARIANTS[3]
    first = module_text(cfg)
    build_unit(VARIANTS[2])  # advances PyRTL's global name counters
    assert module_text(cfg) == first
    stream = random_stream(cfg, 50, seed=1)
    tb = make_testbench(cfg, stream, 1)
    assert check_identifiers(first) == [] and check_identifiers(tb) == []
    assert f"module {cfg.name}(" in first and f"module {cfg.name}_tb;" in tb
    assert check_identifiers("wire [3:0] 9bad;") == ["9bad"]
    assert check_identifiers("reg new;") == ["new"]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    out = tmp_path_factory.mktemp("rtl")
    for cfg in VARIANTS:
        export(cfg, out, entries=ENTRIES, seed=SEED)
    return out


@pytest.mark.parametrize("cfg", VARIANTS, ids=lambda c: c.name)
def test_icarus_matches_pyrtl(exported, cfg):
    require_tool("iverilog")
    require_tool("vvp")
    src = [exported / f"{cfg.name}.v", exported / f"{cfg.name}_tb.v"]
    binary = exported / f"{cfg.name}.vvp"
    subprocess.run(["iverilog", "-g2012", "-o", str(binary), *map(str, src)], check=True)
    run = subprocess.run(["vvp", "-n", str(binary)], capture_output=True, text=True, check=True)
    cycles, readback, passed = parse_run(run.stdout)
    assert passed, run.stdout[-2000:]
    assert (cycles, readback) == pyrtl_run(cfg)


def test_icarus_runs_the_repo_testbench(tmp_path):
    require_tool("iverilog")
    name = ParityUnitConfig().name
    src = [REPO / "rtl" / f"{name}.v", REPO / "rtl" / f"{name}_tb.v"]
    subprocess.run(["iverilog", "-g2012", "-o", str(tmp_path / "tb"), *map(str, src)], check=True)
    run = subprocess.run(["vvp", "-n", str(tmp_path / "tb")], capture_output=True, text=True)
    assert f"PASS {name}_tb" in run.stdout, run.stdout[-2000:]


@pytest.fixture(scope="module")
def verilator_bin(exported):
    """Build one configuration's Verilator model on first use, once per session (or xdist
    worker): builds take seconds."""
    require_tool("verilator")
    require_tool("make")  # Verilator builds its C++ model with make and a C++ compiler
    require_tool("g++")
    bins: dict[str, Path] = {}

    def build(cfg: ParityUnitConfig) -> Path:
        if cfg.name not in bins:
            mdir = exported / f"obj_{cfg.name}"
            cmd = [
                "verilator", "--binary", "--timing", "-Wno-fatal", "-Wno-lint", "-Wno-style",
                # the C++ compile dominates; -O0 halves it and the runs are short
                "-MAKEFLAGS", "OPT_FAST=-O0 OPT_SLOW=-O0 OPT_GLOBAL=-O0",
                "--top-module", f"{cfg.name}_tb", "-Mdir", str(mdir), "-o", "sim",
                str(exported / f"{cfg.name}.v"), str(exported / f"{cfg.name}_tb.v"),
            ]  # fmt: skip
            subprocess.run(cmd, check=True, capture_output=True)
            bins[cfg.name] = mdir / "sim"
        return bins[cfg.name]

    return build


@pytest.mark.parametrize("cfg", VERILATOR_VARIANTS, ids=lambda c: c.name)
def test_verilator_matches_pyrtl(verilator_bin, cfg):
    run = subprocess.run([str(verilator_bin(cfg))], capture_output=True, text=True, check=True)
    cycles, readback, passed = parse_run(run.stdout)
    assert passed, run.stdout[-2000:]
    assert (cycles, readback) == pyrtl_run(cfg)
