"""Every command a replay issues on channel 0, in issue order, from the numba engine (the
reference the C engine is held to): what the DRAMPower check turns into DRAMPower's trace and
what the tests recount the engines' counters from."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from nmp.errors import NmpError
from nmp.memory.counters import C_BANK_OPEN
from nmp.memory.lines import engine_inputs
from nmp.memory.stats import command_counts

if TYPE_CHECKING:
    from nmp.memory.spec import MemorySpec

# commands a request can issue at most (ACT, PRE, RD or WR; a write's read-modify-write
# aside, which no logged case runs), and room for the refreshes of a run
_PER_REQUEST = 4
_SPARE_ROWS = 1000


class LoggedRun(NamedTuple):
    """A drained replay with its command log.

    ``log`` holds a row per command, (clock, command index into
    :data:`nmp.memory.standards.COMMANDS`, rank node, bank node, row); ``out`` is the
    engine's tuple (:func:`nmp.memory.engine.simulate`); ``counts`` the command counts at the
    end (:func:`nmp.memory.stats.command_counts`); ``end_cycle`` the cycle the last command's
    effect ends; ``active_cycles`` the cycles any bank of a rank was open, summed over ranks;
    ``bank_open_cycles`` the cycles each bank held a row open, summed over banks."""

    log: np.ndarray
    out: tuple
    counts: dict[str, int]
    end_cycle: int
    active_cycles: int
    bank_open_cycles: int


def logged_run(spec: MemorySpec, requests: np.ndarray, **params: int) -> LoggedRun:
    """Replay ``requests`` on ``spec`` (one channel: the log holds channel 0's) to the end,
    every command logged; ``params`` replace fields of the engine's configuration (say
    ``closed_row=1``). Raises NmpError where the log cannot hold every command."""
    from nmp.memory import driver, engine  # numba: loaded only for a logged run

    if spec.org.channels != 1:
        raise NmpError(f"a command log covers one channel; {spec.name} has {spec.org.channels}")
    plan = driver._plan(spec)
    config = plan.engine_params(True, True).copy()
    for name, value in params.items():
        config[name] = value
    log = np.full((len(requests) * _PER_REQUEST + _SPARE_ROWS, 5), -1, np.int64)
    out = engine.simulate(*engine_inputs(requests, spec), config, *plan.tables, log)  # type: ignore[call-arg]
    if out[0] != 0:
        raise NmpError(f"the engine stopped with status {int(out[0])} before the last request")
    if log[-1, 0] != -1:
        raise NmpError(f"more than {len(log)} commands: the log is full")
    final = out[4]
    return LoggedRun(
        log=log[log[:, 0] >= 0],
        out=out,
        counts=command_counts(final),
        end_cycle=int(out[2]),
        active_cycles=int(out[9].sum()),
        bank_open_cycles=int(final[C_BANK_OPEN]),
    )
