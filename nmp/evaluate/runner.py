"""Run a sweep into a run folder: plan, skip what is done, execute, log, analyze, report.

A run folder (``reports/<run>/``) holds:

- ``sweep.toml``: the sweep file as run (``sweep.json``: as parsed); ``plan.json``: every
  point with its key;
- ``environment.json``: versions, git commit, host, executor of each session (first run and
  every ``--resume``);
- ``results.jsonl``: one line per finished point, appended as points finish (see
  :mod:`nmp.evaluate.store`) and rewritten in plan order when the run ends; ``errors.jsonl``:
  points that raised or ran past the time limit (re-run by ``--resume``);
- ``whatif.jsonl``: the points re-run under their designs' key assumptions for the report's
  explanations (:mod:`nmp.evaluate.explain`; the sweep's ``explain`` key says which);
- ``summary.json``, ``report.md``, ``results.csv`` and the PNG plots, written at the end.

``--resume`` re-reads ``results.jsonl`` and runs only the planned points whose key is not in it,
so an interrupted sweep completes with every point exactly once. A run holds an exclusive lock
on ``<run>/.lock`` (:func:`nmp.evaluate.store.run_lock`) from before it reads the results until
it has written its report: a second ``nmp evaluate`` on the same folder refuses at once instead
of running the points again.

``results.jsonl`` is deterministic: the same sweep gives the same bytes, whether its points ran
in one process, in a pool (finishing in any order) or over several ``--resume`` sessions. What
is not (the wall time of each point, when it finished, the LP solver's time) goes to
``timings.jsonl``, one line per point with its key.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from nmp.config import to_mapping
from nmp.errors import NmpError
from nmp.evaluate.environment import environment
from nmp.evaluate.executor import Executor, PointFn, SerialExecutor
from nmp.evaluate.run_folder import (
    ENVIRONMENT,
    ERRORS,
    RESULTS,
    TIMINGS,
    check_run_dir,
    check_same_plan,
)
from nmp.evaluate.run_summary import RunCounts, sweep_summary
from nmp.evaluate.store import (
    JsonlLog,
    read_jsonl,
    read_jsonl_lines,
    read_sessions,
    remove_stale_temps,
    rewrite_jsonl,
    run_lock,
)
from nmp.evaluate.sweep import Point, SweepSpec
from nmp.fileio import (
    atomic_write_json,
    atomic_write_text,
)
from nmp.results import result_problem

# Result fields that measure wall-clock time: moved from results.jsonl to timings.jsonl.
TIMING_FIELDS = frozenset({"lp_solve_s"})


class Progress(Protocol):
    """Hooks the runner calls while points finish (the console one is in nmp.report)."""

    def start(self, total: int, done: int) -> None: ...

    def point(self, label: str, ok: bool, detail: str) -> None: ...

    def finish(self) -> None: ...


class SilentProgress:
    """:class:`Progress` that shows nothing (the default)."""

    def start(self, total: int, done: int) -> None:
        pass

    def point(self, label: str, ok: bool, detail: str) -> None:
        pass

    def finish(self) -> None:
        pass


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def _check_saved_result(record: dict[str, Any], path: Path, line: int) -> None:
    """A saved point that a resumed run reuses must be one a run wrote: its reports read it."""
    problem = result_problem(record.get("result"))
    if problem is not None:
        key, what = problem
        raise NmpError(
            f"{what}: not a point nmp evaluate wrote (delete the line to run the point again)",
            file=str(path),
            line=line,
            key=key,
        )


def point_fn_default(point: Point) -> Any:
    from nmp.evaluate.point import run_point

    return run_point(point.arch, point.workload, point.memory, point.overrides, seed=point.seed)


def run_sweep(
    sweep: SweepSpec,
    keyed: list[tuple[Point, str]],
    run_dir: Path,
    *,
    sweep_text: str = "",
    point_fn: PointFn | None = None,
    executor: Executor | None = None,
    resume: bool = False,
    fail_fast: bool = False,
    progress: Progress | None = None,
    write_reports: Callable[[Path, dict[str, Any]], list[str]] | None = None,
    on_first_result: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """Run the planned ``keyed`` points of ``sweep`` into ``run_dir``; returns the summary.

    ``point_fn(point) -> PointResult | dict`` defaults to the real models; it must be picklable
    (a module-level function) for the process and Dask executors. ``on_first_result`` is called
    once, when the first point's result is saved (the CLI repoints ``latest`` then, so a run
    that fails to start never does). The whole run holds the folder's lock.
    """
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    with run_lock(run_dir):
        # checked again under the lock: another run may have finished here since the caller
        # looked
        check_run_dir(run_dir, resume=resume)
        remove_stale_temps(run_dir)
        return _run_locked(
            sweep,
            keyed,
            run_dir,
            sweep_text=sweep_text,
            point_fn=point_fn or point_fn_default,
            executor=executor or SerialExecutor(),
            resume=resume,
            fail_fast=fail_fast,
            progress=progress or SilentProgress(),
            write_reports=write_reports,
            on_first_result=on_first_result,
        )


def split_timings(result: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(``result`` without its :data:`TIMING_FIELDS` at any depth, those fields by dotted
    path)."""
    timings: dict[str, Any] = {}

    def strip(obj: Any, path: str) -> Any:
        if not isinstance(obj, dict):
            return obj
        out = {}
        for k, v in obj.items():
            if k in TIMING_FIELDS:
                timings[f"{path}{k}"] = v
            else:
                out[k] = strip(v, f"{path}{k}.")
        return out

    return strip(result, ""), timings


