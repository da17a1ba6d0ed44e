"""Tutorial 5: a design-space sweep of your own, from Python.

A sweep crosses designs with workloads and any spec field (by dotted path), checks every point
against the presets before running, runs them (here in this process), and analyzes: speedup and
energy saving over a baseline, Pareto sets. `nmp evaluate my_sweep.toml` does the same from a
TOML file and also writes report.md, results.csv and plots.

Run: .venv/bin/python examples/05_custom_sweep.py   (about 15-40 s)
"""

import tempfile
from pathlib import Path

import nmp

SHARED = {"arch.memory.preset": "ddr5-4800-40", "arch.memory.channels": 1, "arch.memory.ranks": 2}
sweep = nmp.parse_sweep(
    {
        "name": "tutorial",
        "workloads": ["recross-eval"],
        "baseline": "host-cpu",
        "designs": [
            {"name": "host-cpu", "arch": "host-cpu", "set": SHARED},
            {"name": "recross", "arch": "recross", "set": SHARED},
        ],
        "axes": {"workload.batch": [4, 16]},  # two batch sizes per design
    }
)
keyed = nmp.validate_sweep(sweep)  # errors name the key, before anything runs
print(f"{len({k for _, k in keyed})} points")

with tempfile.TemporaryDirectory() as tmp:
    summary = nmp.run_sweep(sweep, keyed, Path(tmp) / "run")
    for row in summary["rows"]:
        print(f"{row['label']:9s} {row['group']:24s} {row['lookups_per_s'] / 1e6:7.1f} M lookups/s "
              f"speedup {row['speedup'] or 0:5.2f}x  pareto {row['pareto']}")  # fmt: skip
