"""The compiled pointer chase (``probe.c``): built with the kit's compiler choice
(:func:`nmp.memory.native_build.compiler`) into a private temporary folder and run as a
program, so that its timing is free of Python."""

from __future__ import annotations

import atexit
import functools
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from nmp.errors import NmpError
from nmp.memory.native_build import compiler

SOURCE = Path(__file__).with_name("probe.c")
# -O2: the chase loop is a chain of dependent loads either way; -march=native as the engine
FLAGS = ("-O2", "-march=native", "-std=gnu99", "-pthread", "-Wall", "-Wextra")


@dataclass(frozen=True)
class ChaseResult:
    ns_per_row: float  # one chain's time per row (its load latency with one chain)
    rows_per_ns: float  # all chains of all threads together


@functools.cache
def probe_program() -> Path:
    """The probe, compiled once per process into a fresh private folder (mkdtemp: mode 0700,
    so no one else can replace what is run)."""
    folder = Path(tempfile.mkdtemp(prefix="nmp-probe-"))
    atexit.register(shutil.rmtree, folder, True)  # removed when the process ends
    out = folder / "probe"
    cc = compiler()
    for cmd in (cc, ["cc"]):
        try:
            subprocess.run(
                [*cmd, *FLAGS, "-o", str(out), str(SOURCE)],
                check=True,
                capture_output=True,
                text=True,
            )
            return out
        except (OSError, subprocess.CalledProcessError) as exc:
            err = getattr(exc, "stderr", "") or str(exc)
    raise NmpError(f"cannot build the pointer chase {SOURCE}: {err.strip().splitlines()[-1:]}")


def chase(
    bytes_: int,
    *,
    chains: int = 1,
    threads: int = 1,
    steps: int,
    seed: int = 1,
    row_bytes: int = 64,
    huge: bool = True,
) -> ChaseResult:
    """Run the probe: ``threads`` threads each following ``chains`` random chases over a
    ``bytes_`` buffer of ``row_bytes`` rows for ``steps`` rows per chain (``huge``: on 2-MiB
    pages, translation out of the way; ``chains`` 0: sequential reads, ``steps`` passes)."""
    return chases(
        bytes_,
        (chains,),
        threads=threads,
        steps=steps * max(chains, 1),
        seed=seed,
        row_bytes=row_bytes,
        huge=huge,
    )[0]


def chases(
    bytes_: int,
    chain_counts: tuple[int, ...],
    *,
    threads: int = 1,
    steps: int,
    seed: int = 1,
    row_bytes: int = 64,
    huge: bool = True,
) -> list[ChaseResult]:
    """:func:`chase` for each of ``chain_counts`` on one buffer (built once), each count
    reading ``steps`` rows in all (``steps / count`` per chain)."""
    counts = ",".join(str(c) for c in chain_counts)
    args = [str(probe_program()), str(bytes_), counts, str(threads), str(steps)]
    args += [str(seed), str(row_bytes), "1" if huge else "0"]
    try:
        done = subprocess.run(args, check=True, capture_output=True, text=True)
    except subprocess.CalledProcessError as exc:
        raise NmpError(f"pointer chase failed: {exc.stderr.strip()}") from None
    return [parse_output(line) for line in done.stdout.splitlines() if line.strip()]


def stream_gbps(bytes_: int, *, threads: int, passes: int) -> float:
    """Sequential read bandwidth (GB/s) of ``threads`` threads, each over its slice of a
    ``bytes_`` buffer, ``passes`` times."""
    r = chase(bytes_, chains=0, threads=threads, steps=passes, huge=True)
    return r.rows_per_ns * 64


def parse_output(text: str) -> ChaseResult:
    """The probe's one line: '<ns per row per chain> <rows per ns> <sink>'."""
    parts = text.split()
    try:
        return ChaseResult(float(parts[0]), float(parts[1]))
    except (IndexError, ValueError):
        raise NmpError(f"pointer chase printed {text.strip()!r}, not two numbers") from None


__all__ = ["ChaseResult", "chase", "parse_output", "probe_program", "stream_gbps"]
