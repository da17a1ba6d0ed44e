"""Where points run: in this process, in a local process pool, or on a Dask cluster.

Each executor maps one picklable point function over the points and yields each point's outcome
as soon as it finishes (in completion order). The outcome is a plain dict built in the worker
by :func:`evaluate_one`, so a point that raises is reported like one that succeeds, and the
collecting process (the only writer of the results log) decides what to do with it. Points are
deterministic functions of their configuration, so every executor gives the same results.
"""

from __future__ import annotations

import contextlib
import logging
import math
import multiprocessing
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Generator, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from nmp.errors import NmpError

PointFn = Callable[[Any], Any]
MAX_CHUNK = 16
# A point's default time limit (chosen: the slowest point of the kit's studies takes about a
# minute on one core, the first point of a design adds 10-20 s of numba compilation; ten
# minutes is far above both, and still bounds a point that would never finish).
DEFAULT_TIME_LIMIT_S = 600.0
# A pool worker whose point ignores its time limit (a compiled loop does not return to Python,
# where the limit is raised) is killed this long after it (chosen).
KILL_GRACE_S = 10.0
# nmp.arch.threads.THREADS_ENV (not imported: the executor loads no model)
POINT_THREADS_ENV = "NMP_THREADS"


# After a point's time limit, the signal repeats this often (chosen: 0.1 s) until the point has
# stopped: a PointTimeout raised inside a C library's callback is swallowed there.
TIME_LIMIT_REPEAT_S = 0.1


class PointTimeout(Exception):
    """A point ran past its time limit."""


def _time_limit_message(limit_s: float) -> str:
    return f"ran longer than the time limit of {limit_s:g} s per point"


@contextlib.contextmanager
def _time_limit(limit_s: float | None) -> Iterator[None]:
    """Raise :class:`PointTimeout` in the block after ``limit_s`` seconds (SIGALRM; only in a
    process's main thread, where signal handlers run: elsewhere the block runs unlimited)."""
    usable = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if not limit_s or not usable:
        yield
        return
    limit: float = limit_s

    def expire(signum: int, frame: Any) -> None:
        raise PointTimeout(_time_limit_message(limit))

    def unraisable(info: Any) -> None:
        # the signal came while a C library ran a Python callback (numba's compiler through
        # llvmlite's ctypes callbacks): the exception cannot leave the callback and Python
        # would print "Exception ignored on calling ctypes callback function"; the timer's
        # repeat raises it again once the callback has returned
        if not isinstance(info.exc_value, PointTimeout):
            hook(info)

    hook = sys.unraisablehook
    sys.unraisablehook = unraisable
    previous = signal.signal(signal.SIGALRM, expire)
    try:
        # the first expiry after ``limit``, then every REPEAT_S until the block is left (armed
        # inside the try: a limit shorter than the next step expires before it)
        signal.setitimer(signal.ITIMER_REAL, limit, TIME_LIMIT_REPEAT_S)
        yield
    finally:
        _disarm(previous)
        sys.unraisablehook = hook


def _disarm(previous: Any) -> None:
    """Stop the timer, then put SIGALRM's handler back. An expiry can raise between any two
    steps of this, even here: it is dropped (the block has ended) and the step done again, so
    the timer never outlives its handler (a repeat under the default handler ends the
    process: "Alarm clock", with a limit of a microsecond)."""
    while True:
        try:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
            return
        except PointTimeout:
            continue


def evaluate_one(
    point_fn: PointFn, point: Any, time_limit_s: float | None = None
) -> dict[str, Any]:
    """Run one point within ``time_limit_s``; never raises (the error travels back as data)."""
    t0 = time.perf_counter()
    try:
        with _time_limit(time_limit_s):
            result = point_fn(point)
        data = result.to_json() if hasattr(result, "to_json") else dict(result)
        return {"ok": True, "result": data, "wall_s": time.perf_counter() - t0}
    except PointTimeout as exc:
        return {"ok": False, "error": f"PointTimeout: {exc}", "wall_s": time.perf_counter() - t0}
    except Exception as exc:  # noqa: BLE001 (any failure of a model is reported per point)
        return {
            "ok": False,
            "error": f"{type(exc).__name__}: {exc}",
            "traceback": traceback.format_exc(limit=8),
            "wall_s": time.perf_counter() - t0,
        }


# In a pool worker: where it reports (pid, position, monotonic time) as each point starts, so
# that the collecting process can kill a worker stuck past its point's time limit.
_STARTS: Any = None


def _init_worker(parent_pid: int, starts: Any) -> None:
    global _STARTS
    _STARTS = starts
    point_worker_init()
    _die_with_parent(parent_pid)


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


def point_worker_init() -> None:
    """Initializer of a pool of worker processes that run design points: one thread per point
    (the processes use the cores; see :mod:`nmp.arch.threads`)."""
    os.environ[POINT_THREADS_ENV] = "1"


