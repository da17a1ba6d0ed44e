"""The launcher of a distributed run: processes, kills, generations, results.

On one machine it hosts the rendezvous store (the scheduler of the run, never killed), starts
one process per role plus a hot spare, and watches them; under ``torchrun --nnodes N`` one
agent per host does so for its share of the roles, torchrun's store is the rendezvous and agent
0 coordinates. ``--kill server=N,step=S`` sends SIGKILL to the process
holding the role once worker 0 reaches step ``S`` (the OS kills it: no cooperation);
``phase=commit`` arms a fault point so that the kill lands after the step's commit decision
and before the victim applied it.

When a process dies the launcher aborts the step in flight (unless it already committed),
hands the role to the spare (and starts a new spare), and publishes the next generation: who is
in it, the step to resume at and what to restore, as the strategy declares it:
a strategy with parity (``uses_parity``) resumes at the first uncommitted step with the role
being rebuilt; one that ``rolls_back`` rolls everyone back to the newest complete checkpoint;
the others resume at the first uncommitted step with the replacement restoring its rows
(``restore_replacement``: CPR reloads them, ``none`` re-initializes them).
A group that fails without a death (a timeout) is re-formed with the same members.
"""

from __future__ import annotations

import datetime
import json
import multiprocessing
import os
import signal
import socket
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NoReturn

import torch.distributed as dist

from nmp.errors import NmpError
from nmp.train.dist import files
from nmp.train.dist.context import strategy_class
from nmp.train.dist.control import Control
from nmp.train.failures import parse_pairs
from nmp.train.store import DataLossError


@dataclass(frozen=True)
class Kill:
    role: str  # server:<n> or worker:<w>
    step: int
    phase: str = "step"  # "step": when worker 0 reaches the step; "commit": at the fault point


