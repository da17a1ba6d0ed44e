"""Tutorial 2: compare near-memory designs on one workload and one memory system.

A design point is an architecture (host CPU, TensorDIMM, RecNMP, TRiM, ReCross, or a GPU)
running a workload. A speedup only means something on the same memory, so every NMP design
here sits on ReCross's DDR5-4800 channel with two ranks (as the default sweep does).

Run: .venv/bin/python examples/02_compare_designs.py   (about 10-30 s)
"""

import nmp

MEMORY = {"arch.memory.preset": "ddr5-4800-40", "arch.memory.channels": 1, "arch.memory.ranks": 2}
WORKLOAD = {"workload.batch": 8}  # a small batch: the tutorial runs in seconds

results = {}
for arch in ("host-cpu", "recnmp", "trim-g", "recross"):
    point = nmp.run_point(arch, "recross-eval", overrides={**MEMORY, **WORKLOAD})
    results[arch] = point
    print(f"{arch:9s} {point.lookups_per_s / 1e6:8.1f} M lookups/s  "
          f"{point.energy_pj_per_lookup:8.0f} pJ/lookup  {point.area_mm2:6.2f} mm2  "
          f"bottleneck {point.breakdown.get('bottleneck', '?')}")  # fmt: skip

base = results["host-cpu"]
for arch, point in results.items():
    print(f"{arch:9s} speedup {point.lookups_per_s / base.lookups_per_s:5.2f}x, energy saving "
          f"{base.energy_pj_per_lookup / point.energy_pj_per_lookup:4.2f}x")  # fmt: skip

# The GPU is an architecture too; its HBM is part of its preset.
gpu = nmp.run_point("a100-80gb", "recross-eval", overrides=WORKLOAD)
print(f"a100-80gb {gpu.lookups_per_s / 1e6:8.1f} M lookups/s on its own HBM")
