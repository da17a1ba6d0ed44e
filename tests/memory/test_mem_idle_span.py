"""A trace whose arrivals lie far apart: the engine skips the idle cycles but issues every
refresh on the way, so the span, not the request count, sets the run's length. A span past
:data:`nmp.memory.lines.MAX_REFRESHES` is refused at once, and a long one runs where Ctrl-C
reaches it."""

from __future__ import annotations

import numpy as np
import pytest

from nmp.cli import main
from nmp.errors import TraceError
from nmp.memory import load_memory, replay
from nmp.memory.lines import MAX_REFRESHES, check_lines
from nmp.memory.native_lib import INTERRUPTIBLE_TRANSACTIONS, run_work


def _lines(last_cycle: int) -> tuple[np.ndarray, np.ndarray]:
    return np.array([0x40, 0x80], np.uint64), np.array([0, last_cycle], np.int64)


def _requests(arrival: np.ndarray) -> np.ndarray:
    reqs = np.zeros(len(arrival), [("addr", "u8"), ("write", "?"), ("arrival", "i8")])
    reqs["addr"] = 0x40 * (1 + np.arange(len(arrival), dtype=np.uint64))
    reqs["arrival"] = arrival
    return reqs


def test_span_beyond_the_refresh_limit_is_refused_at_once() -> None:
    spec = load_memory("ddr4-3200aa").with_org(channels=8, ranks=2)
    refi, ranks = int(spec.timing["nREFI"]), 16
    # the last cycle whose refreshes stay within the limit, and the first beyond it
    fits = (MAX_REFRESHES // ranks + 1) * refi - 1
    addr, arrival = _lines(fits)
    check_lines(addr, spec, False, arrival)
    addr, arrival = _lines(fits + 1)
    with pytest.raises(TraceError, match=r"refresh commands \(16 rank\(s\).*2\^30"):
        check_lines(addr, spec, False, arrival)
    # one rank reaches 16 times as far
    check_lines(addr, spec.with_org(channels=1, ranks=1), False, arrival)
    # without refresh the engine jumps to the last arrival at once: any span
    quiet = load_memory("ddr4-3200aa", overrides={"controller.refresh": "none"})
    addr, arrival = _lines(4 * 10**18)
    check_lines(addr, quiet, False, arrival)
    assert replay(_requests(arrival), quiet).cycles == 4 * 10**18


def test_the_cli_names_the_trace(tmp_path, capsys) -> None:
    """Two lines 4e18 cycles apart ran for ever (refreshes to the last arrival, 2^62 allowed)."""
    trace = tmp_path / "gap.trace"
    trace.write_text("0x40 READ 0\n0x80 READ 4000000000000000000\n")
    assert main(["replay", str(trace), "--json"]) == 1
    err = capsys.readouterr().err
    assert "gap.trace" in err and "cycle 4,000,000,000,000,000,000" in err


def test_a_long_idle_span_runs_interruptible() -> None:
    """Two lines a few seconds of refreshes apart are a long run: it goes to the thread that
    Ctrl-C reaches (tests/memory/test_mem_native_engine.py: the thread's own test)."""
    no_arrivals = np.zeros(2, np.int64)
    assert run_work(2, no_arrivals) == 2
    assert run_work(2, np.zeros(0, np.int64)) == 2
    assert run_work(2, _lines(10**11)[1]) >= INTERRUPTIBLE_TRANSACTIONS
    assert run_work(2, _lines(10**6)[1]) < INTERRUPTIBLE_TRANSACTIONS


def test_the_engine_calls_use_the_span(monkeypatch) -> None:
    """Both C entry points a replay takes (with and without a timeline) size the call by
    :func:`run_work`, not by the transactions alone."""
    from nmp.memory import native

    if not native.available():
        pytest.skip(native.unavailable_reason())
    seen = []
    real = native._interruptible

    def spy(n, *args):
        seen.append(n)
        return real(n, *args)

    monkeypatch.setattr(native, "_interruptible", spy)
    spec = load_memory("ddr4-3200aa")
    reqs = _requests(_lines(10**10)[1])
    replay(reqs, spec)
    replay(reqs, spec, timeline=True)
    assert len(seen) == 2 and all(n >= 10**10 >> 12 for n in seen)