def evaluate_chunk(
    point_fn: PointFn,
    points: list[Any],
    positions: list[int] | None = None,
    time_limit_s: float | None = None,
) -> list[dict[str, Any]]:
    out = []
    for j, point in enumerate(points):
        if _STARTS is not None and positions is not None:
            _STARTS.put((os.getpid(), positions[j], time.monotonic()))
        out.append(evaluate_one(point_fn, point, time_limit_s))
    return out


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
    time_limit_s: float | None = None

    def run(self, point_fn: PointFn, points: list[Any]) -> Iterator[tuple[int, dict[str, Any]]]:
        """Yield (position in ``points``, outcome) as each point finishes."""
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        return {"executor": self.name}

    def connect(self) -> None:
        """Reach what the points run on before the run starts (a remote cluster); a local pool
        has nothing to reach."""


class SerialExecutor(Executor):
    """In this process, one point after another (``--jobs 1``; easiest to debug). A point past
    its time limit is stopped when it next runs Python code (a compiled loop that never
    returns is not: the local pool kills such a worker)."""

    name = "serial"

    def __init__(self, time_limit_s: float | None = None) -> None:
        self.time_limit_s = time_limit_s

    def run(self, point_fn: PointFn, points: list[Any]) -> Iterator[tuple[int, dict[str, Any]]]:
        for i, point in enumerate(points):
            yield i, evaluate_one(point_fn, point, self.time_limit_s)


class LocalExecutor(Executor):
    """A pool of ``jobs`` worker processes on this machine.

    Workers are forked where the platform allows it, so they start with the parent's imports
    (numba-compiled models included) instead of re-importing them. A point past its time limit
    fails with :class:`PointTimeout` in its worker; a worker that does not stop
    :data:`KILL_GRACE_S` later is killed, its point fails the same way, and the points that
    were lost with the pool run in a new one.
    """

    name = "local"

    def __init__(self, jobs: int | None = None, time_limit_s: float | None = None) -> None:
        self.jobs = jobs or default_jobs()
        self.time_limit_s = time_limit_s

    def describe(self) -> dict[str, Any]:
        return {"executor": self.name, "jobs": self.jobs}

    def run(self, point_fn: PointFn, points: list[Any]) -> Iterator[tuple[int, dict[str, Any]]]:
        finished: set[int] = set()
        todo = list(range(len(points)))
        while todo:
            yield from self._run_pool(point_fn, points, todo, finished)
            todo = [i for i in todo if i not in finished]

    def _run_pool(
        self, point_fn: PointFn, points: list[Any], todo: list[int], finished: set[int]
    ) -> Iterator[tuple[int, dict[str, Any]]]:
        """Run the points at positions ``todo`` in one pool; returns early (its points not in
        ``finished`` to run again) where a worker was killed for its time limit."""
        methods = multiprocessing.get_all_start_methods()
        ctx = multiprocessing.get_context("fork" if "fork" in methods else None)
        workers = min(self.jobs, len(todo))
        starts = ctx.SimpleQueue() if self.time_limit_s else None
        pool = ProcessPoolExecutor(
            max_workers=workers,
            mp_context=ctx,
            initializer=_init_worker,
            initargs=(os.getpid(), starts),
        )
        running: dict[int, tuple[int, float]] = {}  # worker pid -> (position, start time)
        killed = False
        try:
            # Runs of consecutive points per task: a worker keeps its design's caches warm.
            futures = {}
            for chunk in chunk_indices(len(todo), workers):
                positions = [todo[c] for c in chunk]
                fut = pool.submit(
                    evaluate_chunk,
                    point_fn,
                    [points[i] for i in positions],
                    positions,
                    self.time_limit_s,
                )
                futures[fut] = positions
            pending = set(futures)
            while pending:
                done, pending = wait(pending, timeout=1.0, return_when=FIRST_COMPLETED)
                for fut in done:
                    try:
                        outcomes = fut.result()
                    except BrokenProcessPool:
                        if killed:  # the points lost with the pool run in a new one
                            pool.shutdown(wait=True, cancel_futures=True)
                            return
                        raise NmpError(
                            "a worker process died (killed or out of memory); the points that "
                            "finished are saved: run again with --resume"
                        ) from None
                    for i, outcome in zip(futures[fut], outcomes, strict=True):
                        finished.add(i)
                        yield i, outcome
                if starts is not None and not killed:
                    killed = yield from self._kill_overdue(starts, running, finished)
        except BaseException:
            # Interrupted (Ctrl-C, --fail-fast, an error): the points still running would be
            # lost anyway (--resume re-runs them), so stop the workers instead of waiting.
            workers_now = list(getattr(pool, "_processes", {}).values())
            pool.shutdown(wait=False, cancel_futures=True)
            for proc in workers_now:
                proc.terminate()
            raise
        pool.shutdown(wait=True)

    def _kill_overdue(
        self,
        starts: Any,
        running: dict[int, tuple[int, float]],
        finished: set[int],
    ) -> Generator[tuple[int, dict[str, Any]], None, bool]:
        """Kill a worker whose point is :data:`KILL_GRACE_S` past its time limit (its point
        fails); returns whether one was killed."""
        while not starts.empty():
            pid, position, t0 = starts.get()
            running[pid] = (position, t0)
        assert self.time_limit_s is not None
        now = time.monotonic()
        for pid, (position, t0) in running.items():
            if position in finished or now - t0 < self.time_limit_s + KILL_GRACE_S:
                continue
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            finished.add(position)
            yield (
                position,
                {
                    "ok": False,
                    "error": f"PointTimeout: {_time_limit_message(self.time_limit_s)} (killed)",
                    "wall_s": now - t0,
                },
            )
            return True
        return False


