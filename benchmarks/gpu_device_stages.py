"""The stages of ``benchmarks/gpu_device_check.py`` (issue #37 on a CUDA GPU), each a function
``stage_NAME(args, points, out) -> summary`` that writes its results into ``out`` as soon as it has
them; the orchestration, the estimate and the output limits are in ``gpu_device_check.py``."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
OUT_FILES = {
    "stages": "stages.json",
    "kernels": "kernels.json",
    "model": "model.json",
    "comparison_md": "comparison.md",
    "comparison_json": "comparison.json",
    "validate": "validate-real-gpu.txt",
}
LATENCY_GLOB = "latency-probe-*.json"  # the probe's record, under its own name


# The hand-written kernel's registers per thread at each prefetch depth (rows loaded before
# summing), NVRTC sm_90, measured on an H200 (data/reference/GPU-H200.md, "Hand-written
# kernels"): the model's input for that depth, as the preset's prefetch_regs_per_thread (30) is
# for the depth it runs (4).
PREFETCH_REGS = {4: 30, 8: 32, 16: 34}


def variants_for(gpu, depths: list[int]) -> dict[str, Any]:
    """The real variants of ``gpu`` and one ``prefetch-N`` per extra prefetch depth N."""
    from dataclasses import replace

    from nmp.gpu.kernels_real import real_variants

    out = real_variants(gpu)
    base = out["prefetch"]
    for n in depths:
        if n == base.prefetch:
            continue
        if n not in PREFETCH_REGS:
            raise ValueError(f"prefetch depth {n}: registers known for {sorted(PREFETCH_REGS)}")
        over = {
            "kernel.prefetch_distance": n - 1,
            "kernel.prefetch_regs_per_thread": PREFETCH_REGS[n],
        }
        out[f"prefetch-{n}"] = replace(
            base,
            name=f"prefetch-{n}",
            description=f"torch's work split, {n} rows loaded before summing",
            model_overrides=over,
            prefetch=n,
        )
    return out


def depths(args) -> list[int]:
    return [int(s) for s in args.prefetch_depths.split(",") if s]


def bench(name: str):
    """A sibling benchmark script as a module (they are scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)
    spec.loader.exec_module(module)
    return sys.modules[name]


def write_json(path: Path, data: Any) -> None:
    """Whole or not at all: a crash mid-write leaves the previous version."""
    from nmp.fileio import atomic_write_text

    atomic_write_text(path, json.dumps(data, indent=1, sort_keys=True, default=str) + "\n")


def _read(path: Path) -> dict[str, Any]:
    """A stage's JSON file; {} where a stage never wrote it (or died before its first write)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def child_env() -> dict[str, str]:
    """This environment with the checkout first on the path (the device has no installed nmp)."""
    path = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    return dict(os.environ, PYTHONPATH=os.pathsep.join(path))


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
    lat = bench("gpu_latency")
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


MAX_WINDOW_ATTR = 109  # cudaDevAttrMaxAccessPolicyWindowSize (134,217,728 B on the H200)


def max_window_bytes() -> int | None:
    """The device's largest access-policy window (None: unknown)."""
    try:
        import cupy as cp

        return int(cp.cuda.runtime.deviceGetAttribute(MAX_WINDOW_ATTR, 0))
    except Exception:  # noqa: BLE001 - unknown: the window is tried and may fail alone
        return None


def drop_oversized_windows(plan_, max_bytes: int | None) -> dict[str, str]:
    """Take out the window variants whose window (each table's hot rows, laid out first:
    ``nmp.gpu.hot_layout``) is larger than the device allows, so the point's other variants
    still run: CUDA refuses such a window. Returns {variant: why}."""
    largest = max(tb.window_bytes for tb in plan_.tables)
    if not max_bytes or largest <= max_bytes:
        return {}
    why = (
        f"a window over a table's {largest:,} B of hot rows exceeds the device's largest "
        f"access-policy window ({max_bytes:,} B)"
    )
    skipped = {n: why for n, v in plan_.variants.items() if v.access_window}
    plan_.variants = {n: v for n, v in plan_.variants.items() if n not in skipped}
    return skipped


