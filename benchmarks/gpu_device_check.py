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
OUT_FILES = {
    "stages": "stages.json",
    "kernels": "kernels.json",
    "model": "model.json",
    "comparison_md": "comparison.md",
    "comparison_json": "comparison.json",
    "validate": "validate-real-gpu.txt",
}
LATENCY_GLOB = "latency-probe-*.json"  # the probe's record, under its own name
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
MODEL_RUN_S = 2.0  # one full-size model point on one core (1.25-1.7 s CPU measured here)
MIN_REPEATS = 3


def _bench(name: str):
    """A sibling benchmark script as a module (they are scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)
    spec.loader.exec_module(module)
    return sys.modules[name]


def _ints(text: str) -> list[int]:
    return [int(s) for s in text.split(",") if s]


def _words(text: str) -> list[str]:
    return [s for s in text.split(",") if s]


def write_json(path: Path, data: Any) -> None:
    """Whole or not at all: a crash mid-write leaves the previous version."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True, default=str) + "\n")
    os.replace(tmp, path)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=None, help="output folder ($OUT on the device)")
    p.add_argument("--arch", default="h200")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--reuse", default="high,medium,low,random")
    p.add_argument("--batches", default="256,512,1024,2048,4096,8192")
    p.add_argument("--no-dlrm", action="store_true", help="leave dlrm-benchmark out")
    p.add_argument("--variants", default="", help="real variants (default: all)")
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
    p.add_argument("--budget-s", type=float, default=420.0, help="repeats scaled to fit")
    p.add_argument("--deadline-s", type=float, default=540.0, help="the whole run ends by then")
    p.add_argument("--in-process", action="store_true", help="no stage processes (dry run)")
    p.add_argument("--processes", action="store_true", help="stage processes in a dry run too")
    p.add_argument("--dry-run", action="store_true", help="CPU only: nothing measured")
    p.add_argument("--unpack", default=None, help="copy a returned OUT's records into nmp")
    p.add_argument("--stage", default=None, help=argparse.SUPPRESS)  # a stage's own process
    p.add_argument("--summary-file", default=None, help=argparse.SUPPRESS)
    return p


def plan(args: argparse.Namespace) -> list[dict[str, Any]]:
    from nmp.gpu.kernels_real import real_variants
    from nmp.gpu.spec import load_gpu
    from nmp.workload import load_workload

    cmp = _bench("gpu_device_compare")
    known = list(real_variants(load_gpu(args.arch)))
    variants = _words(args.variants) or known
    unknown = [v for v in variants if v not in known]
    if unknown:
        raise ValueError(f"unknown real variant '{unknown[0]}' (known: {', '.join(known)})")
    reuse = _words(args.reuse)
    if bad := [r for r in reuse if r not in cmp.REUSE]:
        raise ValueError(f"unknown reuse level '{bad[0]}' (known: {', '.join(cmp.REUSE)})")
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
    from nmp.workload import DTYPE_BYTES, load_workload

    spec = load_workload(p["workload"], p["overrides"])
    lookups = int(round(spec.lookups_per_batch))
    t0 = spec.tables[0]
    return len(spec.tables), lookups, t0.dim * DTYPE_BYTES[t0.dtype]


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


# --- the stages (each runs in its own process unless --in-process) ------------------------------


