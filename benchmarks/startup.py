"""Start-up cost of the `nmp` command as a user times it (issue 31: `nmp --help` and `nmp replay`
of the README's trace, each a whole process, under 0.35 s on a 2-core VM).

Every command runs as a fresh process, the commands alternating, ``--repeat`` rounds after one
warm-up round; printed: the median and the minimum wall and CPU time (user + system, all
threads) of each, beside the interpreter's own start (``python -c pass``) and numpy's import
(the floor of any command that touches an array). Then the import breakdown of ``nmp
replay`` (``python -X importtime``, the fastest of ``--repeat`` runs per module): the time by
top-level package, the slowest modules, and whether numba, scipy or torch were imported (they
must not be: the C engine's path needs none).

Bytecode: the children run without ``$PYTHONDONTWRITEBYTECODE`` (some sandboxes set it; a
user's Python writes ``__pycache__``), so the warm-up round leaves compiled modules as a user's
second run finds them. The C engine's library must be built already (``make`` does it).

``--other DIR`` times a second checkout (e.g. ``git worktree add /tmp/nmp-main main``) with the
same interpreter, alternating with this one (its package first on ``PYTHONPATH``): a before /
after from the same run.

    .venv/bin/python benchmarks/startup.py [--repeat 15] [--other /tmp/nmp-main]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _host import load, machine  # benchmarks/ is on sys.path when a script runs

ROOT = Path(__file__).resolve().parents[1]
README_TRACE = [
    "replay",
    "traces/emb_zipf_a0.8_r1m_rb64_p40.trace.gz",
    "--memory",
    "ddr4-3200aa",
    "--channels",
    "1",
    "--ranks",
    "1",
    "--mapping",
    "RoBaRaCoCh",
]
PY = [sys.executable]
NMP = [sys.executable, "-m", "nmp"]
COMMANDS = {
    "python -c pass": PY + ["-c", "pass"],
    "python -c 'import numpy'": PY + ["-c", "import numpy"],
    "nmp --help": NMP + ["--help"],
    "nmp replay (README)": NMP + README_TRACE,
    "nmp replay --json": NMP + README_TRACE + ["--json"],
    "nmp models": NMP + ["models"],
    "nmp run --help": NMP + ["run", "--help"],
}
TARGET_S = {"nmp --help": 0.35, "nmp replay (README)": 0.35}
HEAVY = ("numba", "scipy", "torch")


def child_env(pythonpath: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if pythonpath is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(pythonpath), env.get("PYTHONPATH", "")])
    return env


def run_once(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Wall time and CPU time (user + system, all its threads) of one run of ``argv``."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise subprocess.CalledProcessError(proc.returncode, argv)
    return wall, usage.ru_utime + usage.ru_stime


def import_breakdown(env: dict[str, str], cwd: Path, repeat: int) -> None:
    """``-X importtime`` of ``nmp replay`` (README trace): per module the fastest of ``repeat``
    runs (self and cumulative, microseconds), summed by top-level package."""
    best_self: dict[str, int] = {}
    best_cum: dict[str, int] = {}
    order: list[str] = []
    for _ in range(repeat):
        out = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "nmp", *README_TRACE],
            cwd=cwd,
            env=env,
            check=True,
            capture_output=True,
            text=True,
        ).stderr
        for line in out.splitlines():
            m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)", line)
            if not m:
                continue
            name = m.group(4)
            if name not in best_self:
                order.append(name)
            best_self[name] = min(best_self.get(name, 1 << 62), int(m.group(1)))
            best_cum[name] = min(best_cum.get(name, 1 << 62), int(m.group(2)))
    by_package: dict[str, int] = {}
    for name, us in best_self.items():
        top = name.split(".")[0].lstrip("_")
        if top in sys.stdlib_module_names or name.split(".")[0] in sys.stdlib_module_names:
            top = "(standard library)"
        by_package[top] = by_package.get(top, 0) + us
    total = sum(by_package.values())
    print(f"\nimports of `nmp replay` (README trace), python -X importtime, fastest of {repeat}:")
    print(f"  {len(best_self)} modules, {total / 1e3:.1f} ms in all; by package:")
    for top, us in sorted(by_package.items(), key=lambda kv: -kv[1])[:10]:
        print(f"    {top:28s} {us / 1e3:7.1f} ms")
    print("  slowest modules (self; cumulative):")
    for name in sorted(best_self, key=lambda n: -best_self[n])[:12]:
        print(f"    {name:40s} {best_self[name] / 1e3:6.1f} ms; {best_cum[name] / 1e3:6.1f} ms")
    heavy = [h for h in HEAVY if any(n == h or n.startswith(h + ".") for n in best_self)]
    print(f"  numba / scipy / torch imported: {', '.join(heavy) if heavy else 'none'}")


# A replay of the README trace as `nmp replay --json` runs it, CPU time (user + system of the
# process) read at each step's end: what a whole-process replay spends where.
PHASE_PROBE = """
import resource
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
marks = [("interpreter start (site, encodings)", cpu())]
import json, sys
from pathlib import Path
from nmp import cli
from nmp.memory import cli as replay_cli
from nmp.memory.text_replay import replay_text
from nmp.memory.trace_file import read_trace_bytes
marks.append(("imports (argparse, nmp's modules, ctypes)", cpu()))
args = cli.build_parser(("replay",)).parse_args(ARGV + ["--json"])
spec = replay_cli.memory_spec(args)
marks.append(("arguments and the memory spec (TOML presets)", cpu()))
from nmp.memory import native_lib
native_lib._library()
marks.append(("the engine's library found and loaded", cpu()))
data = read_trace_bytes(Path(args.trace))
marks.append(("the trace read (gunzip)", cpu()))
stats = replay_text(data, spec, drain=True)
marks.append(("parse, engine, read sums, statistics", cpu()))
out = stats.to_json()
json.dumps(out)
marks.append(("output (JSON)", cpu()))
steps = [(name, t - (marks[i - 1][1] if i else 0.0)) for i, (name, t) in enumerate(marks)]
print(json.dumps(steps))
"""


def phase_breakdown(env: dict[str, str], cwd: Path, repeat: int) -> None:
    """CPU time of ``nmp replay --json`` (README trace) by step (:data:`PHASE_PROBE`), the
    median of ``repeat`` fresh processes per step."""
    import json

    code = PHASE_PROBE.replace("ARGV", repr(README_TRACE))
    runs = [
        json.loads(
            subprocess.run(
                [sys.executable, "-c", code], cwd=cwd, env=env, check=True, capture_output=True
            ).stdout
        )
        for _ in range(repeat)
    ]
    print(f"\nCPU time of `nmp replay --json` (README trace) by step, median of {repeat} runs:")
    total = 0.0
    for i, (name, _) in enumerate(runs[0]):
        ms = statistics.median(run[i][1] for run in runs) * 1e3
        total += ms
        print(f"  {name:48s} {ms:6.1f} ms")
    print(f"  {'(sum of the medians)':48s} {total:6.1f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=15, help="timed rounds (15)")
    ap.add_argument("--other", type=Path, help="a second checkout to time alongside")
    a = ap.parse_args()
    trees = {"this": (ROOT, child_env(None))}
    if a.other:
        trees["other"] = (a.other.resolve(), child_env(a.other.resolve()))
    print(f"machine: {machine()}; load average (1/5/15 min) before: {load()}")
    for label, (tree, _) in trees.items():
        print(f"checkout {label}: {tree}")
    times: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for round_ in range(a.repeat + 1):  # round 0: warm-up (bytecode, caches), not counted
        for name, argv in COMMANDS.items():
            for label, (tree, env) in trees.items():
                if label != "this" and argv[:1] == PY and argv[1] == "-c":
                    continue  # the interpreter's own start: the same for both
                t = run_once(argv, env, tree)
                if round_:
                    times.setdefault((name, label), []).append(t)
    print(f"load average after: {load()}\n")
    print(
        f"each command as a whole process, {a.repeat} alternating runs: wall time and CPU time"
        " (user + system, all threads: a loaded machine stretches the wall time, less the CPU)"
    )
    print(
        f"{'command':28s} {'checkout':8s} {'wall med s':>10s} {'min s':>7s}"
        f" {'CPU med s':>10s} {'min s':>7s}  target (wall)"
    )
    for (name, label), ts in times.items():
        target = f"< {TARGET_S[name]:.2f} s" if name in TARGET_S else ""
        wall, cpu = [w for w, _ in ts], [c for _, c in ts]
        print(
            f"{name:28s} {label:8s} {statistics.median(wall):10.3f} {min(wall):7.3f}"
            f" {statistics.median(cpu):10.3f} {min(cpu):7.3f}  {target}"
        )
    for label, (tree, env) in trees.items():
        if len(trees) > 1:
            print(f"\n[checkout {label}]", end="")
        import_breakdown(env, tree, max(3, a.repeat // 3))
    phase_breakdown(trees["this"][1], ROOT, a.repeat)


if __name__ == "__main__":
    main()
