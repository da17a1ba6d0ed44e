"""A design point on several threads (node replays and the functional gather side by side)
gives the same result as on one."""

from __future__ import annotations

import json
import threading

import pytest

from nmp.arch import run_design_point
from nmp.arch import threads as th
from nmp.errors import NmpError


@pytest.mark.parametrize("arch", ["recross", "trim-g"])
def test_threads_change_no_result(arch, monkeypatch):
    small = {"workload": {"batch": 8}}
    got = {}
    for n in ("1", "3"):
        monkeypatch.setenv("NMP_THREADS", n)
        got[n] = [
            run_design_point(arch, "recross-eval", overrides=small, seed=s).to_json()
            for s in (1, 2)
        ]
    assert json.dumps(got["1"], sort_keys=True) == json.dumps(got["3"], sort_keys=True)


def test_threads_run_the_calls_in_parallel_and_in_order(monkeypatch):
    monkeypatch.setenv("NMP_THREADS", "2")
    both = threading.Barrier(2, timeout=10)  # each call waits for the other: both must run

    def meet(x):
        both.wait()
        return x * 2

    assert th.start([(meet, (1,)), (meet, (2,))]).results() == [2, 4]


def test_the_first_error_is_raised_after_every_call_finished(monkeypatch):
    monkeypatch.setenv("NMP_THREADS", "2")
    done = []

    def fails():
        raise ValueError("first")

    def slow():
        threading.Event().wait(0.2)
        done.append(True)

    with pytest.raises(ValueError, match="first"):
        th.start([(fails, ()), (slow, ())]).results()
    assert done == [True]


@pytest.mark.parametrize("bad", ["0", "-2", "two", "1.5"])
def test_a_bad_thread_count_is_refused(bad, monkeypatch):
    monkeypatch.setenv("NMP_THREADS", bad)
    with pytest.raises(NmpError, match="NMP_THREADS must be a whole number >= 1"):
        th.point_threads()


def test_one_thread_runs_in_the_caller(monkeypatch):
    monkeypatch.setenv("NMP_THREADS", "1")
    me = threading.get_ident()
    assert th.start([(threading.get_ident, ())]).results() == [me]
    assert th.start([]).results() == []