# How long a --scheduler address may take to accept the connection (chosen: 5 s, a scheduler
# across a slow network with room to spare; Dask's own 20 s, retried against a closed port,
# made "cannot reach" a 21 s wait).
SCHEDULER_CONNECT_S = 5.0
# How long a --scheduler address may take to answer as a Dask scheduler (the connection and
# 10 s for its handshake). A service that accepts the connection and then says nothing (or
# sends a frame it never completes) otherwise hangs the command.
SCHEDULER_ANSWER_S = SCHEDULER_CONNECT_S + 10.0


def _connect(client_cls: Any, address: str) -> Any:
    """``client_cls(address)`` (a Dask Client), or :class:`NmpError` if it has not answered
    within :data:`SCHEDULER_ANSWER_S` (the attempt is left to a daemon thread)."""
    outcome: list[Any] = []

    def attempt() -> None:
        try:
            outcome.append(client_cls(address, timeout=f"{SCHEDULER_CONNECT_S:g}s"))
        except BaseException as exc:  # raised again in the caller's thread
            outcome.append(exc)

    worker = threading.Thread(target=attempt, name="nmp-dask-connect", daemon=True)
    worker.start()
    worker.join(SCHEDULER_ANSWER_S)
    if not outcome:
        raise NmpError(
            f"the Dask scheduler {address} did not answer within {SCHEDULER_ANSWER_S:g} s (is "
            "it a Dask scheduler?)"
        )
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    return outcome[0]


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
        self._client: Any = None  # a scheduler connected ahead by connect()

    def connect(self) -> None:
        """Connect to the scheduler now (``nmp evaluate`` does before its run folder and its
        progress: an address where nothing answers was one error line after progress lines
        and a "done (0 of N points)" line)."""
        if self.address and self._client is None:
            try:
                from distributed import Client
            except ImportError:
                return  # run() says what to install
            self._client = self._remote_client(Client)

    def _remote_client(self, client_cls: Any) -> Any:
        try:
            return _connect(client_cls, self.address or "")
        except (OSError, ValueError, TypeError) as exc:
            # OSError: nothing answers; ValueError/TypeError: not an address (no port...)
            raise NmpError(f"cannot reach the Dask scheduler {self.address}: {exc}") from None
        except NmpError:
            raise
        except Exception as exc:  # noqa: BLE001 (one line, whatever answered)
            # something answered that is not a Dask scheduler (a web server, ssh): Dask read
            # its bytes as a message length and failed (a MemoryError read as out of memory)
            raise NmpError(
                f"the Dask scheduler {self.address} did not answer as one ({type(exc).__name__})"
            ) from None

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
                client, self._client = self._client or self._remote_client(Client), None
            else:
                cluster = LocalCluster(
                    # no more workers than points: `--dask-workers 100000` on two points
                    # started 100000 processes and never finished
                    n_workers=min(self.workers, len(points)),
                    threads_per_worker=1,
                    processes=self.processes,
                    dashboard_address=None,
                    silence_logs=logging.ERROR,
                    # worker processes: one thread per design point (the workers use the cores)
                    **({"env": {POINT_THREADS_ENV: "1"}} if self.processes else {}),
                )
                client = Client(cluster)
        except (OSError, ValueError, TypeError) as exc:
            # OSError: nothing answers; ValueError/TypeError: not an address (no port...)
            raise NmpError(f"cannot reach the Dask scheduler {self.address}: {exc}") from None
        except Exception as exc:  # noqa: BLE001 (one line, whatever answered)
            # something answered that is not a Dask scheduler (a web server, ssh): Dask read
            # its bytes as a message length and failed (a MemoryError read as out of memory)
            raise NmpError(
                f"the Dask scheduler {self.address} did not answer as one ({type(exc).__name__})"
            ) from None
        try:
            # Dask costs a few ms per task on a small machine: points travel in chunks so that
            # overhead stays small while results still stream back as chunks finish.
            slots = (
                max(1, sum(client.nthreads().values()))
                if self.address
                else min(self.workers, len(points))
            )
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
    jobs: int | None = None,
    scheduler: str | None = None,
    dask_workers: int | None = None,
    time_limit_s: float | None = DEFAULT_TIME_LIMIT_S,
) -> Executor:
    """The executor the command-line flags ask for (a Dask cluster's points run without a time
    limit: its workers run them in threads, where no signal reaches them)."""
    if scheduler or dask_workers:
        return DaskExecutor(scheduler, dask_workers)
    jobs = jobs or default_jobs()
    if jobs == 1:
        return SerialExecutor(time_limit_s)
    return LocalExecutor(jobs, time_limit_s)
