"""Settle issue #37 on a CUDA GPU in one command: the loaded-latency probe, the real kernels on
every point of the issue's "Done when", the model on the same points (as is, and calibrated by the
latency record just taken), the comparison with each criterion's verdict, and ``nmp validate``'s
real-GPU group.

    python benchmarks/gpu_device_check.py --out OUT            # on the GPU machine
    python benchmarks/gpu_device_check.py --dry-run --out OUT  # CPU: every stage's CPU part
    python benchmarks/gpu_device_check.py --unpack FOLDER      # here: the records into nmp/gpu/data

Stages, in order, each in its own process with its own time limit, each writing its results into
``OUT`` as soon as it has them (a timeout or crash in a later stage loses nothing earlier):

1. ``env``: versions and the device's properties (into ``stages.json``);
2. ``latency``: ``benchmarks/gpu_latency.py --record`` (``latency-probe-*.json``);
3. ``kernels``: ``benchmarks/gpu_kernels.py``'s measurement of every point, recorded
   (``kernels.json``: every ``measured-kernels-*.json`` record by file name, rewritten per point);
4. ``model``: the model's stage time for every point and variant, as is and with
   ``arch.hbm.loaded_latency_record`` = the record of stage 2 (``model.json``);
5. ``compare``: measured beside modeled, one verdict per criterion (``comparison.md``, ``.json``;
   ``benchmarks/gpu_device_compare.py``);
6. ``validate``: ``nmp validate --only gpu.real gpu.latency`` (``validate-real-gpu.txt``).

The stages themselves are in ``gpu_device_stages.py``, the verdicts in ``gpu_device_compare.py``.
``stages.json`` holds the plan, the estimate and each stage's status and wall time. With the
command's own log that is at most 8 files, named in letters, digits, '.', '_' and '-' (the device
tool's return limits, :data:`OUT_FILES`). The estimate is printed first; ``--budget-s`` scales the
repeats down to fit it and ``--deadline-s`` bounds the whole run (stages that no longer fit are
skipped, named so).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

SCRIPT = Path(__file__).resolve()
BENCH = SCRIPT.parent
ROOT = BENCH.parent
STAGES = ("env", "latency", "kernels", "model", "compare", "validate")
LOG_NAME = "device-check.log"  # written by the command's `tee`, not by this script
MAX_OUT_FILES = 8  # the device tool's limit on files coming back
NAME_OK = re.compile(r"^[A-Za-z0-9._-]+$")

# Chosen estimate constants (seconds; conservative so the printed total is an upper bound):
STARTUP_S = 12.0  # python, torch, CuPy and a CUDA context per stage process
TABLE_SETUP_S = 0.6  # per table and point: torch.rand on the CPU (0.3 s for 500K x 128
#                      measured here), the copy to the GPU and the reference EmbeddingBag
PLAN_S = 0.8  # build_plan for gpu-micro24 (two generate_batch calls: 0.6 s CPU measured here)
COMPILE_S = 1.5  # NVRTC per variant (CuPy caches it on disk after the first point)
RANDOM_BPS = 1.0e12  # a quarter of the H200's measured 4.1 TB/s on 512-B random rows
FLUSH_S = 2 * 62_914_560 / 3.0e12  # writing twice the L2 at a conservative 3 TB/s
PROBE_STEP_S = {"hbm": 2.0e-6, "l2": 0.5e-6}  # per chase step, loaded (Little's law, 64 warps)
PROBE_SETUP_S = {"hbm": 0.5, "l2": 0.02}  # the seeded permutation per point (8.4M / 123K nodes)
MODEL_RUN_S = 3.0  # one full-size model point on one core (1.3-3.3 s wall measured here)
MIN_REPEATS = 3


def _load_stages():
    """gpu_device_stages.py beside this script (run as a script or loaded by path)."""
    name = "gpu_device_stages"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
        assert spec is not None and spec.loader is not None
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


stages_mod = _load_stages()
_bench = stages_mod.bench
write_json = stages_mod.write_json
_read = stages_mod._read
OUT_FILES = stages_mod.OUT_FILES
LATENCY_GLOB = stages_mod.LATENCY_GLOB
STAGE_FUNCS = stages_mod.STAGE_FUNCS


def _ints(text: str) -> list[int]:
    return [int(s) for s in text.split(",") if s]


def _words(text: str) -> list[str]:
    return [s for s in text.split(",") if s]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=None, help="output folder ($OUT on the device)")
    p.add_argument("--arch", default="h200")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--reuse", default="high,medium,low,random")
    p.add_argument("--batches", default="256,512,1024,2048,4096,8192")
    p.add_argument("--no-dlrm", action="store_true", help="leave dlrm-benchmark out")
    p.add_argument("--variants", default="", help="real variants (default: all)")
    p.add_argument("--prefetch-depths", default="8", help="extra prefetch-N variants")
    p.add_argument("--tables", type=int, default=None, help="the first N tables only")
    p.add_argument("--batch", type=int, default=None, help="reuse/dlrm points' batch")
    p.add_argument("--kernel-repeats", type=int, default=20)
    p.add_argument("--kernel-warmup", type=int, default=3)
    p.add_argument("--probe-levels", default="hbm,l2")
    p.add_argument("--probe-warps", default="1,2,4,8,16,32,48,64")
    p.add_argument("--probe-chains", default="1,2,4")
    p.add_argument("--probe-row-bytes", default="32,128")
    p.add_argument("--probe-steps", type=int, default=1024)
    p.add_argument("--probe-repeats", type=int, default=5)
    p.add_argument("--probe-warmup", type=int, default=2)
    p.add_argument("--model-workers", type=int, default=min(8, os.cpu_count() or 1))
    p.add_argument("--latency-record", default="", help="use this record, do not probe")
    p.add_argument("--stages", default=",".join(STAGES), help="a subset, in this order")
    p.add_argument("--from-data", action="store_true", help="compare the records in nmp/gpu/data/")
    # Chosen: the full plan's estimate (377 s with the layout-hot-first control) at full repeats,
    # with room to spare under --deadline-s (the hard bound; the estimate is an upper bound).
    p.add_argument("--budget-s", type=float, default=390.0, help="repeats scaled to fit")
    p.add_argument("--deadline-s", type=float, default=420.0, help="the whole run ends by then")
    p.add_argument("--in-process", action="store_true", help="no stage processes (dry run)")
    p.add_argument("--processes", action="store_true", help="stage processes in a dry run too")
    p.add_argument("--dry-run", action="store_true", help="CPU only: nothing measured")
    p.add_argument("--unpack", default=None, help="copy a returned OUT's records into nmp")
    p.add_argument("--stage", default=None, help=argparse.SUPPRESS)  # a stage's own process
    p.add_argument("--summary-file", default=None, help=argparse.SUPPRESS)
    return p


def plan(args: argparse.Namespace) -> list[dict[str, Any]]:
    from nmp.gpu.spec import load_gpu
    from nmp.workload import load_workload

    cmp = _bench("gpu_device_compare")
    for flag in ("probe_warps", "probe_chains", "probe_row_bytes", "batches", "prefetch_depths"):
        try:  # a bad number is a one-line error here, not a traceback in a stage
            _ints(getattr(args, flag))
        except ValueError:
            name = "--" + flag.replace("_", "-")
            raise ValueError(
                f"{name} {getattr(args, flag)!r}: not integers, comma-separated"
            ) from None
    known = list(stages_mod.variants_for(load_gpu(args.arch), stages_mod.depths(args)))
    variants = _words(args.variants) or known
    unknown = [v for v in variants if v not in known]
    if unknown:
        raise ValueError(f"unknown real variant '{unknown[0]}' (known: {', '.join(known)})")
    reuse = _words(args.reuse)
    if bad := [r for r in reuse if r not in cmp.REUSE]:
        raise ValueError(f"unknown reuse level '{bad[0]}' (known: {', '.join(cmp.REUSE)})")
    if bad := [lv for lv in _words(args.probe_levels) if lv not in PROBE_STEP_S]:
        raise ValueError(f"unknown probe level '{bad[0]}' (known: {', '.join(PROBE_STEP_S)})")
    default_batch = load_workload("gpu-micro24", {}).batch
    return cmp.plan_points(
        reuse,
        _ints(args.batches),
        not args.no_dlrm,
        variants,
        args.tables,
        default_batch,
        args.batch,
    )


# --- the estimate -------------------------------------------------------------------------------


def _lookups(p: dict[str, Any]) -> tuple[int, int, int]:
    """(tables, lookups, row bytes) of a point's batch, from its spec (no batch drawn)."""
    from nmp.workload import load_workload

    spec = load_workload(p["workload"], p["overrides"])
    lookups = int(round(spec.lookups_per_batch))
    t0 = spec.tables[0]
    return len(spec.tables), lookups, t0.row_bytes


