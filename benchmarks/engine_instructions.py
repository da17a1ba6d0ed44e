"""The C DRAM engine's instructions, counted by callgrind on captured runs.

On a shared VM a timing moves 10-20 % between spells; the count of instructions an engine run
executes does not, so it shows what a change to the engine's code did to the work it issues
(docs/performance.md, the fifteenth and sixteenth looks; the same looks show that fewer
instructions need not mean less time: a timed A/B, ``engine_ab.py``, decides).

The runs are captured once in this process (the ``simulate_c`` calls of the reference cases
that ``--filter`` selects, or of ``run_design_point("recross", "recross-eval")`` at ``--seeds``),
saved to a private temporary folder, and replayed by a child per library under ``valgrind
--tool=callgrind --toggle-collect=ffi_call``: only ctypes' foreign calls and what they run are
counted, and the child makes no foreign call but ``simulate_c`` (a few hundred instructions of
libffi's per call beside the engine's millions). Not ``simulate_c`` itself: it tail-jumps into
the engine's body, which callgrind then counts as outside it.

Printed per library: the instructions of all the runs, per request, per evaluation and per
command issued, and a digest of every output but the count of evaluations (the same for every
library, or it exits non-zero); ``--per-run`` adds each run's requests and evaluations.
``--keep DIR`` keeps callgrind's files there (``callgrind.<k>.out``, the k-th library's), for
``callgrind_annotate`` by source line where the library was built with ``-g``.
``--by-function N`` prints the N source functions holding the most instructions per command,
inlined code included (``callgrind_lines.py``; the evaluation is one function to the compiler);
it needs line information: this checkout's library is then built with ``-g``, a library of your
own needs it too (``CC="clang -mno-avx512f -g -gdwarf-4"``: valgrind 3.19 reads no DWARF 5).
``--simulate branch`` and ``--simulate cache`` add callgrind's models of a branch predictor
(conditional and indirect mispredictions) and of the L1 and last-level data caches (read and
write misses), per command: the same count of instructions can take longer where more of it
waits (the twenty-second look: an HBM2 command 734 instructions, a DDR4 one 589, and
1.5x the time).

    python benchmarks/engine_instructions.py [A.so B.so ...] [--filter CASE | --seeds 0-2]
        [--simulate branch] [--simulate cache] [--keep DIR]

Needs valgrind (Debian: ``apt-get install valgrind``); a run under it is about 50x slower than
native, so the default is one reference case. valgrind decodes no AVX-512: without libraries
named, the script counts this checkout's, built without AVX-512 where the CPU has it (the
AVX2 paths, into the user cache); a library of your own for such a CPU is built so by
``CC="clang -mno-avx512f" python -c "from nmp.memory.native_build import build;
print(build())"``, which prints its path.
"""

from __future__ import annotations

import argparse
import ctypes
import hashlib
import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from _host import machine  # benchmarks/ is on sys.path when a script runs
from _isa import avx2_engine_cc
from callgrind_lines import by_function, line_costs

from nmp.measure.sysinfo import cpu_flags
from nmp.memory.engine_fields import EngineArgs, ParamsStruct
from nmp.memory.standards import NCMD

DEFAULT_CASE = "emb_zipf_a0.8_r1m_rb64_p40@ddr4_1r"  # the README's trace


def _array(ptr: int | None, n: int, ctype) -> np.ndarray | None:
    if not ptr:
        return None
    return np.ctypeslib.as_array(ctypes.cast(ptr, ctypes.POINTER(ctype)), shape=(n,)).copy()


def _saved(label: str, args: EngineArgs) -> dict:
    """A run's inputs as plain arrays: what simulate_c reads (the outputs are made anew)."""
    dec = _array(args.decode, 12, ctypes.c_int64)
    assert dec is not None
    lines = (args.n + (1 << int(dec[0])) - 1) >> int(dec[0])
    tab = _array(args.tab_i, 144, ctypes.c_int64)
    assert tab is not None
    rules = int(tab.max())
    return {
        "label": label,
        "n": int(args.n),
        "dec": dec,
        "addr": _array(args.addr, lines, ctypes.c_uint64),
        "line_wr": _array(args.line_wr, lines, ctypes.c_uint8),
        "line_arr": _array(args.line_arr, lines, ctypes.c_int64),
        "params": ctypes.string_at(args.params, ctypes.sizeof(ParamsStruct)),
        "tab": tab,
        "nxt": _array(args.nxt, rules, ctypes.c_int64),
        "lat": _array(args.lat, rules, ctypes.c_int64),
        "win": _array(args.win, rules, ctypes.c_int64),
    }


