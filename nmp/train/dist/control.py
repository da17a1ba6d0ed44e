"""The control plane: generations, the step commit, progress and fault points, in a TCPStore.

The launcher hosts the store and never dies (it plays the scheduler's part, as ZooKeeper does in
ECRec's artifact); the role processes are its clients. Keys:

- ``gen`` and ``gen/<g>``: the current generation and its record (JSON: members, the step to
  resume at, a checkpoint to roll back to, the roles being rebuilt, the roles that joined fresh).
- ``vote/<g>/<s>`` and ``dec/<g>/<s>``: the two-phase commit of step ``s`` in generation ``g``.
  Every process votes after its prepare phase (all its sends delivered, all its receives in:
  the new rows and parity deltas staged, not applied); the vote that completes the count writes
  the decision ``commit`` with an atomic compare-and-set. The launcher, seeing a process die,
  writes ``abort`` the same way; whichever is first holds, and the decision is durable here.
  After ``commit`` a process applies what it staged; a process killed in that window loses only
  what the others can rebuild (its data rows from parity that took the deltas, its parity from
  the data).
- ``progress``: the step worker 0 is in (the launcher's clock for ``--kill ...,step=S``).
- ``arm/<role>`` and ``fault/<role>``: a fault point (``commit:S``): the process holding the
  role announces that it reached it and waits there to be killed.
- ``broken/<g>``: a process saw its group fail; ``healthy/<role>``: a rebuild finished;
  ``ready/<g>``: members that joined generation ``g``.
"""

from __future__ import annotations

import json
import time
from typing import Any

COMMIT, ABORT = "commit", "abort"


class Aborted(RuntimeError):
    """The step in flight was aborted (a process died before everyone voted): regroup."""


class Control:
    def __init__(self, store) -> None:
        self.store = store
        # seconds of each vote's first round trip to the store, per step: the run's store
        # latency under the machine's load at the time (an input of the restore's model)
        self.store_rtt_s: list[float] = []

    # -- generations ----------------------------------------------------------------------------

    def generation(self) -> int:
        return int(self.store.get("gen")) if self.store.check(["gen"]) else -1

    def record(self, gen: int) -> dict[str, Any]:
        return json.loads(self.store.get(f"gen/{gen}"))

    def publish(self, rec: dict[str, Any]) -> None:
        self.store.set(f"gen/{rec['gen']}", json.dumps(rec))
        self.store.set("gen", str(rec["gen"]))

    def next_generation(self, after: int, timeout_s: float) -> dict[str, Any]:
        """The first generation newer than ``after`` (waits for the launcher to publish it)."""
        t_end = time.monotonic() + timeout_s
        while True:
            g = self.generation()
            if g > after:
                return self.record(g)
            if time.monotonic() > t_end:
                raise TimeoutError(f"no generation after {after} within {timeout_s:g} s")
            time.sleep(0.002)

    def ready(self, gen: int) -> int:
        return int(self.store.add(f"ready/{gen}", 1))

    def broken(self, gen: int, why: str) -> None:
        self.store.set(f"broken/{gen}", why[:200])

    # -- the step commit ------------------------------------------------------------------------

    def vote(self, gen: int, step: int, voters: int, timeout_s: float) -> str:
        """Vote for committing ``step`` and wait for the decision (``commit`` or ``abort``)."""
        key = f"dec/{gen}/{step}"
        t0 = time.perf_counter()
        votes = int(self.store.add(f"vote/{gen}/{step}", 1))
        self.store_rtt_s.append(time.perf_counter() - t0)
        if votes == voters:
            self.store.compare_set(key, "", COMMIT)
        t_end = time.monotonic() + timeout_s
        while not self.store.check([key]):
            if time.monotonic() > t_end or self.generation() > gen:
                self.store.compare_set(key, "", ABORT)
                break
            time.sleep(0.0002)
        return self.store.get(key).decode()

    def abort_in_flight(self, gen: int, first: int) -> int:
        """Abort the first undecided step of ``gen`` from ``first`` on; returns the step to
        resume at (every step before it committed)."""
        step = first
        while self.store.compare_set(f"dec/{gen}/{step}", "", ABORT).decode() == COMMIT:
            step += 1
        return step

    # -- progress and fault points ---------------------------------------------------------------

    def set_progress(self, step: int) -> None:
        self.store.set("progress", str(step))

    def progress(self) -> int:
        return int(self.store.get("progress")) if self.store.check(["progress"]) else -1

    def arm(self, role: str, phase: str, step: int) -> None:
        self.store.set(f"arm/{role}", f"{phase}:{step}")

    def fault_point(self, role: str, phase: str, step: int) -> None:
        """If ``role`` is armed at (``phase``, ``step``): announce it and wait to be killed."""
        key = f"arm/{role}"
        if self.store.check([key]) and self.store.get(key).decode() == f"{phase}:{step}":
            self.store.delete_key(key)
            self.store.set(f"fault/{role}", f"{phase}:{step}")
            time.sleep(3600)  # the launcher sends SIGKILL
