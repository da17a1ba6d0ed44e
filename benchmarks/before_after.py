"""Every benchmark of this checkout beside the same benchmark of another checkout, in one run.

A before/after figure is only worth comparing when both sides ran on the same machine under the
same load, so the two checkouts take turns: for each benchmark, this checkout then the other,
then (``--rounds 2``) the other then this one. Each run's output is kept in ``--out`` (one file
per benchmark, side and round) and printed, with the machine and its load before and after.

The other checkout runs with this interpreter and ``PYTHONPATH`` set to its root (its own
``nmp``, its own C engine build); a benchmark it does not have is reported as absent. Benchmarks
that need something this machine may lack say so themselves (``peers.py`` without
``$NMP_RAMULATOR2``/``$NMP_DRAMSIM3``, ``gpu_validate.py`` without a GPU: ``--dry-run``).

    .venv/bin/python benchmarks/before_after.py --other ../nmp-before [--rounds 2]
        [--only arch,coding] [--out bench-out]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from _host import load, machine  # benchmarks/ is on sys.path when a script runs

HERE = Path(__file__).resolve().parent
# name: arguments (each benchmark's defaults unless they take minutes; "{other}": the opposite
# checkout, for a script that times both itself)
BENCHMARKS = {
    "startup": ["--repeat", "7", "--other", "{other}"],
    "dram_replay": [],
    "arch": ["--points", "20"],
    "coding": ["--no-sim"],
    "cache": [],
    "compress": [],
    "workload": [],
    "evaluate": ["--points", "200"],
    "sweep_check": [],
    "gpu": [],
    "gpu_validate": ["--dry-run"],
    "shard": ["--time-limit", "20"],
    "train": [],
    "first_run": [],
    "peers": ["--quick"],
}


def run_one(root: Path, name: str, args: list[str], out: Path, timeout_s: float) -> str:
    """Run benchmark ``name`` of the checkout at ``root``; its output, also written to ``out``."""
    script = root / "benchmarks" / f"{name}.py"
    if not script.is_file():
        text = f"(absent in {root})\n"
    else:
        env = dict(os.environ, PYTHONPATH=str(root))
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(
                [sys.executable, str(script), *args],
                cwd=root,
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout_s,
            )
            text = proc.stdout + (
                f"[exit {proc.returncode}]\n{proc.stderr[-2000:]}" if proc.returncode else ""
            )
        except subprocess.TimeoutExpired:
            text = f"(timed out after {timeout_s:.0f} s)\n"
        text += f"[{time.perf_counter() - t0:.1f} s wall]\n"
    out.write_text(text)
    return text


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--other", type=Path, required=True, help="the other checkout's root")
    ap.add_argument("--rounds", type=int, default=1, help="1: this, other; 2: then other, this")
    ap.add_argument("--only", default="", help="comma-separated benchmark names")
    ap.add_argument("--out", type=Path, default=Path("bench-out"))
    ap.add_argument("--timeout", type=float, default=1200.0, help="seconds per run")
    a = ap.parse_args()
    this, other = HERE.parent, a.other.resolve()
    if not (other / "nmp").is_dir():
        sys.exit(f"before_after: error: {other} has no nmp/ folder (not a checkout of nmp)")
    names = [n for n in a.only.split(",") if n] or list(BENCHMARKS)
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        sys.exit(f"before_after: error: unknown benchmark(s) {', '.join(unknown)}")
    a.out.mkdir(parents=True, exist_ok=True)
    print(machine())
    print(f"load before: {load()}; this = {this}, other = {other}")
    for name in names:
        sides = [("this", this), ("other", other)]
        for r in range(a.rounds):
            for label, root in sides if r % 2 == 0 else sides[::-1]:
                opposite = other if root == this else this
                args = [x.replace("{other}", str(opposite)) for x in BENCHMARKS[name]]
                text = run_one(root, name, args, a.out / f"{name}.{label}.{r}.txt", a.timeout)
                print(f"\n===== {name} [{label}, round {r + 1}] =====\n{text}", flush=True)
    print(f"load after: {load()}")


if __name__ == "__main__":
    main()