def capture(case_filter: str, seeds: range | None) -> list[dict]:
    """The runs to count: the reference cases' (one run each, their cycles checked against the
    reference: engine_ab.py's capture) or the design points' (engine_ab_points.py's)."""
    if seeds is not None:
        from engine_ab_points import _capture as point_runs  # (benchmarks/ is on sys.path)

        # one thread: the runs captured in the same order every time, so the same digest
        os.environ["NMP_THREADS"] = "1"
        return [_saved(f"run {k}", args) for k, (_, args) in enumerate(point_runs(seeds))]
    from engine_ab import _capture as case_runs

    from nmp.reference import dram_reference_dir

    ref = dram_reference_dir()
    cases = json.loads((ref / "cases.json").read_text())["cases"]
    chosen = [c for c in cases if case_filter in c["id"]]
    return [_saved(case_id, args) for case_id, _, _, args in case_runs(chosen, ref)]


def _ptr(a: np.ndarray | None) -> int | None:
    return None if a is None else a.ctypes.data


def child(lib: str, saved: str) -> None:
    """Under callgrind: each saved run through ``lib``'s simulate_c; its evaluations and a
    digest of its outputs as one JSON line."""
    runs = pickle.loads(Path(saved).read_bytes())
    fn = ctypes.CDLL(os.path.abspath(lib)).simulate_c
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.POINTER(EngineArgs)]
    digest, evals, commands = hashlib.sha256(), [], []
    for r in runs:
        n, ps = r["n"], ParamsStruct.from_buffer_copy(r["params"])
        params = ctypes.create_string_buffer(r["params"], len(r["params"]))
        small = [np.zeros(4, np.int64), np.zeros(64, np.int64), np.zeros(64, np.int64)]
        per_tx = [np.zeros(n, np.int64) for _ in range(3)]
        active = np.zeros(ps.channels * ps.ranks + 8, np.int64)
        fwd = np.zeros(n, np.uint8)
        args = EngineArgs(
            _ptr(r["addr"]), _ptr(r["line_wr"]), _ptr(r["line_arr"]), n, _ptr(r["dec"]),
            ctypes.addressof(params), _ptr(r["tab"]), _ptr(r["nxt"]), _ptr(r["lat"]),
            _ptr(r["win"]), None, 0, _ptr(small[0]), _ptr(small[1]), _ptr(small[2]),
            *(_ptr(a) for a in per_tx), _ptr(active), _ptr(fwd), 1,
        )  # fmt: skip
        rc = fn(ctypes.byref(args))
        if rc != 0:
            sys.exit(f"{lib}: simulate_c returned {rc} on {r['label']}")
        evals.append(int(small[0][3]))
        commands.append(int(small[1][:NCMD].sum()))
        for a in (small[0][:3], small[1], small[2], *per_tx, active, fwd):
            digest.update(a.tobytes())
    print(
        json.dumps({"evaluations": evals, "commands": commands, "digest": digest.hexdigest()[:16]})
    )


# --simulate's callgrind models: the flag, and the events printed (callgrind's names)
SIMULATIONS = {
    "branch": ("--branch-sim=yes", {"Bcm": "conditional mispredictions", "Bim": "indirect"}),
    "cache": (
        "--cache-sim=yes",
        {
            "D1mr": "L1 read misses",
            "D1mw": "L1 write misses",
            "DLmr": "LL read",
            "DLmw": "LL write",
        },
    ),
}


def _events(out_file: Path) -> dict[str, int]:
    """The collected events by callgrind's name (its 'events' line, then the 'totals' or
    'summary' line): Ir, the instructions, and those of the simulations asked for."""
    names: list[str] = []
    for line in out_file.read_text().splitlines():
        if line.startswith("events:"):
            names = line.split()[1:]
        elif line.startswith(("totals:", "summary:")) and names:
            return {n: int(v) for n, v in zip(names, line.split()[1:], strict=False)}
    raise SystemExit(f"{out_file}: no events and totals lines")


