"""First-run cost of the two commands a new user types first (issue 25's targets: the first
`nmp replay` of the README trace under 5 s, the first `nmp run --arch recross --workload
recross-eval` under 10 s, after `make`'s install step, with an empty user cache).

Each command runs in a fresh process with an empty `$NMP_CACHE_DIR` (so only the C engine that
`pip install` built into the package can serve it), then again (warm: the peer figure). With
`--cold-numba`, numba's cache is empty too (`$NUMBA_CACHE_DIR` a new folder): what a first run
costs without `python -m nmp.warmup`.

    .venv/bin/python benchmarks/first_run.py [--cold-numba]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from startup import README_TRACE  # benchmarks/ is on sys.path when a script runs

ROOT = Path(__file__).resolve().parents[1]
NMP = [sys.executable, "-m", "nmp"]
COMMANDS = {
    "replay": [*README_TRACE, "--json"],
    "run": ["run", "--arch", "recross", "--workload", "recross-eval", "--json"],
}
TARGET_S = {"replay": 5.0, "run": 10.0}


def _time(argv: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(NMP + argv, cwd=ROOT, env=env, check=True, capture_output=True)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--cold-numba", action="store_true", help="numba's cache empty too (a new folder)"
    )
    cold_numba = ap.parse_args().cold_numba
    for name, argv in COMMANDS.items():
        with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as nb:
            env = {**os.environ, "NMP_CACHE_DIR": cache}
            if cold_numba:
                env["NUMBA_CACHE_DIR"] = nb
            first = _time(argv, env)
            warm = _time(argv, env)
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        print(
            f"first nmp {name}: {first:.2f} s (target {TARGET_S[name]:.0f} s); warm {warm:.2f} s "
            f"({first / warm:.2f}x); numba cache {'empty' if cold_numba else 'as installed'}; "
            f"load average {load:.1f}"
        )


if __name__ == "__main__":
    main()
