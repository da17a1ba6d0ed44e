"""Progress on long work, for any command: a rich bar or a spinner with the elapsed time on
stderr, shown only on a terminal and never with ``--json`` (so logs, pipes and JSON output stay
clean).

- :func:`activity`: one opaque step (a replay, a design point, a compilation) with a spinner
  and a clock; :func:`bar`: counted steps (training steps, claims) with a bar and an ETA. The
  sweep's own bar is :class:`nmp.report.console.ConsoleProgress`.
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
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path

from nmp import __version__

# A hook that calls its argument with the transactions of each replay while its block runs.
ReplayHook = Callable[[Callable[[int], None]], AbstractContextManager[object]]


def _live(quiet: bool) -> bool:
    return not quiet and sys.stderr.isatty() and not os.environ.get("NMP_NO_PROGRESS")


@contextlib.contextmanager
def activity(
    message: str, *, quiet: bool = False, replays: ReplayHook | None = None
) -> Iterator[None]:
    """A spinner and the elapsed time on stderr while the block runs (a terminal only); with
    ``replays`` (the replay driver's hook, :func:`nmp.memory.driver.on_replay`, passed in by
    the command: this package sits below the models), the DRAM transactions replayed so far,
    so a long design point shows that it advances."""
    if not _live(quiet):
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
    """A bar of ``total`` steps; the block gets ``advance(n=1)``. Quiet: a no-op."""
    if not _live(quiet):
        yield lambda n=1: None
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
