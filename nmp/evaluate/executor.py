"""Where points run: in this process, in a local process pool, or on a Dask cluster.

Each executor maps one picklable point function over the points and yields each point's outcome
as soon as it finishes (in completion order). The outcome is a plain dict built in the worker
by :func:`evaluate_one`, so a point that raises is reported like one that succeeds, and the
collecting process (the only writer of the results log) decides what to do with it. Points are
deterministic functions of their configuration, so every executor gives the same results.
"""

from __future__ import annotations

import logging
import math
import multiprocessing
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from nmp.errors import NmpError

PointFn = Callable[[Any], Any]
MAX_CHUNK = 16


def evaluate_one(point_fn: PointFn, point: Any) -> dict[str, Any]:
    """Run one point; never raises (the error travels back as data)."""
    t0 = time.perf_counter()
    try:
        result = point_fn(point)
        data = result.to_json() if hasattr(result, "to_json") else dict(result)
        return {"ok": True, "result": data, "wall_s": time.perf_counter() - t0}
    except Exception as exc:  # noqa: BLE001 (any failure of a model is reported per point)
        return {
            "ok": False,
            "error": f"{type(exc).__name__}: {exc}",
            "traceback": traceback.format_exc(limit=8),
            "wall_s": time.perf_counter() - t0,
        }


def _die_with_parent(parent_pid: int) -> None:
    """Pool worker initializer: the worker exits when the process that started the pool dies
    (even by SIGKILL, which runs no clean-up): on Linux the kernel sends it SIGKILL
    (``PR_SET_PDEATHSIG``); elsewhere, and as a second guard, a daemon thread checks every
    second whether the worker was re-parented."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG = 1
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(1.0)
            if os.getppid() != parent_pid:
                os._exit(1)

    threading.Thread(target=watch, name="nmp-parent-watch", daemon=True).start()


def evaluate_chunk(point_fn: PointFn, points: list[Any]) -> list[dict[str, Any]]:
    return [evaluate_one(point_fn, p) for p in points]


def chunk_indices(n: int, slots: int) -> list[list[int]]:
    """Consecutive runs of point positions: about 16 per worker slot, at most MAX_CHUNK points
    each (small enough for results to stream back and for workers to finish together)."""
    size = max(1, min(MAX_CHUNK, math.ceil(n / (16 * max(1, slots)))))
    return [list(range(i, min(i + size, n))) for i in range(0, n, size)]


def default_jobs() -> int:
    """One worker per CPU this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


class Executor:
    name = "executor"

    def run(self, point_fn: PointFn, points: list[Any]) -> Iterator[tuple[int, dict[str, Any]]]:
        """Yield (position in ``points``, outcome) as each point finishes."""
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        return {"executor": self.name}


class SerialExecutor(Executor):
    """In this process, one point after another (``--jobs 1``; easiest to debug)."""

    name = "serial"

    def run(self, point_fn: PointFn, points: list[Any]) -> Iterator[tuple[int, dict[str, Any]]]:
        for i, point in enumerate(points):
            yield i, evaluate_one(point_fn, point)