def _measure_point(plan_, args) -> dict[str, Any]:
    """All variants at once (less any window the device refuses); if that fails (the pinning
    variants need libcudart's persisting-L2 calls), the others again alone, so one failing
    mechanism costs only itself."""
    skipped = drop_oversized_windows(plan_, max_window_bytes())
    measured = _measure_or_retry(plan_, args)
    if skipped:
        measured["skipped_variants"] = skipped
        print(f"  not run: {skipped}")
    return measured


def _measure_or_retry(plan_, args) -> dict[str, Any]:
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
    from nmp.gpu.spec import load_gpu

    kern = bench("gpu_kernels")
    bundle: dict[str, Any] = {"points": {}, "planned": {}}
    path = out / OUT_FILES["kernels"]
    for i, p in enumerate(q for q in points if not q.get("alias")):
        allv = variants_for(load_gpu(args.arch), depths(args))
        stock = [v for v in p["variants"] if not v.startswith("prefetch-")]
        plan_ = build_plan(args.arch, p["workload"], p["overrides"], args.seed, stock)
        plan_.variants = {v: allv[v] for v in p["variants"]}  # with the extra prefetch depths
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
        write_json(path, bundle)  # the plan is there even if the measurement dies
        if not args.dry_run:
            try:
                measured = _measure_point(plan_, args)
            except Exception as exc:  # noqa: BLE001 - the next point may still run
                traceback.print_exc()
                bundle.setdefault("errors", {})[p["key"]] = f"{type(exc).__name__}: {exc}"
                write_json(path, bundle)
                continue
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
    if bundle.get("errors"):
        failed = ", ".join(bundle["errors"])
        raise RuntimeError(f"{len(bundle['errors'])} points not measured ({failed}); see the log")
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
    from nmp.gpu.spec import load_gpu

    rv = variants_for(load_gpu(args.arch), depths(args))
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


def records_from_data(args, points) -> dict[str, dict[str, Any]]:
    """Each point's newest ``measured-kernels-*.json`` in ``nmp/gpu/data/`` (same preset,
    workload and overrides): the comparison of every point recorded so far, reruns included."""
    from nmp.gpu import kernels_real

    found: dict[str, dict[str, Any]] = {}
    for path in sorted(kernels_real.DATA_DIR.glob("measured-kernels-*.json")):  # date last
        rec = _read(path)
        for p in points:
            if (
                rec.get("arch_preset") == args.arch
                and rec.get("workload") == p["workload"]
                and rec.get("workload_overrides") == p["overrides"]
                and "variants" in rec
            ):
                found[p["key"]] = rec
    return found


def stage_compare(args, points, out: Path) -> dict[str, Any]:
    cmp = bench("gpu_device_compare")
    if args.from_data:
        measured = records_from_data(args, points)
    else:
        bundle = _read(out / OUT_FILES["kernels"])
        measured = {k: e["record"] for k, e in bundle.get("points", {}).items()}
    model = _read(out / OUT_FILES["model"])
    figures = model.get("figures") or {"as-is": {}}
    results = {v: cmp.judge(points, measured, figs) for v, figs in figures.items()}
    any_rec: dict[str, Any] = next(iter(measured.values()), {})
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


def validate_command(report_dir: str) -> list[str]:
    """``nmp validate``'s real-GPU group (gpu.real and gpu.latency) on every record in
    ``nmp/gpu/data/``, its report in ``report_dir`` (not in OUT: the files coming back are few)."""
    cmd = [sys.executable, "-m", "nmp", "validate", "--only", "gpu.real", "gpu.latency"]
    return [*cmd, "--jobs", "1", "--table", "--out", report_dir]


def stage_validate(args, points, out: Path) -> dict[str, Any]:
    target = out / OUT_FILES["validate"]
    if args.dry_run:  # the records it would read are not this run's: it would model them all
        cmd = validate_command("REPORTS")
        target.write_text(f"$ {' '.join(cmd[1:])}\ndry run: not run (nothing recorded)\n")
        return {"rc": None}
    with tempfile.TemporaryDirectory() as tmp:
        cmd = validate_command(tmp)
        env = dict(child_env(), COLUMNS="200")
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
