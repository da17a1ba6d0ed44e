"""The launcher of a distributed run on one machine: processes, kills, generations, results.

It hosts the rendezvous store (the scheduler of the run, never killed), starts one process per
role plus a hot spare, and watches them. ``--kill server=N,step=S`` sends SIGKILL to the process
holding the role once worker 0 reaches step ``S`` (the OS kills it: no cooperation);
``phase=commit`` arms a fault point so that the kill lands after the step's commit decision
and before the victim applied it.

When a process dies the launcher aborts the step in flight (unless it already committed),
hands the role to the spare (and starts a new spare), and publishes the next generation: who is
in it, the step to resume at and what to restore, by the strategy's kind of recovery
(``scale_model``): ``coded`` resumes at the first uncommitted step with the role being rebuilt;
``rollback`` rolls everyone back to the newest complete checkpoint; ``partial`` resumes at the
first uncommitted step with the replacement reloading its rows; ``reinit`` re-initializes them.
A group that fails without a death (a timeout) is re-formed with the same members.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nmp.errors import NmpError


@dataclass(frozen=True)
class Kill:
    role: str  # server:<n> or worker:<w>
    step: int
    phase: str = "step"  # "step": when worker 0 reaches the step; "commit": at the fault point


def parse_kill(text: str) -> Kill:
    """``server=1,step=200[,phase=commit]`` (or ``worker=0,...``) -> :class:`Kill`."""
    fields: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if not sep:
            raise NmpError(f"--kill expects key=value pairs like server=1,step=200, got '{text}'")
        fields[key.strip()] = value.strip()
    unknown = set(fields) - {"server", "worker", "step", "phase"}
    if unknown:
        raise NmpError(f"--kill: unknown key '{sorted(unknown)[0]}' (server|worker, step, phase)")
    kinds = [k for k in ("server", "worker") if k in fields]
    if len(kinds) != 1 or "step" not in fields:
        raise NmpError(f"--kill needs one of server=/worker= and step=, got '{text}'")
    try:
        idx, step = int(fields[kinds[0]]), int(fields["step"])
    except ValueError:
        raise NmpError(f"--kill: the index and step must be integers, got '{text}'") from None
    phase = fields.get("phase", "step")
    if phase not in ("step", "commit"):
        raise NmpError(f"--kill: phase must be 'step' or 'commit', got '{phase}'")
    if idx < 0 or step < 0:
        raise NmpError(f"--kill: index and step must be >= 0, got '{text}'")
    return Kill(f"{kinds[0]}:{idx}", step, phase)


class Launcher:
    def __init__(self, spec, store, kills: list[Kill], *, spares: int = 1) -> None:
        from nmp.train.dist.context import strategy_class
        from nmp.train.dist.control import Control

        self.spec, self.store, self.ctl = spec, store, Control(store)
        self.kills = sorted(kills, key=lambda k: k.step)
        self.recovery = strategy_class(spec.strategy).scale_model
        self.run_dir = Path(spec.run_dir)
        self.procs: dict[str, _Child] = {}
        self.spares: list[tuple[int, _Child]] = []
        self.n_spares = spares
        self._next_spare = 0
        self.finished: set[str] = set()
        self.events: list[dict[str, Any]] = []
        self.rec: dict[str, Any] = {}
        self.log_of: dict[int, Path] = {}
        self.killed: set[int] = set()

    # -- processes ------------------------------------------------------------------------------

    def _start(self, role: str):
        path = self.run_dir / f"log-{role.replace(':', '-')}-{len(self.log_of)}.txt"
        proc = _Child(role, self.run_dir / "spec.json", path)
        self.log_of[proc.pid] = path
        return proc

    def _spawn_spare(self) -> None:
        sid = self._next_spare
        self._next_spare += 1
        self.spares.append((sid, self._start(f"spare:{sid}")))

    def _take_spare(self, role: str) -> _Child:
        if not self.spares:
            self._spawn_spare()
        sid, proc = self.spares.pop(0)
        self.store.set(f"assign/{sid}", role)
        while len(self.spares) < self.n_spares:
            self._spawn_spare()
        return proc

    def stop(self) -> None:
        for p in [*self.procs.values(), *(p for _, p in self.spares)]:
            if p.poll() is None:
                p.kill()
                p.wait()

    # -- the run --------------------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        spec = self.spec
        t_start = time.perf_counter()
        for role in spec.roles():
            self.procs[role] = self._start(role)
        for _ in range(self.n_spares):
            self._spawn_spare()
        self.rec = {
            "gen": 0,
            "members": {r: p.pid for r, p in self.procs.items()},
            "resume_step": 0,
            "rollback": None,
            "rebuilding": [],
            "fresh": [],
        }
        self.ctl.publish(self.rec)
        t_ready = self._wait_ready(0, t_start)
        t_trained = None
        pending = list(self.kills)
        armed: set[Kill] = set()
        regroup: dict[str, Any] | None = None
        broken_since = None
        while len(self.finished) < len(self.procs):
            for role, p in list(self.procs.items()):
                rc = p.poll()
                if rc is None or role in self.finished:
                    continue
                if rc == 0:
                    self.finished.add(role)
                    continue
                regroup = self._failure(role, rc)
                broken_since = None
            if regroup is not None and self._ready_count(regroup["gen"]) >= spec.world:
                regroup["event"]["regroup_wall_s"] = time.perf_counter() - regroup["t"]
                regroup = None
            for k in list(pending):
                p = self.procs[k.role]
                if k.phase == "commit":
                    if k not in armed:
                        self.ctl.arm(k.role, "commit", k.step)
                        armed.add(k)
                    if self.store.check([f"fault/{k.role}"]):
                        self.store.delete_key(f"fault/{k.role}")
                        self._kill(k, p)
                        pending.remove(k)
                elif self.ctl.progress() >= k.step:
                    self._kill(k, p)
                    pending.remove(k)
            if t_trained is None and self.store.check(["trained"]):
                t_trained = time.perf_counter()
            g = self.rec["gen"]
            if regroup is None and self.store.check([f"broken/{g}"]):
                broken_since = broken_since or time.perf_counter()
                if time.perf_counter() - broken_since > 2.0:  # no death: re-form the group
                    regroup = self._new_generation(None, "group failed without a death")
                    broken_since = None
            time.sleep(0.002)
        return {
            "setup_s": t_ready - t_start,
            "train_wall_s": (t_trained or time.perf_counter()) - t_ready,
            "events": self.events,
            "generations": self.rec["gen"] + 1,
        }

    def traffic(self) -> dict[str, dict[str, int]]:
        """Bytes and messages sent by every process that ran (killed ones included), by kind."""
        out: dict[str, dict[str, int]] = {"bytes": {}, "messages": {}}
        for pid, path in self.log_of.items():
            role = path.name.split("-")[1] + ":" + path.name.split("-")[2]
            for r in (role, *self.spec.roles()):
                key = f"traffic/{r}/{pid}"
                if self.store.check([key]):
                    got = json.loads(self.store.get(key))
                    for what in ("bytes", "messages"):
                        for k, v in got[what].items():
                            out[what][k] = out[what].get(k, 0) + int(v)
                    break
        return out

    def _ready_count(self, gen: int) -> int:
        key = f"ready/{gen}"
        return int(self.store.add(key, 0)) if self.store.check([key]) else 0

    def _wait_ready(self, gen: int, t_start: float) -> float:
        while self._ready_count(gen) < self.spec.world:
            for role, p in self.procs.items():
                if p.poll() is not None:
                    raise NmpError(
                        f"distributed run: process {role} exited with {p.returncode} at start "
                        f"(log in {self.run_dir})"
                    )
            if time.perf_counter() - t_start > max(300.0, self.spec.timeout_s):
                raise NmpError(f"distributed run: processes not ready (logs in {self.run_dir})")
            time.sleep(0.005)
        return time.perf_counter()

    def _kill(self, k: Kill, p: _Child) -> None:
        p.send_signal(signal.SIGKILL)
        self.killed.add(p.pid)
        self.events.append(
            {
                "kill": k.role,
                "pid": p.pid,
                "at_step": k.step,
                "phase": k.phase,
                "progress_at_kill": self.ctl.progress(),
                "gen": self.rec["gen"],
            }
        )

    def _failure(self, role: str, rc: int) -> dict[str, Any]:
        """A process died: abort the step in flight, hand its role to a spare, regroup."""
        pid = self.procs[role].pid
        if pid not in self.killed:  # not our SIGKILL: a bug or a crash, not a fault to recover
            self.stop()
            tail = self.log_of[pid].read_text(errors="replace").strip().splitlines()[-1:]
            raise NmpError(
                f"distributed run: {role} exited with {rc} ({' '.join(tail)}; log "
                f"{self.log_of[pid]})"
            )
        if role.startswith("server:") and self.recovery == "coded":
            healthy = {r for r in self.rec["rebuilding"] if self.store.check([f"healthy/{r}"])}
            others = [r for r in self.rec["rebuilding"] if r != role and r not in healthy]
            if others:
                self.stop()
                from nmp.train.store import DataLossError

                raise DataLossError(
                    f"{role} died while {', '.join(others)} was being rebuilt: stripes with both "
                    "positions lost exceed the one XOR parity (r = 1)"
                )
        self.procs[role] = self._take_spare(role)
        return self._new_generation(role, f"{role} died (exit {rc})")

    def _new_generation(self, dead: str | None, reason: str) -> dict[str, Any]:
        from nmp.train.dist import files

        t = time.perf_counter()
        old = self.rec
        first = self.ctl.abort_in_flight(old["gen"], int(old["resume_step"]))
        rebuilding = [
            r for r in old["rebuilding"] if not self.store.check([f"healthy/{r}"]) or r == dead
        ]
        rollback = None
        resume = first
        if dead is not None and self.recovery == "coded" and dead.startswith("server:"):
            rebuilding = sorted(set(rebuilding) | {dead})
            self.store.delete_key(f"healthy/{dead}")
        if dead is not None and self.recovery == "rollback":
            rollback = files.latest_full(_StoreCtx(self.store))
            resume = rollback
        self.rec = {
            "gen": old["gen"] + 1,
            "members": {r: p.pid for r, p in self.procs.items()},
            "resume_step": resume,
            "rollback": rollback,
            "rebuilding": rebuilding,
            "fresh": [dead] if dead else [],
            "dead": dead,
            "reason": reason,
        }
        event = {
            "failed": dead,
            "gen": self.rec["gen"],
            "committed_steps": first,
            "resume_step": resume,
            "rollback_to": rollback,
            "rebuilding": rebuilding,
            "detected_s": t,
        }
        self.events.append(event)
        self.ctl.publish(self.rec)
        return {"gen": self.rec["gen"], "t": t, "event": event}


# Role processes are forked from a fork server that has imported torch and the trainer once
# (a fresh interpreter per process would spend seconds importing them, per role and per spare).
PRELOAD = ("nmp.train.dist.proc", "nmp.train.dist.preload")
_MP = None


def _mp():
    global _MP
    if _MP is None:
        _MP = multiprocessing.get_context("forkserver")
        _MP.set_forkserver_preload(list(PRELOAD))
    return _MP


class _Child:
    """One role's process (the subset of Popen the launcher uses)."""

    def __init__(self, role: str, spec_path: Path, log_path: Path) -> None:
        from nmp.train.dist.proc import child_main

        # one thread per process: the run has as many processes as it wants cores
        for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ.setdefault(var, "1")
        self.proc = _mp().Process(
            target=child_main, args=(str(spec_path), role, str(log_path)), daemon=True
        )
        self.proc.start()
        self.pid = self.proc.pid

    def poll(self) -> int | None:
        return self.proc.exitcode

    @property
    def returncode(self) -> int | None:
        return self.proc.exitcode

    def send_signal(self, sig: int) -> None:
        os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def wait(self) -> None:
        self.proc.join()


class _StoreCtx:
    def __init__(self, store) -> None:
        self.store = store


def launch(spec, kills: list[Kill], *, spares: int = 1) -> dict[str, Any]:
    """Run ``spec`` on this machine; returns the launcher's record and every role's result."""
    import datetime

    import torch.distributed as dist

    store = dist.TCPStore(
        spec.host,
        0,
        is_master=True,
        wait_for_workers=False,
        timeout=datetime.timedelta(seconds=max(60.0, spec.timeout_s)),
    )
    from dataclasses import replace

    spec = replace(spec, port=store.port)
    run_dir = Path(spec.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    spec.write(run_dir / "spec.json")
    lau = Launcher(spec, store, kills, spares=spares)
    try:
        rec = lau.run()
    finally:
        lau.stop()
    rec["results"] = {
        p.stem.replace("-", ":"): json.loads(p.read_text())
        for p in sorted((run_dir / "result").glob("*.json"))
    }
    rec["traffic"] = lau.traffic()
    return rec