def _run_locked(
    sweep: SweepSpec,
    keyed: list[tuple[Point, str]],
    run_dir: Path,
    *,
    sweep_text: str,
    point_fn: PointFn,
    executor: Executor,
    resume: bool,
    fail_fast: bool,
    progress: Progress,
    write_reports: Callable[[Path, dict[str, Any]], list[str]] | None,
    on_first_result: Callable[[], None] | None,
) -> dict[str, Any]:
    # One entry per distinct configuration: a point configured twice runs once.
    plan: dict[str, Point] = {}
    for point, key in keyed:
        plan.setdefault(key, point)
    if resume:
        check_same_plan(run_dir, sweep.name, list(plan))  # before anything is overwritten
    done = _saved_results(plan, run_dir / RESULTS)
    _write_run_files(sweep, plan, run_dir, sweep_text, executor, resume)
    reused = sum(1 for k in plan if k in done)
    # Design by design (the models cache a built design between points: measured 1.3x faster
    # than interleaving designs), costliest first within a design so the last points to finish
    # are short ones.
    rank = {d: i for i, d in enumerate(dict.fromkeys(p.design for p in plan.values()))}
    todo = sorted(
        ((k, p) for k, p in plan.items() if k not in done),
        key=lambda kp: (rank[kp[1].design], -kp[1].weight),
    )
    t0 = time.perf_counter()
    progress.start(len(plan), reused)
    try:
        failures = _run_points(
            todo, done, run_dir, point_fn, executor, fail_fast, progress, on_first_result
        )
    finally:
        progress.finish()
    wall_s = time.perf_counter() - t0
    records = _settle_logs(plan, done, run_dir)
    ran = RunCounts(planned=len(plan), reused=reused, failures=failures, wall_s=wall_s)
    summary = sweep_summary(sweep, records, ran, run_dir, executor)
    if records:
        # why each design stands where it does: points re-run under their key assumptions
        from nmp.evaluate.explain import explain, run_whatifs

        whatifs = run_whatifs(
            records,
            summary,
            sweep.explain,
            run_dir,
            point_fn=point_fn,
            executor=executor,
            progress=progress,
        )
        explain(records, summary, whatifs)
    files = ["summary.json"]
    if write_reports is not None and records:
        files += write_reports(run_dir, summary)
    summary["files"] = [str(run_dir / f) for f in files]
    atomic_write_json(run_dir / "summary.json", summary)
    return summary


