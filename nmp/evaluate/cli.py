"""``nmp evaluate``: run a design-space sweep and write a report.

Run folders: every run writes ``<out>/<run>/`` (default ``reports/<sweep>-<UTC time>/``) and
``<out>/latest`` is a symlink to the newest run (a copy where symlinks are not allowed), so
``reports/latest/report.md`` is always the last report. ``--resume`` continues ``--run NAME``
(default: the run ``latest`` points to) with the sweep file saved in it, unless a sweep is given.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path
from typing import Any

from nmp.cliargs import json_text
from nmp.config import load_toml
from nmp.errors import NmpError
from nmp.guard import add_argument, check

# The `nmp evaluate` command: nmp.cli reads this literal without importing the module
# (name, place in `nmp --help`, one-line help; nmp.cli.command_table).
NMP_COMMAND = {
    "name": "evaluate",
    "order": 4,
    "help": "run a design-space sweep and write a report",
}


DEFAULT_SWEEP = "default"
DEFAULT_POINT_TIME_LIMIT_S = 600.0  # = nmp.evaluate.executor.DEFAULT_TIME_LIMIT_S (a test says)
EPILOG = """\
sweep file (TOML; see workloads/sweeps/*.toml):
  name = "study"                    workloads = ["recross-eval"]
  archs = ["host-cpu", "recross"]   memories = []          (memory presets to cross)
  baseline = "host-cpu"             sampling = "grid"      (or "random" / "latin-hypercube",
                                    samples = N, seed = S: nmp models --registries lists them)
  objectives = { lookups_per_s = "max", energy_pj_per_lookup = "min", area_mm2 = "min" }
  explain = "all"                   (or "best", "none": points the report re-runs under their
                                    presets' [[key_assumptions]] to say why each stands there)
  [axes]                            any spec field by dotted path, crossed with every design:
  workload.batch = [1, 32, 128]     arch.memory.ranks = [1, 2, 4]
  [[designs]]                       a preset with fixed overrides and axes of its own:
  name = "recross-no-salp"   arch = "recross"   set = { "arch.subarray_parallelism" = false }
  A linked axis sets several fields per step: bank = [{ "arch.bank.units" = 4,
  "arch.bank.capacity_banks" = 4 }, ...]. Presets, field paths and every point's values are
  checked before anything runs; errors name the key.

run folder (reports/<run>/): sweep.toml, plan.json, environment.json, results.jsonl (one line
per finished point, the same bytes for the same sweep; --resume runs only the missing ones),
timings.jsonl (wall-clock times: not deterministic), errors.jsonl, whatif.jsonl (the report's
re-runs under key assumptions), summary.json, report.md,
results.csv, a PNG per registered plot (speedup.png, pareto.png, ...), .lock (one run at a time);
reports/latest -> newest run with a result.
"""


def _run(args: argparse.Namespace) -> int:
    _check_flags(args)
    base = Path(args.out)
    if base.exists() and not base.is_dir():
        raise NmpError(f"--out {base}: not a folder")
    if not (args.resume and args.sweep is None):
        from nmp.evaluate.study import load_custom_study

        study = load_custom_study(args.sweep or DEFAULT_SWEEP)
        if study is not None:  # a study with its own runner (sharding, caches, ...)
            return _run_study(args, study, base)
    sweep, sweep_path, run_dir = _load(args, base)
    keyed = _check_before_running(args, sweep, sweep_path)
    if args.check:
        n = len({k for _, k in keyed})
        print(f"{sweep_path}: ok, {n} points")
        return 0
    return _execute(args, base, run_dir, sweep, sweep_path, keyed)


def _check_flags(args: argparse.Namespace) -> None:
    """The flags that do not combine or lie outside their range, refused before anything
    is read."""
    if args.jobs is not None and args.jobs < 1:
        raise NmpError("--jobs must be >= 1")
    if args.dask_workers is not None and args.dask_workers < 1:
        raise NmpError("--dask-workers must be >= 1")
    if args.scheduler and args.dask_workers:
        raise NmpError("give either --scheduler (a running cluster) or --dask-workers (a new one)")
    if args.jobs is not None and (args.scheduler or args.dask_workers):
        # --jobs sizes the local pool, which a Dask run does not use: silently ignored before
        flag = "--scheduler" if args.scheduler else "--dask-workers"
        raise NmpError(f"--jobs and {flag} do not combine: {flag} runs the points on Dask")
    if args.scheduler:
        check_scheduler_address(args.scheduler)
    if args.point_time_limit < 0:
        raise NmpError("--point-time-limit must be >= 0 (0: no limit)")
    if not args.out.strip():
        raise NmpError("--out is empty: give a folder (default: reports)")


def _load(args: argparse.Namespace, base: Path) -> tuple[Any, Path, Path]:
    """(the sweep, its file, its run folder): the stored sweep of the run to resume, or the
    named (default) sweep."""
    from nmp.evaluate.run_folder import resolve_run_dir
    from nmp.evaluate.study import is_custom
    from nmp.evaluate.sweep import load_sweep, parse_sweep

    if args.resume and args.sweep is None:
        run_dir = resolve_run_dir(base, args.run, resume=True, sweep=None)  # type: ignore[arg-type]
        stored = run_dir / "sweep.toml"
        if not stored.exists():
            raise NmpError(f"nothing to resume: {stored} does not exist")
        data = load_toml(stored)
        if is_custom(data):
            raise NmpError(
                f"{run_dir} holds a study with its own runner ({data.get('runner')}), which "
                "cannot --resume: run it again (nmp evaluate "
                f"{data.get('name') or 'STUDY'})"
            )
        return parse_sweep(data, file=str(stored)), stored, run_dir
    sweep, sweep_path = load_sweep(args.sweep or DEFAULT_SWEEP)
    return sweep, sweep_path, resolve_run_dir(base, args.run, resume=args.resume, sweep=sweep)


def _check_before_running(args: argparse.Namespace, sweep, sweep_path) -> list:
    """Every point checked against the presets, the what-ifs' keys, and the memory the
    points need on this machine's workers (also for --check: a point the run would refuse
    is no sweep that checks "ok"); the keyed points."""
    # numpy: loaded when the command runs, not for `nmp --help`
    from nmp.evaluate.budget import check_sweep, sweep_estimate
    from nmp.evaluate.executor import default_jobs

    check(sweep_estimate(sweep, str(sweep_path)), args.max_memory)
    # Everything is checked against the presets before the first point runs.
    keyed = _validate(sweep, sweep_path, quiet=args.json)
    if sweep.explain != "none":  # the report's what-if runs: their --set paths, checked now
        from nmp.evaluate.explain import check_key_assumptions

        check_key_assumptions([d.arch for d in sweep.all_designs])
    if not args.scheduler:  # a remote cluster's memory is not ours; a local one's is
        unique = list({k: p for p, k in keyed}.values())
        if args.dask_workers:
            check_sweep(unique, args.dask_workers, args.max_memory, flag="--dask-workers")
        else:
            check_sweep(unique, args.jobs or default_jobs(), args.max_memory)
    return keyed


def _execute(args: argparse.Namespace, base: Path, run_dir: Path, sweep, sweep_path,
             keyed: list) -> int:  # fmt: skip
    """Run the checked sweep into ``run_dir``, repoint ``latest``, print the summary; a
    failed point fails the command once every point has run."""
    from nmp.evaluate.executor import make_executor
    from nmp.evaluate.run_folder import LATEST, check_latest, check_run_dir, update_latest
    from nmp.evaluate.runner import run_sweep

    # rich: loaded when the command runs, not for `nmp --help`
    from nmp.report.console import ConsoleProgress, make_console, print_sweep_summary
    from nmp.report.files import write_report_files

    # With --json, stdout carries only the JSON document; progress goes to stderr.
    console = make_console(stderr=args.json)  # piped: wide enough for the tables
    executor = make_executor(
        args.jobs, args.scheduler, args.dask_workers, args.point_time_limit or None
    )
    if args.scheduler:  # an address where nothing answers: one line, before any progress
        executor.connect()
    check_run_dir(run_dir, resume=args.resume)  # before anything is written
    if run_dir.parent.resolve() == base.resolve() and run_dir.name != LATEST:
        check_latest(base)  # what the run repoints: a folder of the user's is refused now
    # loaded when the command runs, not for `nmp --help`
    from nmp.report.progress import is_warm

    if not is_warm() and not args.json:
        console.print(
            "first run on this machine: each design's first point compiles its numba kernels "
            "(about 10-20 s each, once; `python -m nmp.warmup`, run by `make`, does it ahead)"
        )
    run_dir, created = _make_run_dir(args, base, run_dir, sweep)

    def repoint_latest() -> None:
        if run_dir.parent.resolve() == base.resolve() and run_dir.name != LATEST:
            update_latest(base, run_dir)

    try:
        summary = run_sweep(
            sweep,
            keyed,
            run_dir,
            sweep_text=Path(sweep_path).read_text(),
            executor=executor,
            resume=args.resume,
            fail_fast=args.fail_fast,
            # progress on stderr: stdout holds the report (or the JSON document)
            progress=ConsoleProgress(make_console(stderr=True), quiet=args.json),
            write_reports=lambda folder, summary: write_report_files(
                folder, summary, quiet=args.json
            ),
            on_first_result=repoint_latest,
        )
    except BaseException as exc:
        if created and not _has_results(run_dir):
            # a run stopped before its first result leaves no folder and does not move latest
            shutil.rmtree(run_dir, ignore_errors=True)
        elif isinstance(exc, KeyboardInterrupt):
            print(
                f"nmp: finished points are saved in {run_dir}; continue with "
                f"'{_resume_command(args, run_dir)}'",
                file=sys.stderr,
            )
        raise
    repoint_latest()  # again: the copy fallback must hold the final files
    if args.json:
        print(json_text(summary))
    else:
        print_sweep_summary(summary, console)
    if summary["failed"]:
        first = summary["failed"][0]
        hint = " (--point-time-limit)" if "PointTimeout" in first["error"] else ""
        raise NmpError(
            f"{len(summary['failed'])} of {summary['points']} points failed (first: "
            f"{first['point']}: {first['error']}{hint}; all in {run_dir / 'errors.jsonl'}); fix "
            f"and continue with '{_resume_command(args, run_dir)}'"
        )
    return 0


def _validate(sweep, sweep_path, *, quiet: bool):
    """:func:`validate_sweep` with a bar on a terminal (a large sweep takes seconds)."""
    import contextlib

    # numpy and rich: loaded when the command runs, not for `nmp --help`
    from nmp.evaluate.sweepcheck import validate_sweep
    from nmp.report.progress import bar

    with contextlib.ExitStack() as stack:
        advance = None
        checked = 0

        def progress(done: int, total: int) -> None:
            nonlocal advance, checked
            if advance is None:
                advance = stack.enter_context(bar(f"checking {total:,} points", total, quiet=quiet))
            advance(done - checked)
            checked = done

        return validate_sweep(sweep, file=str(sweep_path), progress=progress)


def _run_study(args: argparse.Namespace, study, base: Path) -> int:
    """Run a custom study (a sweep file with a ``runner``) into its run folder."""

    # numpy: loaded when the command runs, not for `nmp --help`
    from nmp.evaluate.run_folder import (
        check_latest,
        check_run_dir,
        resolve_run_dir,
        update_latest,
    )
    from nmp.evaluate.store import run_lock
    from nmp.evaluate.study import print_study_rows, run_custom_study

    if args.resume:
        raise NmpError(f"study '{study.name}' has its own runner and cannot --resume: run it again")
    if args.check:
        # loaded when the command runs, not for `nmp --help`
        from nmp.evaluate.study import check_study_params

        checked = "params checked" if check_study_params(study) else "params not checked"
        print(f"{study.file}: ok, runner {study.runner} ({checked})")
        return 0
    run_dir = resolve_run_dir(base, args.run, resume=False, sweep=study)
    check_run_dir(run_dir, resume=False)
    if run_dir.parent.resolve() == base.resolve():
        check_latest(base)
    if (run_dir / "summary.json").exists():
        raise NmpError(f"{run_dir} already holds a study's results: pick another --run")
    run_dir, created = _make_run_dir(args, base, run_dir, study)
    try:
        with run_lock(run_dir):
            if (run_dir / "summary.json").exists():  # again, under the lock
                raise NmpError(f"{run_dir} already holds a study's results: pick another --run")
            # loaded on use (start-up time)
            from nmp.report.progress import activity

            with activity(f"study {study.name} ({study.runner})", quiet=args.json):
                summary = run_custom_study(
                    study, run_dir, jobs=args.jobs, sweep_text=Path(study.file).read_text()
                )
    except BaseException:
        if created and not any(
            p.name != "sweep.toml" and not p.name.startswith(".") for p in run_dir.iterdir()
        ):
            # a study that failed before writing anything of its own leaves no folder
            shutil.rmtree(run_dir, ignore_errors=True)
        raise
    if run_dir.parent.resolve() == base.resolve():
        update_latest(base, run_dir)
    if args.json:
        print(json_text(summary))
    else:
        # rich: loaded on use (start-up time)
        from nmp.report.console import make_console

        print_study_rows(summary, make_console())
    return 0


def _make_run_dir(args: argparse.Namespace, base: Path, run_dir: Path, sweep) -> tuple[Path, bool]:
    """The run folder, created if it is new: (folder, whether this run created it)."""
    # numpy: loaded on use (start-up time)
    from nmp.evaluate.run_folder import default_run_name
    from nmp.fileio import claim_new_folder

    try:
        if args.run is None and not args.resume:
            # an auto-named run: a folder of its own even if another run started this second
            try:
                # (two runs started in the same second get two folders)
                return claim_new_folder(base, default_run_name(sweep)), True
            except NmpError as exc:
                raise NmpError(f"--out {base}: {exc.message}") from None
        if not run_dir.exists():
            run_dir.mkdir(parents=True)
            return run_dir, True
    except OSError as exc:
        raise NmpError(f"--out {base}: cannot create the run folder ({exc.strerror})") from None
    return run_dir, False


def _has_results(run_dir: Path) -> bool:
    # numpy: loaded on use (start-up time)
    from nmp.evaluate.run_folder import RESULTS

    path = run_dir / RESULTS
    return path.exists() and path.stat().st_size > 0


def check_scheduler_address(address: str) -> None:
    """A Dask scheduler address of the form [tcp://|tls://]HOST:PORT (PORT 1..65535), checked
    before a connection is tried (a port out of range waited 20 s for a connection timeout)."""
    scheme, sep, rest = address.partition("://")
    if not sep:
        scheme, rest = "tcp", address
    if scheme not in ("tcp", "tls"):
        return  # another transport (inproc, ucx): Dask checks it
    host, _, port = rest.rpartition(":")
    if (
        not host
        or not port.isdigit()
        or not 1 <= int(port) <= 65535
        or any(c.isspace() for c in rest)
    ):
        raise NmpError(
            f"--scheduler {address!r}: not an address (expected tcp://HOST:PORT, PORT 1..65535)"
        )


def _resume_command(args: argparse.Namespace, run_dir: Path) -> str:
    out = "" if args.out == "reports" else f" --out {args.out}"
    return f"nmp evaluate --resume --run {run_dir.name}{out}"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "evaluate",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=EPILOG,
        help=str(NMP_COMMAND["help"]),
        description="Sweep designs x memories x workloads x spec fields (a sweep file, default "
        "workloads/sweeps/default.toml), then report the best points, the Pareto sets, speedup "
        "and energy saving over the baseline, into reports/<run>/ (reports/latest links to the "
        "newest run).",
    )
    p.add_argument(
        "sweep",
        nargs="?",
        help="sweep file or name in workloads/sweeps/ (default: 'default'; with --resume: the "
        "sweep saved in the run)",
    )
    p.add_argument("--run", help="run folder name under --out (default: <sweep>-<UTC time>)")
    p.add_argument("--out", default="reports", help="folder of the run folders (default: reports)")
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue a run: only points missing from its results.jsonl are run",
    )
    p.add_argument("--jobs", "-j", type=int, help="local worker processes (default: one per CPU)")
    p.add_argument("--scheduler", metavar="ADDRESS", help="run on the Dask cluster at ADDRESS")
    p.add_argument(
        "--dask-workers", type=int, metavar="N", help="start a local Dask cluster of N workers"
    )
    p.add_argument("--fail-fast", action="store_true", help="stop at the first failed point")
    p.add_argument(
        "--point-time-limit",
        type=float,
        default=DEFAULT_POINT_TIME_LIMIT_S,
        metavar="SECONDS",
        help="a point that runs longer fails, named in errors.jsonl, and the sweep goes on "
        f"(default {DEFAULT_POINT_TIME_LIMIT_S:g}; 0: no limit; not on a Dask cluster)",
    )

    add_argument(p)
    p.add_argument(
        "--check", action="store_true", help="validate the sweep against the presets and stop"
    )
    p.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")
    p.set_defaults(func=_run)