def count(lib: str, saved: Path, out: Path, flags: list[str]) -> tuple[dict[str, int], dict]:
    """The events (instructions first) of ``lib``'s simulate_c over the saved runs
    (callgrind's file: ``out``), and its child's evaluations, commands and digest."""
    argv = [
        "valgrind", "--tool=callgrind", "--toggle-collect=ffi_call", *flags,
        f"--callgrind-out-file={out}", sys.executable, __file__, "--child", lib, str(saved),
    ]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode == -signal.SIGILL:
        sys.exit(
            f"valgrind stopped at an instruction it does not decode (SIGILL) in {lib}: it "
            "decodes no AVX-512; count a library built without it (this script's docstring)"
        )
    if done.returncode != 0:
        sys.exit(f"valgrind on {lib} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return _events(out), json.loads(done.stdout.strip().splitlines()[-1])


def print_functions(out_file: Path, commands: int, top: int) -> None:
    """The ``top`` source functions by instructions per command in callgrind's ``out_file``."""
    costs = line_costs(out_file.read_text())
    total = max(sum(costs.values()), 1)
    with_lines = sum(c for (_, line), c in costs.items() if line > 0)
    if with_lines < total / 2:
        print(
            f"    by function: only {100 * with_lines / total:.0f} % of the instructions have a "
            "source line: build the library with -g (this script's docstring)"
        )
        return
    print("    by function (instructions per command, share):")
    for name, cost in by_function(costs).most_common(top):
        print(f"      {cost / commands:8.1f}  {100 * cost / total:5.1f} %  {name}")


def default_library(debug: bool = False) -> str:
    """This checkout's engine library, built (once, into the user cache) without AVX-512 where
    the CPU has it, since valgrind decodes none, and with ``debug``, with line information
    (``-g``: the same code, another key). Before anything loads the engine: the compiler is
    chosen at the first build, and the captured runs then use the same library (any build
    gives the same outputs)."""
    if "avx512f" in cpu_flags():
        os.environ["CC"] = avx2_engine_cc()
    if debug:
        from nmp.memory.native_build import compiler

        # (DWARF 4: valgrind 3.19 stops at a DWARF 5 library, "unhandled dwarf2 abbrev form")
        os.environ["CC"] = " ".join(compiler()) + " -g -gdwarf-4"
    from nmp.memory.native_build import build

    return str(build())


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3])
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "libs",
        nargs="*",
        help="engine libraries (.so) to count (none: this checkout's, without AVX-512)",
    )
    ap.add_argument("--filter", default=DEFAULT_CASE, help="reference cases whose id holds this")
    ap.add_argument(
        "--seeds",
        help="design points' runs instead, seeds first-last (0-2; the first point of a process "
        "also sets its design up, with runs of its own)",
    )
    ap.add_argument("--per-run", action="store_true", help="a line per run, not only the sum")
    ap.add_argument("--keep", type=Path, help="keep callgrind's files in this folder")
    ap.add_argument(
        "--simulate",
        action="append",
        choices=sorted(SIMULATIONS),
        default=[],
        help="callgrind's branch predictor or data caches too (repeatable)",
    )
    ap.add_argument(
        "--by-function",
        type=int,
        metavar="N",
        help="the N source functions with the most instructions per command (needs -g)",
    )
    a = ap.parse_args()
    if a.by_function is not None and a.by_function < 1:
        ap.error(f"--by-function takes a count >= 1, got {a.by_function}")
    seeds = None
    if a.seeds is not None:
        first, _, last = a.seeds.partition("-")
        if not (first.isdigit() and last.isdigit() and int(first) <= int(last)):
            ap.error(f"--seeds takes first-last, two seeds >= 0 in order (0-2), got {a.seeds!r}")
        seeds = range(int(first), int(last) + 1)
    if shutil.which("valgrind") is None:
        sys.exit("engine_instructions.py: needs valgrind on the PATH (apt-get install valgrind)")
    if a.keep is not None and not a.keep.is_dir():
        sys.exit(f"engine_instructions.py: --keep {a.keep}: no such folder")
    if not a.libs:
        a.libs = [default_library(debug=a.by_function is not None)]
        print(f"library: {a.libs[0]} (this checkout's, CC={os.environ.get('CC', '(default)')})")
    for lib in a.libs:
        if not Path(lib).is_file():
            sys.exit(f"engine_instructions.py: no library at {lib}")
    # (the count depends on the code the compiler chose for this CPU: -march=native)
    print(f"machine: {machine()}")
    runs = capture(a.filter, seeds)
    if not runs:
        sys.exit(f"engine_instructions.py: no reference case's id holds {a.filter!r}")
    requests = [r["n"] for r in runs]
    what = f"seeds {a.seeds}" if a.seeds else f"cases holding {a.filter!r}"
    print(f"{len(runs)} runs ({what}), {sum(requests)} requests (transactions)")
    with tempfile.TemporaryDirectory(prefix="nmp-instructions-") as tmp:
        saved = Path(tmp) / "runs.pickle"
        saved.write_bytes(pickle.dumps(runs))
        base, digests = None, set()
        flags = [SIMULATIONS[s][0] for s in dict.fromkeys(a.simulate)]
        for i, lib in enumerate(a.libs):
            out = (a.keep or Path(tmp)) / f"callgrind.{i}.out"
            events, got = count(lib, saved, out, flags)
            ir = events["Ir"]
            digests.add(got["digest"])
            evals, cmds = sum(got["evaluations"]), max(sum(got["commands"]), 1)
            ratio = "" if base is None else f"  x{ir / base:.3f} of the first"
            base = base or ir
            print(
                f"{lib}: {ir / 1e6:.2f} M instructions, {ir / sum(requests):.0f} per request, "
                f"{ir / max(evals, 1):.0f} per evaluation ({evals} evaluations), "
                f"{ir / cmds:.0f} per command ({cmds} commands); outputs {got['digest']}{ratio}"
            )
            for s in dict.fromkeys(a.simulate):
                shown = ", ".join(
                    f"{label} {events.get(name, 0) / cmds:.2f}"
                    for name, label in SIMULATIONS[s][1].items()
                )
                print(f"    per command, {s} model: {shown}")
            if a.by_function:
                print_functions(out, cmds, a.by_function)
            if a.per_run:
                for r, e in zip(runs, got["evaluations"], strict=True):
                    print(f"    {r['label']:48s} {r['n']:8d} requests {e:8d} evaluations")
    if len(digests) > 1:
        sys.exit("engine_instructions.py: the libraries' outputs differ")


if __name__ == "__main__":
    main()