def stage_env(args, points, out: Path) -> dict[str, Any]:
    import platform

    import numba
    import numpy

    env: dict[str, Any] = {
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "numba": numba.__version__,
    }
    if args.dry_run:
        env["gpu"] = "none (dry run)"
        return env
    import torch

    env["torch"] = torch.__version__
    env["cuda"] = torch.version.cuda
    if not torch.cuda.is_available():
        raise RuntimeError("no CUDA device visible to torch")
    prop = torch.cuda.get_device_properties(0)
    env.update(
        gpu=prop.name,
        sms=prop.multi_processor_count,
        l2_bytes=getattr(prop, "L2_cache_size", None),
        memory_bytes=prop.total_memory,
        capability=f"{prop.major}.{prop.minor}",
    )
    from nmp.gpu.kernels_real import device_facts

    env.update(device_facts())
    with_smi = ["--query-gpu=clocks.max.sm,clocks.max.mem,clocks.sm,power.limit"]
    try:
        smi = subprocess.run(
            ["nvidia-smi", *with_smi, "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
        )
        env["nvidia_smi"] = smi.stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        env["nvidia_smi"] = f"unavailable: {exc}"
    print(json.dumps(env, sort_keys=True))
    return env


def stage_latency(args, points, out: Path) -> dict[str, Any]:
    if args.latency_record:
        return {"record": args.latency_record, "measured": False}
    lat = _bench("gpu_latency")
    argv = [
        "--arch", args.arch, "--levels", args.probe_levels, "--warps", args.probe_warps,
        "--chains", args.probe_chains, "--row-bytes", args.probe_row_bytes,
        "--steps", str(args.probe_steps), "--seed", str(args.seed),
        "--repeats", str(args.probe_repeats), "--warmup", str(args.probe_warmup),
    ]  # fmt: skip
    if args.dry_run:
        if lat.main([*argv, "--dry-run"]) != 0:
            raise RuntimeError("the probe's dry run failed")
        return {"measured": False}
    from nmp.gpu.latency_probe import DATA_DIR

    start = time.time()
    if lat.main([*argv, "--record"]) != 0:
        raise RuntimeError("the probe failed")
    recs = [p for p in DATA_DIR.glob(f"latency-probe-{args.arch}-*.json")]
    recs = [p for p in recs if p.stat().st_mtime >= start - 1]
    if not recs:
        raise RuntimeError("the probe wrote no record")
    rec = max(recs, key=lambda p: p.stat().st_mtime)
    shutil.copyfile(rec, out / rec.name)
    return {"record": rec.name, "measured": True}


def _measure_point(plan_, args) -> dict[str, Any]:
    """All variants at once; if that fails (the pinning variants need libcudart's persisting-L2
    calls), the others again alone, so one failing mechanism costs only itself."""
    from nmp.errors import NmpError
    from nmp.gpu.kernels_real import measure

    try:
        return measure(plan_, repeats=args.kernel_repeats, warmup=args.kernel_warmup)
    except (NmpError, RuntimeError, OSError) as exc:
        keep = {n: v for n, v in plan_.variants.items() if not v.pinning}
        print(f"  all variants failed ({exc}); again without pinning: {', '.join(keep)}")
        if len(keep) == len(plan_.variants):
            raise
        plan_.variants = keep
        measured = measure(plan_, repeats=args.kernel_repeats, warmup=args.kernel_warmup)
        measured["failed_variants"] = str(exc)
        return measured


def stage_kernels(args, points, out: Path) -> dict[str, Any]:
    from nmp.gpu.kernels_real import build_plan, check_plan, record

    kern = _bench("gpu_kernels")
    bundle: dict[str, Any] = {"points": {}, "planned": {}}
    path = out / OUT_FILES["kernels"]
    for i, p in enumerate(q for q in points if not q.get("alias")):
        plan_ = build_plan(args.arch, p["workload"], p["overrides"], args.seed, p["variants"])
        # every point's launches; the kernels' bag convention (a random table) once
        lines = kern.dry_run_checks(plan_) if i == 0 else check_plan(plan_)
        lookups = sum(tb.indices.shape[0] for tb in plan_.tables)
        bundle["planned"][p["key"]] = {
            "workload": p["workload"],
            "overrides": p["overrides"],
            "variants": p["variants"],
            "tables": len(plan_.tables),
            "lookups": lookups,
            "checks": lines,
        }
        print(f"{p['key']}: {len(plan_.tables)} tables, {lookups:,} lookups, {p['variants']}")
        if not args.dry_run:
            measured = _measure_point(plan_, args)
            rec_path = record(plan_, measured, {})
            bundle["points"][p["key"]] = {
                "record_file": rec_path.name,
                "record": json.loads(rec_path.read_text()),
            }
            for v, r in measured["variants"].items():
                print(
                    f"  {v:<15} {r['median_us']:>10,.1f} us (min {r['min_us']:,.1f}, max "
                    f"{r['max_us']:,.1f}) exact {r['bit_exact']} regs {r['regs']}"
                )
        write_json(path, bundle)  # after every point: a later timeout keeps these
    return {"measured": len(bundle["points"]), "planned": len(bundle["planned"])}


def _model_task(task: tuple) -> float:
    arch, workload, wl, seed, arch_over = task
    from nmp.gpu.point import run_design_point

    over = {"arch": dict(arch_over), "workload": dict(wl)}
    return run_design_point(arch, workload, overrides=over, seed=seed).latency_ns / 1e3


def _run_tasks(tasks: list[tuple], workers: int) -> list[float]:
    if workers <= 1 or len(tasks) <= 1:
        return [_model_task(t) for t in tasks]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    first = _model_task(tasks[0])  # compiles the numba kernels once; forked workers inherit them
    ctx = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        return [first, *pool.map(_model_task, tasks[1:])]


def latency_record_path(args, out: Path) -> str:
    if args.latency_record:
        return str(Path(args.latency_record).resolve())
    recs = sorted(out.glob(LATENCY_GLOB))
    return str(recs[-1].resolve()) if recs else ""


def stage_model(args, points, out: Path) -> dict[str, Any]:
    from nmp.gpu.kernels_real import real_variants
    from nmp.gpu.spec import load_gpu

    rv = real_variants(load_gpu(args.arch))
    record_path = latency_record_path(args, out)
    versions: dict[str, dict[str, Any]] = {"as-is": {}}
    if record_path:
        versions["with-latency-record"] = {"hbm.loaded_latency_record": record_path}
    result: dict[str, Any] = {
        "arch": args.arch,
        "latency_record": Path(record_path).name if record_path else None,
        "figures": {},
        "errors": {},
    }
    keys = [(p, v) for p in points if not p.get("alias") for v in p["variants"]]
    for version, extra in versions.items():
        tasks = [
            (
                args.arch,
                p["workload"],
                tuple(sorted(p["overrides"].items())),
                args.seed,
                tuple(
                    sorted(
                        {"variant": rv[v].model_variant, **rv[v].model_overrides, **extra}.items()
                    )
                ),
            )
            for p, v in keys
        ]
        start = time.time()
        try:
            us = _run_tasks(tasks, args.model_workers)
        except Exception as exc:  # noqa: BLE001 - a bad record must not lose the as-is figures
            result["errors"][version] = f"{type(exc).__name__}: {exc}"
            print(f"model {version}: failed: {exc}")
            write_json(out / OUT_FILES["model"], result)
            continue
        figs: dict[str, dict[str, float]] = {}
        for (p, v), t in zip(keys, us, strict=True):
            figs.setdefault(p["key"], {})[v] = t
        for p in points:
            if p.get("alias") and p["alias"] in figs:
                figs[p["key"]] = {"baseline": figs[p["alias"]]["baseline"]}
        result["figures"][version] = figs
        print(f"model {version}: {len(tasks)} points in {time.time() - start:.1f} s")
        write_json(out / OUT_FILES["model"], result)
    return {"versions": list(result["figures"]), "errors": result["errors"]}


def _read(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text()) if path.is_file() else {}


def stage_compare(args, points, out: Path) -> dict[str, Any]:
    cmp = _bench("gpu_device_compare")
    bundle = _read(out / OUT_FILES["kernels"])
    measured = {k: e["record"] for k, e in bundle.get("points", {}).items()}
    model = _read(out / OUT_FILES["model"])
    figures = model.get("figures") or {"as-is": {}}
    results = {v: cmp.judge(points, measured, figs) for v, figs in figures.items()}
    any_rec = next(iter(measured.values()), {})
    header = [
        f"# Issue 37 on {any_rec.get('gpu_name', 'no GPU (nothing measured)')}",
        "",
        f"arch preset {args.arch}; driver {any_rec.get('driver', '-')}, torch "
        f"{any_rec.get('torch', '-')}, {any_rec.get('date', '-')}; latency record "
        f"{model.get('latency_record') or '-'}; {len(measured)} points measured",
    ]
    md = cmp.markdown(results, header)
    (out / OUT_FILES["comparison_md"]).write_text(md)
    write_json(
        out / OUT_FILES["comparison_json"],
        {"points": points, "results": results, "header": header},
    )
    print(md.split("\n## ")[0])
    return {v: r["criteria"] for v, r in results.items()}


def stage_validate(args, points, out: Path) -> dict[str, Any]:
    target = out / OUT_FILES["validate"]
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "nmp", "validate", "--only", "gpu.real", "gpu.latency"]
        cmd += ["--jobs", "1", "--table", "--out", tmp]
        env = dict(_child_env(), COLUMNS="200")
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env)
    target.write_text(f"$ {' '.join(cmd[1:])}\nexit {proc.returncode}\n{proc.stdout}{proc.stderr}")
    print(proc.stdout[-3000:])
    return {"rc": proc.returncode}


STAGE_FUNCS = {
    "env": stage_env,
    "latency": stage_latency,
    "kernels": stage_kernels,
    "model": stage_model,
    "compare": stage_compare,
    "validate": stage_validate,
}


# --- the orchestration --------------------------------------------------------------------------


def _child_env() -> dict[str, str]:
    """This environment with the checkout first on the path (the device has no installed nmp)."""
    path = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    return dict(os.environ, PYTHONPATH=os.pathsep.join(path))


def run_child(argv: list[str], name: str, timeout_s: float) -> tuple[str, dict | None, str]:
    """One stage in its own process group (killed whole at its limit): (status, summary, why)."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as fh:
        summary_file = fh.name
    cmd = [sys.executable, str(SCRIPT), *argv, "--stage", name, "--summary-file", summary_file]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=_child_env(), start_new_session=True)
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
        return "timeout", None, f"killed at its limit of {timeout_s:.0f} s"
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
    problems = check_out_names(out)
    for problem in problems:
        print(f"output: {problem}")
    states = {s["name"]: s["status"] for s in status["stages"]}
    print(f"done in {time.time() - start:.0f} s: {states}")
    return 0 if all(v == "ok" for v in states.values()) and not problems else 1


if __name__ == "__main__":
    sys.exit(main())