class LocalExecutor(Executor):
    """A pool of ``jobs`` worker processes on this machine.

    Workers are forked where the platform allows it, so they start with the parent's imports
    (numba-compiled models included) instead of re-importing them.
    """

    name = "local"

    def __init__(self, jobs: int | None = None) -> None:
        self.jobs = jobs or default_jobs()

    def describe(self) -> dict[str, Any]:
        return {"executor": self.name, "jobs": self.jobs}

    def run(self, point_fn: PointFn, points: list[Any]) -> Iterator[tuple[int, dict[str, Any]]]:
        if not points:
            return
        methods = multiprocessing.get_all_start_methods()
        ctx = multiprocessing.get_context("fork" if "fork" in methods else None)
        workers = min(self.jobs, len(points))
        pool = ProcessPoolExecutor(
            max_workers=workers,
            mp_context=ctx,
            initializer=_die_with_parent,
            initargs=(os.getpid(),),
        )
        try:
            # Runs of consecutive points per task: a worker keeps its design's caches warm.
            futures = {
                pool.submit(evaluate_chunk, point_fn, [points[i] for i in chunk]): chunk
                for chunk in chunk_indices(len(points), workers)
            }
            pending = set(futures)
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for fut in done:
                    try:
                        outcomes = fut.result()
                    except BrokenProcessPool:
                        raise NmpError(
                            "a worker process died (killed or out of memory); the points that "
                            "finished are saved: run again with --resume"
                        ) from None
                    yield from zip(futures[fut], outcomes, strict=True)
        except BaseException:
            # Interrupted (Ctrl-C, --fail-fast, an error): the points still running would be
            # lost anyway (--resume re-runs them), so stop the workers instead of waiting.
            workers_now = list(getattr(pool, "_processes", {}).values())
            pool.shutdown(wait=False, cancel_futures=True)
            for proc in workers_now:
                proc.terminate()
            raise
        pool.shutdown(wait=True)


class DaskExecutor(Executor):
    """A Dask cluster: the one at ``address``, or a local one of ``workers`` processes.

    ``processes=False`` starts the local cluster's workers as threads of this process (for
    tests: no process start-up, but the GIL serializes pure-Python models).
    """

    name = "dask"

    def __init__(
        self, address: str | None = None, workers: int | None = None, *, processes: bool = True
    ) -> None:
        self.address = address
        self.workers = workers or default_jobs()
        self.processes = processes

    def describe(self) -> dict[str, Any]:
        if self.address:
            return {"executor": self.name, "scheduler": self.address}
        return {"executor": self.name, "local_workers": self.workers, "processes": self.processes}

    def run(self, point_fn: PointFn, points: list[Any]) -> Iterator[tuple[int, dict[str, Any]]]:
        if not points:
            return
        try:
            from distributed import Client, LocalCluster, as_completed
        except ImportError:
            raise NmpError(
                "the Dask executor needs dask and distributed: pip install 'nmp[dask]'"
            ) from None
        cluster = None
        try:
            if self.address:
                client = Client(self.address, timeout="20s")
            else:
                cluster = LocalCluster(
                    n_workers=self.workers,
                    threads_per_worker=1,
                    processes=self.processes,
                    dashboard_address=None,
                    silence_logs=logging.ERROR,
                )
                client = Client(cluster)
        except (OSError, ValueError, TypeError) as exc:
            # OSError: nothing answers; ValueError/TypeError: not an address (no port...)
            raise NmpError(f"cannot reach the Dask scheduler {self.address}: {exc}") from None
        try:
            # Dask costs a few ms per task on a small machine: points travel in chunks so that
            # overhead stays small while results still stream back as chunks finish.
            slots = max(1, sum(client.nthreads().values())) if self.address else self.workers
            chunks = chunk_indices(len(points), slots)
            futures = client.map(
                evaluate_chunk,
                [point_fn] * len(chunks),
                [[points[i] for i in chunk] for chunk in chunks],
                pure=False,
                retries=0,
            )
            position = {f.key: c for f, c in zip(futures, chunks, strict=True)}
            for fut, result in as_completed(futures, with_results=True, raise_errors=False):
                chunk = position[fut.key]
                if isinstance(result, BaseException):  # the worker itself failed
                    error = f"{type(result).__name__}: {result}"
                    for i in chunk:
                        yield i, {"ok": False, "error": error, "wall_s": 0.0}
                else:
                    yield from zip(chunk, result, strict=True)
                fut.release()
        finally:
            client.close()
            if cluster is not None:
                cluster.close()


def make_executor(
    jobs: int | None = None, scheduler: str | None = None, dask_workers: int | None = None
) -> Executor:
    """The executor the command-line flags ask for."""
    if scheduler or dask_workers:
        return DaskExecutor(scheduler, dask_workers)
    jobs = jobs or default_jobs()
    return SerialExecutor() if jobs == 1 else LocalExecutor(jobs)
