"""Where a design point's CPU time goes, stage by stage (printed, not asserted).

Runs ``run_design_point(ARCH, "recross-eval", seed=s)`` for ``--points`` new seeds on one
thread (``NMP_THREADS=1``, as ``benchmarks/arch.py``'s one-thread figure), after two warm-up
points, with each stage's function wrapped by a CPU-time counter where the design point's code
calls it (the module-level name its caller looks up). Stages nest: the DRAM engine's C call
lies inside the level replays, which lie inside the timing model; each line is its own total,
"not in a stage" is the point's time outside the outermost ones, and the last line the point
less the engine's C calls.

    python benchmarks/point_stages.py [--points 40] [--arch recross]
"""

from __future__ import annotations

import argparse
import importlib
import os
import time

from _host import load, machine  # benchmarks/ is on sys.path when a script runs

os.environ["NMP_THREADS"] = "1"
os.environ.setdefault("OMP_NUM_THREADS", "1")

# (label, module, name): the name as the design point's code looks it up; outermost stages
# (those that do not nest in another listed here) are marked True
STAGES = (
    ("the batch's draw", "nmp.arch.point", "_batch_for", True),
    ("the functional gather-reduce", "nmp.arch.policies.base", "pool_tables", True),
    ("the timing model", "nmp.arch.policies.base", "time_near_memory", True),
    ("  lookups split by level", "nmp.arch.policies.base", "split_levels", False),
    ("  request streams per level", "nmp.arch.policies.base", "lower_level", False),
    ("  the level replays", "nmp.arch.replay", "replay_lines_many", False),
    ("    the DRAM engine (C call)", "nmp.memory.native", "simulate_summaries", False),
)


def _wrap(spent: dict, label: str, module: str, name: str) -> None:
    mod = importlib.import_module(module)
    fn = getattr(mod, name)

    def timed(*args, **kwargs):
        t0 = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[label] += time.process_time() - t0

    setattr(mod, name, timed)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=40)
    ap.add_argument("--arch", default="recross")
    a = ap.parse_args()
    if a.points < 1:
        ap.error(f"--points must be at least 1, got {a.points}")
    from nmp.arch import run_design_point
    from nmp.errors import NmpError

    print(f"machine: {machine()}; load average (1/5/15 min): {load()}")
    try:
        for s in (0, 1):
            run_design_point(a.arch, "recross-eval", seed=s)
    except NmpError as exc:  # (an unknown --arch, say: its message, not a traceback)
        raise SystemExit(f"point_stages.py: {exc}") from None
    spent = {label: 0.0 for label, *_ in STAGES}
    for label, module, name, _ in STAGES:
        _wrap(spent, label, module, name)
    t0 = time.process_time()
    for i in range(a.points):
        run_design_point(a.arch, "recross-eval", seed=100 + i)
    total = time.process_time() - t0
    n = a.points
    print(f"{a.arch} on recross-eval, {n} points with new seeds, one thread: CPU ms per point")
    print(f"  {'the whole point':32s} {total / n * 1e3:7.2f}")
    for label, *_ in STAGES:
        print(f"  {label:32s} {spent[label] / n * 1e3:7.2f}")
    outer = sum(spent[label] for label, *_, top in STAGES if top)
    print(f"  {'not in a stage':32s} {(total - outer) / n * 1e3:7.2f}")
    # (what the code around the engine costs: the engine's share moves most with a shared
    # machine's spells, so this is the figure to compare between two versions of that code)
    engine = next(spent[label] for label, _, name, _ in STAGES if name == "simulate_summaries")
    print(f"  {'the point less the engine':32s} {(total - engine) / n * 1e3:7.2f}")


if __name__ == "__main__":
    main()
