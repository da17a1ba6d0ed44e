"""Progress on long work, for every command: one mechanism, on stderr, never with ``--json``
(stdout stays the command's output, and a JSON document stays clean).

- On a terminal: a rich spinner or bar with the elapsed time (and the time left).
- Off a terminal (piped, redirected, CI): plain lines, so that a log never shows silence until
  the end: a long step says it is still running every :func:`interval_s` seconds (5 s; the
  environment's ``NMP_PROGRESS_EVERY_S`` changes it) and, once it has said so, when it is done;
  a counted one prints how far it is at the same pace. A step shorter than the interval prints
  nothing.
- ``NMP_NO_PROGRESS=1``: nothing at all.

- :func:`activity`: one opaque step (a replay, a design point, a compilation) with a spinner
  and a clock; :func:`bar`: counted steps (training steps, claims) with a bar and an ETA;
  :func:`tasks`: several counted tasks; :func:`heartbeat`: plain lines only, between a
  command's own lines. The sweep's own bar is
  :class:`nmp.report.console.ConsoleProgress`, which prints a line per point off a terminal.
- :func:`first_use_status`: the numba kernels compile the first time a model runs on a machine
  (about 15-20 s for a design point); this says so once, until ``python -m nmp.warmup`` (run by
  ``make``'s install step) or a first run has filled numba's cache.

Usage::

    from nmp.report.progress import activity, bar
    with activity("replaying 2.1 M requests"):
        stats = replay(trace, spec)
    with bar("training", total=steps) as advance:
        for step in range(steps):
            ...
            advance()
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path

from nmp.version import __version__

# A hook that calls its argument with the transactions of each replay while its block runs.
ReplayHook = Callable[[Callable[[int], None]], AbstractContextManager[object]]


DEFAULT_INTERVAL_S = 5.0  # chosen: "every few seconds"; a CI log of a 60 s run gets ~12 lines


def interval_s() -> float:
    """Seconds between two plain progress lines (``NMP_PROGRESS_EVERY_S``, default 5; a value
    that is no number of seconds above 0 is said once, on stderr, and the default taken)."""
    text = os.environ.get("NMP_PROGRESS_EVERY_S", "").strip()
    if not text:
        return DEFAULT_INTERVAL_S
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if value > 0 and value != float("inf"):
        return value
    _say_bad_interval(text)
    return DEFAULT_INTERVAL_S


_SAID: set[str] = set()


def _say_bad_interval(text: str) -> None:
    if text not in _SAID:  # (once per value, not at every line)
        _SAID.add(text)
        print(
            f"nmp: warning: NMP_PROGRESS_EVERY_S={text!r}: not a number of seconds > 0; "
            f"{DEFAULT_INTERVAL_S:g} s used",
            file=sys.stderr,
        )


def _mode(quiet: bool) -> str:
    """ "live" (a terminal), "lines" (plain lines on stderr) or "off"."""
    if quiet or os.environ.get("NMP_NO_PROGRESS"):
        return "off"
    try:
        return "live" if sys.stderr.isatty() else "lines"
    except (AttributeError, ValueError):  # a closed or odd stderr
        return "off"


def _live(quiet: bool) -> bool:
    return _mode(quiet) == "live"


def _say(text: str) -> None:
    """One plain progress line on stderr (never fails the command that prints it)."""
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(f"nmp: {text}\n")
        sys.stderr.flush()


class _Heartbeat:
    """Every :func:`interval_s` seconds while a step runs, a plain line with ``status()``; on
    exit, a closing line if any was printed (a short step stays silent)."""

    def __init__(self, message: str, status: Callable[[], str] = lambda: "") -> None:
        self.message = message
        self.status = status
        self.t0 = time.monotonic()
        self.printed = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="nmp-progress", daemon=True)

    def _line(self, state: str) -> str:
        extra = self.status()
        return f"{self.message}: {state} {time.monotonic() - self.t0:.0f} s" + (
            f" ({extra})" if extra else ""
        )

    def _beat(self) -> None:
        while not self._stop.wait(interval_s()):
            _say(self._line("running for"))
            self.printed = True

    def __enter__(self) -> _Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        if self.printed:
            _say(self._line("failed after" if exc[0] is not None else "done in"))


@contextlib.contextmanager
def activity(
    message: str, *, quiet: bool = False, replays: ReplayHook | None = None
) -> Iterator[None]:
    """A spinner and the elapsed time on stderr while the block runs (plain lines every few
    seconds off a terminal); with ``replays`` (the replay driver's hook,
    :func:`nmp.memory.driver.on_replay`, passed in by the command: this package sits below
    the models), the DRAM transactions replayed so far, so a long design point shows that it
    advances."""
    mode = _mode(quiet)
    if mode == "off":
        yield
        return
    if mode == "lines":
        replayed = [0, 0]  # transactions, engine runs

        def status() -> str:
            if not replayed[1]:
                return ""
            return f"{replayed[0]:,} DRAM transactions replayed in {replayed[1]} runs"

        def count(transactions: int) -> None:
            replayed[0] += transactions
            replayed[1] += 1

        with _Heartbeat(message, status), replays(count) if replays else contextlib.nullcontext():
            yield
        return
    # rich: loaded on use (start-up time)
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as progress:
        task = progress.add_task(message, total=None)
        if replays is None:
            yield
            return
        replayed = [0, 0]  # transactions, engine runs

        def count(transactions: int) -> None:
            replayed[0] += transactions
            replayed[1] += 1
            progress.update(
                task,
                description=f"{message}: {replayed[0]:,} DRAM transactions replayed in "
                f"{replayed[1]} runs",
            )

        with replays(count):
            yield


def bar_columns() -> tuple:
    """The columns of a counted bar: the bar, done of total, elapsed, and the time left."""
    # rich: loaded on use (start-up time)
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    return (
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
    )


@contextlib.contextmanager
def bar(message: str, total: int, *, quiet: bool = False) -> Iterator[Callable[..., None]]:
    """A bar of ``total`` steps; the block gets ``advance(n=1)``. Off a terminal: a line with
    the count every few seconds. Quiet: a no-op."""
    mode = _mode(quiet)
    if mode == "off":
        yield lambda n=1: None
        return
    if mode == "lines":
        done = [0]
        t0 = time.monotonic()

        def status() -> str:
            elapsed = time.monotonic() - t0
            eta = ""
            if 0 < done[0] < total:
                eta = f", about {elapsed / done[0] * (total - done[0]):.0f} s left"
            return f"{done[0]} of {total}{eta}"

        def advance(n: int = 1) -> None:
            done[0] += n

        with _Heartbeat(message, status):
            yield advance
        return
    # rich: loaded on use (start-up time)
    from rich.console import Console
    from rich.progress import Progress, TextColumn

    with Progress(
        TextColumn("{task.description}"),
        *bar_columns(),
        console=Console(stderr=True),
        transient=True,
    ) as progress:
        task = progress.add_task(message, total=total)
        yield lambda n=1: progress.advance(task, n)


@contextlib.contextmanager
def tasks(message: str, total: int, *, quiet: bool = False) -> Iterator[Callable[[str, int], None]]:
    """Several counted tasks of ``total`` steps each (one per strategy of a training
    comparison): the block gets ``update(name, done)``. A bar per task on a terminal; off a
    terminal, a line every few seconds with the task that last moved and its count."""
    mode = _mode(quiet)
    if mode == "off":
        yield lambda name, done: None
        return
    if mode == "lines":
        last = ["", 0]

        def status() -> str:
            return f"{last[0]} {last[1]} of {total}" if last[0] else ""

        def note(name: str, done: int) -> None:
            last[0], last[1] = name, done

        with _Heartbeat(message, status):
            yield note
        return
    # rich: loaded on use (start-up time)
    from rich.console import Console
    from rich.progress import Progress, TaskID, TextColumn

    ids: dict[str, TaskID] = {}
    with Progress(
        TextColumn("{task.description}"),
        *bar_columns(),
        console=Console(stderr=True),
        transient=True,
    ) as progress:

        def update(name: str, done: int) -> None:
            if name not in ids:
                ids[name] = progress.add_task(name, total=total)
            progress.update(ids[name], completed=done)

        yield update


@contextlib.contextmanager
def heartbeat(
    message: str, status: Callable[[], str] = lambda: "", *, quiet: bool = False
) -> Iterator[None]:
    """Off a terminal only: a line with ``status()`` every few seconds while the block runs
    (for a command whose own output is a line per finished item, such as the sweep's, so that
    a long item does not leave the log silent)."""
    if _mode(quiet) != "lines":
        yield
        return
    with _Heartbeat(message, status):
        yield


def _stamp() -> Path:
    """Marks that the numba kernels have been compiled into numba's cache (``$NUMBA_CACHE_DIR``,
    else the package's ``__pycache__``, numba's default for ``cache=True``)."""
    # importlib.metadata: loaded on use (11 ms at start-up for this one call; issue 43)
    import importlib.metadata

    try:
        numba = importlib.metadata.version("numba")
    except importlib.metadata.PackageNotFoundError:
        numba = "none"

    base = os.environ.get("NUMBA_CACHE_DIR") or str(Path(__file__).resolve().parents[1])
    return Path(base) / "__pycache__" / f"nmp-warm-{__version__}-numba-{numba}"


def is_warm() -> bool:
    return _stamp().exists()


def mark_warm() -> None:
    with contextlib.suppress(OSError):
        stamp = _stamp()
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.touch()


@contextlib.contextmanager
def first_use_status(
    busy: str = "running the model", *, quiet: bool = False, replays: ReplayHook | None = None
) -> Iterator[None]:
    """Around a command's model work: a spinner with the elapsed time (a big batch or many
    channels can run for minutes); on a machine where the kernels were never compiled it says
    why the first run takes longer, and afterwards marks the cache warm. ``replays``: as for
    :func:`activity`."""
    if is_warm():
        with activity(busy, quiet=quiet, replays=replays):
            yield
        return
    with activity(
        "first run on this machine: compiling the numba kernels (about 20 s, once; "
        "`make` / `python -m nmp.warmup` does it at install)",
        quiet=quiet,
    ):
        yield
    mark_warm()