def parse_kill(text: str) -> Kill:
    """``server=1,step=200[,phase=commit]`` (or ``worker=0,...``) -> :class:`Kill`."""
    fields = parse_pairs(text, "--kill", "server=1,step=200", "server|worker, step, phase")
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
    """One host's agent; agent 0 also coordinates (generations, the end of the run).

    On one machine there is one agent running every role. Under ``torchrun --nnodes N`` each
    host runs an agent for the roles ``i`` with ``i mod N`` = its index; an agent reports a
    local death (and the spare it handed the role to) through the store's ``deaths`` queue,
    and the coordinator publishes the generation."""

    def __init__(
        self, spec, store, kills: list[Kill], *, spares: int = 1, agent: int = 0, agents: int = 1
    ) -> None:
        self.spec, self.store, self.ctl = spec, store, Control(store)
        self.agent, self.agents, self.coordinator = agent, agents, agent == 0
        self.local = [r for i, r in enumerate(spec.roles()) if i % agents == agent]
        self.kills = sorted((k for k in kills if k.role in self.local), key=lambda k: k.step)
        self.strategy = strategy_class(spec.strategy)
        self.run_dir = Path(spec.run_dir)
        self.procs: dict[str, _Child] = {}
        self.spares: list[tuple[str, _Child]] = []
        self.n_spares = spares
        self._next_spare = 0
        self.events: list[dict[str, Any]] = []
        self.rec: dict[str, Any] = {}
        self.log_of: dict[int, Path] = {}
        self.killed: set[int] = set()

    def pid_of(self, proc: _Child) -> str:
        """A process's id across hosts: agent and pid."""
        return f"{self.agent}:{proc.pid}"

    # -- processes ------------------------------------------------------------------------------

    def _start(self, role: str):
        path = self.run_dir / f"log-{role.replace(':', '-')}-a{self.agent}-{len(self.log_of)}.txt"
        proc = _Child(role, self.run_dir / "spec.json", path)
        self.log_of[proc.pid] = path
        self.store.queue_push("procs", self.pid_of(proc))
        return proc

    def _spawn_spare(self) -> None:
        sid = f"{self.agent}.{self._next_spare}"
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

    def _fail_run(self, message: str, exc: type[Exception] = NmpError) -> NoReturn:
        self.store.set("run/error", message)
        self.stop()
        raise exc(message)

    # -- the run --------------------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        spec = self.spec
        t_start = time.perf_counter()
        for role in self.local:
            self.procs[role] = self._start(role)
            self.store.set(f"pid/{role}", self.pid_of(self.procs[role]))
        for _ in range(self.n_spares):
            self._spawn_spare()
        if self.coordinator:
            roles = spec.roles()
            while not self.store.check([f"pid/{r}" for r in roles]):
                self._check_error()
                time.sleep(0.005)
            members = {r: self.store.get(f"pid/{r}").decode() for r in roles}
            self.rec = {
                "gen": 0,
                "members": members,
                "resume_step": 0,
                "rollback": None,
                "rebuilding": [],
                "fresh": [],
            }
            self.ctl.publish(self.rec)
        t_ready = self._wait_ready(0, t_start)
        busy0 = busy1 = machine_busy_s()
        t_trained = None
        pending = list(self.kills)
        armed: set[Kill] = set()
        regroup: dict[str, Any] | None = None
        broken_since = None
        while not self._over():
            self._check_error()
            for role, p in list(self.procs.items()):
                rc = p.poll()
                if rc is None or self.store.check([f"finished/{role}/{self.pid_of(p)}"]):
                    continue
                if rc == 0:
                    self.store.set(f"finished/{role}/{self.pid_of(p)}", "1")
                    self.store.add("finished", 1)
                    continue
                self._local_death(role, rc)
            if self.coordinator:
                while self.store.queue_len("deaths"):
                    regroup = self._failure(json.loads(self.store.queue_pop("deaths", False)))
                    broken_since = None
                if regroup is not None and self._ready_count(regroup["gen"]) >= spec.world:
                    regroup["event"]["regroup_wall_s"] = time.perf_counter() - regroup["t"]
                    regroup = None
                if t_trained is None and self.store.check(["trained"]):
                    t_trained = time.perf_counter()
                    busy1 = machine_busy_s()
                g = self.rec["gen"]
                if regroup is None and self.store.check([f"broken/{g}"]):
                    broken_since = broken_since or time.perf_counter()
                    if time.perf_counter() - broken_since > 2.0:  # no death: re-form the group
                        regroup = self._new_generation(None, "", "group failed without a death")
                        broken_since = None
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
            time.sleep(0.002)
        if self.coordinator:
            self.store.set("run/done", "1")
        events = self.events
        while self.store.queue_len("events"):
            events.append(json.loads(self.store.queue_pop("events", False)))
        return {
            "setup_s": t_ready - t_start,
            "train_wall_s": (t_trained or time.perf_counter()) - t_ready,
            # every CPU of the machine busy during training (this run's processes and the
            # other load), seconds; and the machine's CPUs
            "machine_busy_s": (busy1 if t_trained else machine_busy_s()) - busy0,
            "machine_cpus": os.cpu_count(),
            "events": sorted(events, key=lambda e: e["t"]),
            "generations": self.ctl.generation() + 1,
        }

    def _over(self) -> bool:
        if self.coordinator:
            return int(self.store.add("finished", 0)) >= self.spec.world
        return self.store.check(["run/done"])

    def _check_error(self) -> None:
        if self.store.check(["run/error"]):
            self.stop()
            raise NmpError(self.store.get("run/error").decode())

    def traffic(self) -> dict[str, dict[str, int]]:
        """Bytes and messages sent by every process that ran (killed ones included), by kind."""
        out: dict[str, dict[str, Any]] = {"bytes": {}, "messages": {}, "cpu_s": {}, "sched_s": {}}
        ids = []
        while self.store.queue_len("procs"):
            ids.append(self.store.queue_pop("procs", False).decode())
        for pid in ids:
            key = f"traffic/{pid}"
            if self.store.check([key]):
                got = json.loads(self.store.get(key))
                for what in ("bytes", "messages"):
                    for k, v in got[what].items():
                        out[what][k] = out[what].get(k, 0) + int(v)
                # CPU seconds in training, per process (a killed one's up to its last step)
                out["cpu_s"][pid] = float(got.get("cpu_s", 0.0))
                # the scheduler's seconds on a CPU and waiting for one (the machine's load)
                out["sched_s"][pid] = [float(x) for x in got.get("sched_s", (0.0, 0.0))]
        return out

    def _ready_count(self, gen: int) -> int:
        key = f"ready/{gen}"
        return int(self.store.add(key, 0)) if self.store.check([key]) else 0

    def _wait_ready(self, gen: int, t_start: float) -> float:
        while self._ready_count(gen) < self.spec.world:
            self._check_error()
            for role, p in self.procs.items():
                if p.poll() is not None:
                    self._fail_run(
                        f"distributed run: process {role} exited with {p.returncode} at start "
                        f"(log in {self.log_of[p.pid]})"
                    )
            if time.perf_counter() - t_start > max(300.0, self.spec.timeout_s):
                self._fail_run(f"distributed run: processes not ready (logs in {self.run_dir})")
            time.sleep(0.005)
        return time.perf_counter()

    def _kill(self, k: Kill, p: _Child) -> None:
        p.send_signal(signal.SIGKILL)
        self.killed.add(p.pid)
        self.store.queue_push(
            "events",
            json.dumps(
                {
                    "kill": k.role,
                    "pid": p.pid,
                    "at_step": k.step,
                    "phase": k.phase,
                    "progress_at_kill": self.ctl.progress(),
                    "gen": self.ctl.generation(),
                    "t": time.time(),
                }
            ),
        )

    def _local_death(self, role: str, rc: int) -> None:
        """A local process died: a crash ends the run; our SIGKILL hands its role to a spare
        and tells the coordinator."""
        p = self.procs[role]
        if p.pid not in self.killed:  # not our SIGKILL: a bug or a crash, not a fault to recover
            tail = self.log_of[p.pid].read_text(errors="replace").strip().splitlines()[-1:]
            self._fail_run(
                f"distributed run: {role} exited with {rc} ({' '.join(tail)}; log "
                f"{self.log_of[p.pid]})"
            )
        self.procs[role] = self._take_spare(role)
        new = self.pid_of(self.procs[role])
        self.store.queue_push("deaths", json.dumps({"role": role, "pid": new, "rc": rc}))

    def _failure(self, death: dict[str, Any]) -> dict[str, Any]:
        """(coordinator) A process died: check the code still covers it, regroup."""
        role = death["role"]
        if role.startswith("server:") and self.strategy.uses_parity:
            healthy = {r for r in self.rec["rebuilding"] if self.store.check([f"healthy/{r}"])}
            others = [r for r in self.rec["rebuilding"] if r != role and r not in healthy]
            if others:
                self._fail_run(
                    f"{role} died while {', '.join(others)} was being rebuilt: stripes with both "
                    "positions lost exceed the one XOR parity (r = 1)",
                    DataLossError,
                )
        return self._new_generation(role, death["pid"], f"{role} died (exit {death['rc']})")

    def _new_generation(self, dead: str | None, pid: str, reason: str) -> dict[str, Any]:
        t = time.perf_counter()
        old = self.rec
        first = self.ctl.abort_in_flight(old["gen"], int(old["resume_step"]))
        rebuilding = [
            r for r in old["rebuilding"] if not self.store.check([f"healthy/{r}"]) or r == dead
        ]
        rollback = None
        resume = first
        if dead is not None and self.strategy.uses_parity and dead.startswith("server:"):
            rebuilding = sorted(set(rebuilding) | {dead})
            self.store.delete_key(f"healthy/{dead}")
        if dead is not None and self.strategy.rolls_back:
            rollback = files.latest_full(_StoreCtx(self.store))
            if rollback is None:  # every run saves at step 0 before training
                self._fail_run("full recovery found no complete checkpoint to roll back to")
            resume = int(rollback)
        members = dict(old["members"])
        if dead is not None:
            members[dead] = pid
        self.rec = {
            "gen": old["gen"] + 1,
            "members": members,
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
            "t": time.time(),
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


def machine_busy_s() -> float:
    """Seconds the machine's CPUs have been busy since boot (``/proc/stat``: all but idle and
    iowait); 0 where the kernel does not say."""
    try:
        with open("/proc/stat") as f:
            ticks = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return 0.0
    busy = sum(ticks) - ticks[3] - (ticks[4] if len(ticks) > 4 else 0)
    return busy / os.sysconf("SC_CLK_TCK")


def launch(spec, kills: list[Kill], *, spares: int = 1) -> dict[str, Any]:
    """Run ``spec``: on this machine, or, under ``torchrun --nnodes N`` (one process per
    host), as this host's agent of a run over N hosts. Returns the run's record and every
    role's result (the coordinator's; the other agents' record holds what they saw)."""
    timeout = datetime.timedelta(seconds=max(60.0, spec.timeout_s))
    env = torchrun_env()
    store: Any
    if env is None:
        store = dist.TCPStore(spec.host, 0, is_master=True, wait_for_workers=False, timeout=timeout)
        spec = replace(spec, port=store.port)
        agent, agents = 0, 1
    else:
        agent, agents, host, port = env
        n = _next_run()
        prefix = f"nmp/run{n}/"
        base = dist.TCPStore(host, port, is_master=False, timeout=timeout)
        store = dist.PrefixStore(prefix, base)
        spec = replace(
            spec, host=host, port=port, extra={**spec.extra, "prefix": prefix, "agents": agents}
        )
        # the host's address for gloo, in the environment the fork server inherits
        os.environ.setdefault("NMP_GLOO_HOST", _own_address(host))
    os.environ["NMP_AGENT"] = str(agent)
    run_dir = Path(spec.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    _clear_outputs(run_dir)
    spec.write(run_dir / "spec.json")
    lau = Launcher(spec, store, kills, spares=spares, agent=agent, agents=agents)
    try:
        rec = lau.run()
    finally:
        lau.stop()
    rec["results"] = {
        p.stem.replace("-", ":"): _read_result(p)
        for p in sorted((run_dir / "result").glob("*.json"))
    }
    rec["traffic"] = lau.traffic()
    rec["coordinator"] = lau.coordinator
    return rec


# What a run's processes write into its folder (nmp.train.dist.proc): a reused --run-dir
# kept an earlier run's, which were merged into this one's results
OUTPUT_FOLDERS = ("result", "final")


def _clear_outputs(run_dir: Path) -> None:
    """Remove an earlier run's results from ``run_dir`` (only the files its processes write)."""
    for name in OUTPUT_FOLDERS:
        folder = run_dir / name
        if folder.is_dir() and not folder.is_symlink():
            for path in folder.iterdir():
                if path.suffix in (".json", ".npz") and path.is_file() and not path.is_symlink():
                    path.unlink()


def _read_result(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise NmpError(f"not a result this run wrote ({exc})", file=str(path)) from None
    if not isinstance(data, dict):
        raise NmpError("not a result this run wrote (not an object)", file=str(path))
    return data


_RUNS = [0]


def _next_run() -> int:
    """The number of this process's next run (every agent runs the same sequence)."""
    _RUNS[0] += 1
    return _RUNS[0]


def torchrun_env() -> tuple[int, int, str, int] | None:
    """(agent index, agents, store host, store port) under torchrun, else None. torchrun
    starts one process per host (``--nproc-per-node 1``); its agent's store serves the run."""
    if "TORCHELASTIC_RUN_ID" not in os.environ:
        return None
    if int(os.environ.get("LOCAL_WORLD_SIZE", "1")) != 1:
        raise NmpError(
            "under torchrun, nmp train --procs needs --nproc-per-node 1 (one agent per host)"
        )
    return (
        int(os.environ["RANK"]),
        int(os.environ["WORLD_SIZE"]),
        os.environ["MASTER_ADDR"],
        int(os.environ["MASTER_PORT"]),
    )


def _own_address(peer: str) -> str:
    """This host's address on the route to ``peer`` (what gloo binds and announces)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            sock.connect((peer, 9))
            return sock.getsockname()[0]
        except OSError:
            return "127.0.0.1"