def estimate(args: argparse.Namespace, points: list[dict], stages: list[str]) -> dict[str, Any]:
    """Each stage's estimated seconds, split into a fixed part and a part per repeat."""
    fixed: dict[str, float] = dict.fromkeys(stages, 0.0)
    per_repeat: dict[str, float] = dict.fromkeys(stages, 0.0)
    counts: dict[str, str] = {}
    for s in stages:
        fixed[s] = STARTUP_S if s in ("env", "latency", "kernels", "model", "validate") else 1.0
    if "latency" in stages and not args.latency_record:
        levels, n = _words(args.probe_levels), 0
        for lv in levels:
            k = len(_ints(args.probe_warps)) * len(_ints(args.probe_chains))
            k *= len(_ints(args.probe_row_bytes))
            n += k
            launch = args.probe_steps * PROBE_STEP_S[lv] + (FLUSH_S if lv == "hbm" else 0.0)
            fixed["latency"] += k * (PROBE_SETUP_S[lv] + 2 * args.probe_warmup * launch)
            per_repeat["latency"] += k * 2 * launch
        counts["latency"] = f"{n} points x ({args.probe_warmup} + repeats) x 2 launches"
    measured = [p for p in points if not p.get("alias")]
    runs = sum(len(p["variants"]) for p in measured)
    if "kernels" in stages:
        for p in measured:
            tables, lookups, row_bytes = _lookups(p)
            batch_s = FLUSH_S + lookups * row_bytes / RANDOM_BPS
            nv = len(p["variants"])
            fixed["kernels"] += tables * TABLE_SETUP_S + PLAN_S + nv * COMPILE_S
            fixed["kernels"] += nv * args.kernel_warmup * batch_s
            per_repeat["kernels"] += nv * batch_s
        counts["kernels"] = f"{len(measured)} points, {runs} variant runs x (warmup + repeats)"
    workers = max(1, args.model_workers)
    if "model" in stages:
        fixed["model"] += 2 * runs * MODEL_RUN_S / workers
        counts["model"] = f"{runs} model points x 2 (as is, with the record) / {workers} workers"
    if "validate" in stages:
        fixed["validate"] += runs * MODEL_RUN_S
        counts["validate"] = f"{runs} model points, one process"
    return {"fixed": fixed, "per_repeat": per_repeat, "counts": counts}