def _saved_results(plan: dict[str, Point], results_path: Path) -> dict[str, dict[str, Any]]:
    """The results a run folder already holds, by key (the first of each). The saved points
    are checked before any file of the run is rewritten: a refused line leaves the folder as
    it was (its sessions, its plan and its reports)."""
    done: dict[str, dict[str, Any]] = {}
    for line, record in read_jsonl_lines(results_path, repair=True):
        key = record.get("key", "")
        if key in plan and key not in done:
            _check_saved_result(record, results_path, line)
        done.setdefault(key, record)
    return done


def _write_run_files(
    sweep: SweepSpec,
    plan: dict[str, Point],
    run_dir: Path,
    sweep_text: str,
    executor: Executor,
    resume: bool,
) -> None:
    """The sweep as run and as parsed, its plan, and this session added to the environment."""
    if sweep_text:
        atomic_write_text(run_dir / "sweep.toml", sweep_text)
    atomic_write_json(run_dir / "sweep.json", to_mapping(sweep))
    atomic_write_json(
        run_dir / "plan.json",
        {"sweep": sweep.name, "points": [{"key": k, **p.to_json()} for k, p in plan.items()]},
    )
    env_path = run_dir / ENVIRONMENT
    sessions = read_sessions(env_path) if resume else []
    sessions.append(environment({"executor": executor.describe(), "resume": resume}))
    atomic_write_json(env_path, {"sessions": sessions})


def _run_points(
    todo: list[tuple[str, Point]],
    done: dict[str, dict[str, Any]],
    run_dir: Path,
    point_fn: PointFn,
    executor: Executor,
    fail_fast: bool,
    progress: Progress,
    on_first_result: Callable[[], None] | None,
) -> list[dict[str, Any]]:
    """Run ``todo`` on ``executor``, each result logged as it comes (``done`` gains it), each
    failure to errors.jsonl; the failures, in the order they came."""
    failures: list[dict[str, Any]] = []
    with (
        JsonlLog(run_dir / RESULTS) as log,
        JsonlLog(run_dir / ERRORS) as errlog,
        JsonlLog(run_dir / TIMINGS) as timelog,
    ):
        for i, outcome in executor.run(point_fn, [p for _, p in todo]):
            key, point = todo[i]
            record = {"key": key, **point.to_json()}
            timing = {
                "key": key,
                "wall_s": round(outcome.get("wall_s", 0.0), 6),
                "finished_utc": _now(),
            }
            if outcome["ok"]:
                record["result"], measured = split_timings(outcome["result"])
                log.append(record)
                timelog.append({**timing, **measured})
                done[key] = record
                if on_first_result is not None:
                    on_first_result()
                    on_first_result = None
                res = outcome["result"]
                detail = f"{res['lookups_per_s']:.4g} lookups/s"
            else:
                record.update(timing)
                record["label"] = point.label()
                record["error"] = outcome["error"]
                record["traceback"] = outcome.get("traceback", "")
                errlog.append(record)
                failures.append(record)
                detail = outcome["error"]
            progress.point(f"{point.label()} on {point.workload}", outcome["ok"], detail)
            if failures and fail_fast:
                break
    return failures


def _settle_logs(
    plan: dict[str, Point], done: dict[str, dict[str, Any]], run_dir: Path
) -> list[dict[str, Any]]:
    """The run's records in plan order, written back to results.jsonl; errors.jsonl keeps
    the points that still fail."""
    # Rows follow the current plan (labels and order), whichever session produced them; so
    # does results.jsonl from now on: the log in completion order becomes the same bytes that
    # a serial, a parallel and a resumed run of this sweep write.
    records = [
        {"key": k, **p.to_json(), "result": done[k]["result"]} for k, p in plan.items() if k in done
    ]
    rewrite_jsonl(run_dir / RESULTS, records + [r for k, r in done.items() if k not in plan])
    # errors.jsonl keeps the points that still fail, each with its latest failure: a failure
    # that a later session (--resume) ran to a result is dropped
    errors_path = run_dir / ERRORS
    if errors_path.exists():
        latest = {r.get("key"): r for r in read_jsonl(errors_path, repair=True)}
        rewrite_jsonl(errors_path, [r for k, r in latest.items() if k not in done])
    return records