def repeats_for(est: dict[str, Any], args: argparse.Namespace) -> tuple[int, int]:
    """(kernel repeats, probe repeats) scaled by one factor so the total fits ``--budget-s``."""
    fixed = sum(est["fixed"].values())
    var = est["per_repeat"].get("kernels", 0.0) * args.kernel_repeats
    var += est["per_repeat"].get("latency", 0.0) * args.probe_repeats
    if fixed + var <= args.budget_s or var <= 0:
        return args.kernel_repeats, args.probe_repeats
    f = max(0.0, args.budget_s - fixed) / var
    return (
        max(MIN_REPEATS, int(args.kernel_repeats * f)),
        max(MIN_REPEATS, int(args.probe_repeats * f)),
    )


def stage_seconds(est: dict[str, Any], args: argparse.Namespace) -> dict[str, float]:
    reps = {"kernels": args.kernel_repeats, "latency": args.probe_repeats}
    return {s: v + est["per_repeat"][s] * reps.get(s, 0) for s, v in est["fixed"].items()}


# --- the orchestration --------------------------------------------------------------------------


def run_child(argv: list[str], name: str, timeout_s: float) -> tuple[str, dict | None, str]:
    """One stage in its own process group (killed whole at its limit): (status, summary, why)."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as fh:
        summary_file = fh.name
    cmd = [sys.executable, str(SCRIPT), *argv, "--stage", name, "--summary-file", summary_file]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=stages_mod.child_env(), start_new_session=True)
    try:
        rc = proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(proc.pid, sig)
                proc.wait(timeout=5)
                break
            except (subprocess.TimeoutExpired, ProcessLookupError):
                continue
        return "timeout", None, f"killed at its limit of {timeout_s:.4g} s"
    summary = _read(Path(summary_file)) or None
    os.unlink(summary_file)
    if rc != 0:
        return "failed", summary, f"exit {rc} (its traceback is in the log above)"
    return "ok", summary, ""


def run_stage_here(name: str, args, points, out: Path) -> tuple[str, dict | None, str]:
    try:
        return "ok", STAGE_FUNCS[name](args, points, out), ""
    except Exception as exc:  # noqa: BLE001 - recorded, and the next stage still runs
        traceback.print_exc()
        return "failed", None, f"{type(exc).__name__}: {exc}"


def check_out_names(out: Path) -> list[str]:
    """Problems with what would come back from the device (empty: fits)."""
    files = [p for p in out.rglob("*") if p.is_file()]
    problems = [
        f"{p.name}: a name the device tool does not return"
        for p in files
        if not NAME_OK.match(p.name)
    ]
    problems += [f"{p}: deeper than 2 folders" for p in files if len(p.relative_to(out).parts) > 3]
    if len(files) + (0 if (out / LOG_NAME).exists() else 1) > MAX_OUT_FILES:
        problems.append(f"{len(files)} files and the log: more than {MAX_OUT_FILES} come back")
    return problems


def unpack(folder: Path) -> int:
    """The returned records into ``nmp/gpu/data/`` (the latency record as is, each kernel record
    of ``kernels.json`` under its own file name)."""
    from nmp.fileio import atomic_write_text
    from nmp.gpu.kernels_real import DATA_DIR

    written = []
    for rec in sorted(folder.glob(LATENCY_GLOB)):
        shutil.copyfile(rec, DATA_DIR / rec.name)
        written.append(rec.name)
    bundle = _read(folder / OUT_FILES["kernels"])
    for key, entry in bundle.get("points", {}).items():
        name = str(entry.get("record_file", ""))
        if not (NAME_OK.match(name) and name.startswith("measured-") and name.endswith(".json")):
            raise ValueError(f"{folder / OUT_FILES['kernels']}: points.{key}.record_file {name!r}")
        text = json.dumps(entry["record"], indent=2, sort_keys=True) + "\n"
        atomic_write_text(DATA_DIR / name, text)
        written.append(name)
    if not written:
        raise ValueError(f"{folder}: no latency-probe-*.json and no measured point in kernels.json")
    for name in written:
        print(f"wrote nmp/gpu/data/{name}")
    print("next: nmp validate --only gpu.real gpu.latency --table; git add nmp/gpu/data")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    p = parser()
    args = p.parse_args(argv)
    try:
        if args.unpack:
            return unpack(Path(args.unpack))
        if not args.out:
            raise ValueError("--out is required (the device's $OUT)")
        stages = _words(args.stages)
        if bad := [s for s in stages if s not in STAGES]:
            raise ValueError(f"unknown stage '{bad[0]}' (known: {', '.join(STAGES)})")
        points = plan(args)
    except (ValueError, OSError) as exc:
        print(f"{p.prog}: error: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - NmpError from a preset or workload
        print(f"{p.prog}: error: {exc}", file=sys.stderr)
        return 1
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.stage:  # one stage, in its own process
        summary = STAGE_FUNCS[args.stage](args, points, out)
        if args.summary_file:
            write_json(Path(args.summary_file), summary)
        return 0
    return orchestrate(args, argv, points, stages, out)


def orchestrate(args, argv: list[str], points, stages: list[str], out: Path) -> int:
    start = time.time()
    est = estimate(args, points, stages)
    args.kernel_repeats, args.probe_repeats = repeats_for(est, args)
    secs = stage_seconds(est, args)
    child_argv = [*argv, "--kernel-repeats", str(args.kernel_repeats)]
    child_argv += ["--probe-repeats", str(args.probe_repeats)]
    print(f"plan: {len(points)} points ({sum(1 for q in points if q.get('alias'))} aliased)")
    for q in points:
        print(f"  {q['key']:<26} {q['workload']:<15} {q['overrides']} {','.join(q['variants'])}")
    print(
        f"estimate (upper bound), repeats: kernels {args.kernel_repeats}, probe "
        f"{args.probe_repeats}; budget {args.budget_s:.0f} s, deadline {args.deadline_s:.0f} s"
    )
    for s in stages:
        print(f"  {s:<9} {secs[s]:>6.0f} s  {est['counts'].get(s, '')}")
    print(f"  total     {sum(secs.values()):>6.0f} s")
    status: dict[str, Any] = {
        "argv": argv,
        "dry_run": args.dry_run,
        "points": points,
        "estimate_s": secs,
        "repeats": {"kernels": args.kernel_repeats, "probe": args.probe_repeats},
        "stages": [],  # in the order run
    }
    write_json(out / OUT_FILES["stages"], status)
    in_process = args.in_process or (args.dry_run and not args.processes)
    for i, name in enumerate(stages):
        left = args.deadline_s - (time.time() - start)
        later = sum(min(secs[s], 30.0) for s in stages[i + 1 :])  # room for the rest
        limit = min(max(60.0, 3.0 * secs[name]), left - later)
        if limit < 5.0:
            status["stages"].append(
                {"name": name, "status": "skipped", "why": "no time left before deadline"}
            )
            write_json(out / OUT_FILES["stages"], status)
            continue
        print(f"=== stage {name} (limit {limit:.0f} s) ===", flush=True)
        t0 = time.time()
        if in_process:
            state, summary, why = run_stage_here(name, args, points, out)
        else:
            state, summary, why = run_child(child_argv, name, limit)
        status["stages"].append(
            {
                "name": name,
                "status": state,
                "wall_s": round(time.time() - t0, 1),
                "estimate_s": round(secs[name], 1),
                "summary": summary,
                "why": why,
            }
        )
        write_json(out / OUT_FILES["stages"], status)
        print(f"=== stage {name}: {state} in {time.time() - t0:.1f} s {why}", flush=True)
    for tmp in out.glob("*.tmp"):  # a write cut short: the previous version stands
        tmp.unlink()
    problems = check_out_names(out)
    for problem in problems:
        print(f"output: {problem}")
    states = {s["name"]: s["status"] for s in status["stages"]}
    print(f"done in {time.time() - start:.0f} s: {states}")
    return 0 if all(v == "ok" for v in states.values()) and not problems else 1


if __name__ == "__main__":
    sys.exit(main())
