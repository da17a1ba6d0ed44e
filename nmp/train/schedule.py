"""One schedule per recovery strategy: the phases of a training step, as data.

A strategy declares its :class:`Schedule` (``Strategy.schedule``): the per-step phases in
the order the processes run them, each saying who runs it (``worker`` or ``server``), what it
does (``send`` bytes of a traffic kind to a role, ``compute``, or ``sync``), what it waits on
(``after``) and whether it runs behind the step (``background``: off the critical path). The
three executions read the same object:

- the distributed runtime (:mod:`nmp.train.dist`) walks the schedule as a table: each process
  takes the phases it runs, receives or joins, in the schedule's order, each with its handler
  (:func:`nmp.train.dist.phases.plan`; a phase no process has a handler for is refused), and
  times each one under its name; the run's phases (``run``: saves, a failure's regroup,
  restore, re-execution) are measured and modeled by name (:mod:`nmp.train.dist.runphases`);
- the single-process trainer charges each step its schedule's critical path
  (:meth:`nmp.train.cost.CostModel.charge_step`);
- the scale model (:mod:`nmp.train.extrapolate`) prices each phase at the setup's scale
  (:func:`phase_costs_ns`: a send's bytes over the NICs it crosses plus its messages, a compute's
  time from the hardware models) and charges the step's **critical path**
  (:meth:`Schedule.critical_path_ns`): phases in series along ``after``, overlapped only where a
  phase is declared ``background``;
- ``nmp train --procs --json`` sets each phase's measured time beside its modeled one
  (:mod:`nmp.train.dist.phases`).

The recovery side of a strategy (what a failure costs at scale, what the runtime restores) is
the strategy class's own methods (``scale_rows``, ``rolls_back``, ``restore_replacement``): a new
strategy is one module under :mod:`nmp.train.strategies`.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Phase:
    name: str
    actor: str  # "worker", "server" or "all" (a sync every process takes part in)
    does: str  # "send", "compute" or "sync"
    traffic: str | None = None  # the traffic kind its bytes are counted as (nmp.train.traffic)
    to: str | None = None  # a send's receiving role
    after: tuple[str, ...] = ()  # phases it waits on
    background: bool = False  # behind the step: never on the critical path
    what: str = ""  # one line for reports


@dataclass(frozen=True)
class RunPhase:
    """A phase of the run outside the steady step: a save every interval, or what one failure
    triggers. ``nmp train --procs`` measures each one in the run and models it from what the
    processes did (:mod:`nmp.train.dist.runphases` holds one measurement and one model per
    name); the scale model prices the same ones at scale (the strategy's ``scale_*``)."""

    name: str  # "save", "regroup", "restore", "reexec", "repair"
    when: str  # "every_save", "per_failure" or "per_step" (inside the steps: not added again)
    what: str = ""


@dataclass(frozen=True)
class Schedule:
    step: tuple[Phase, ...]
    # what a failure triggers, in words (reports); the costs are the strategy's scale_rows
    recovery: tuple[str, ...] = field(default=())
    # the run's phases beyond the steps (saves, a failure's regroup, restore, re-execution)
    run: tuple[RunPhase, ...] = field(default=())
    # which schedule this is and on what authority (reports say it beside the verdict)
    basis: str = ""

    def has(self, name: str) -> bool:
        return any(p.name == name for p in self.step)

    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.step)

    def with_phases(self, *extra: Phase, before: str = "vote") -> Schedule:
        """This schedule with ``extra`` inserted before phase ``before``, which then also
        waits on them (a strategy's additions to the common step)."""
        out: list[Phase] = []
        for p in self.step:
            if p.name == before:
                out.extend(extra)
                waits = tuple(e.name for e in extra if not e.background)
                p = Phase(**{**p.__dict__, "after": (*p.after, *waits)})
            out.append(p)
        return Schedule(tuple(out), self.recovery, self.run, self.basis)

    def with_run(self, *extra: RunPhase, recovery: tuple[str, ...] = ()) -> Schedule:
        """This schedule with the run phases ``extra`` after its own (and ``recovery``'s words
        instead of its own when given)."""
        return Schedule(self.step, recovery or self.recovery, (*self.run, *extra), self.basis)

    def overlapped(self, common: Schedule) -> Schedule:
        """This schedule with every phase it adds to ``common`` behind the step (background):
        the contrast a report sets beside the schedule as run (what full overlap would give)."""
        step = tuple(
            p if common.has(p.name) else Phase(**{**p.__dict__, "background": True})
            for p in self.step
        )
        return Schedule(step, self.recovery, self.run, "overlapped (assumed, not run)")

    def critical_path_ns(self, phase_ns: dict[str, float]) -> float:
        """The step's time: the longest chain of foreground phases through ``after`` (a phase
        starts when everything it waits on has ended); background phases cost nothing here."""
        end: dict[str, float] = {}
        for p in self.step:  # declared in an order where every 'after' comes first
            start = max((end[a] for a in p.after if a in end), default=0.0)
            end[p.name] = start + (0.0 if p.background else float(phase_ns.get(p.name, 0.0)))
        return max(end.values(), default=0.0)

    def foreground(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.step if not p.background)


# The step every strategy shares (nmp.train.dist.worker / server run it in this order).
COMMON = Schedule(
    (
        Phase("lookup", "worker", "send", "lookup", "server", (), what="lookups to the servers"),
        Phase("gather", "server", "compute", after=("lookup",), what="gather-reduce in memory"),
        Phase("pooled", "server", "send", "pooled", "worker", ("gather",), what="partial sums"),
        Phase("dense", "worker", "compute", after=("pooled",), what="MLP forward + backward"),
        Phase("row_grad", "worker", "send", "row_grad", "server", ("dense",), what="row grads"),
        Phase("dense_grad", "worker", "send", None, "worker", ("dense",), what="MLP all-gather"),
        Phase("optimizer", "server", "compute", after=("row_grad",), what="rows updated"),
        Phase("vote", "all", "sync", after=("optimizer", "dense_grad"), what="two-phase commit"),
    ),
    recovery=("regroup: a new process group without the dead process",),
    run=(
        RunPhase(
            "regroup", "per_failure",
            "the death seen, a hot spare takes the role, a new process group forms",
        ),
    ),
)  # fmt: skip


def phase_costs_ns(
    *,
    step_bytes: dict[str, float],
    server_gbps: float,
    worker_gbps: float,
    servers: int,
    workers: int,
    message_ns: float,
    compute_ns: dict[str, float],
) -> dict[str, float]:
    """Each phase's time at scale. A send: its bytes over the servers' NICs (spread over
    ``servers``) or the workers' (spread over ``workers``), the slower of the two ends, plus one
    message per peer it exchanges with; ``parity_delta`` crosses servers' NICs only. A compute:
    ``compute_ns`` (the hardware models' time). Bandwidths in GB/s (bytes per ns); 0: not a
    limit."""
    out = dict(compute_ns)

    def over(nbytes: float, gbps: float, ends: int) -> float:
        return nbytes / ends / gbps if gbps else 0.0

    for kind in ("lookup", "pooled", "row_grad"):
        b = step_bytes.get(kind, 0.0)
        out[kind] = max(over(b, server_gbps, servers), over(b, worker_gbps, workers))
        out[kind] += workers * message_ns  # a server exchanges one message with each worker
    out["parity_delta"] = over(step_bytes.get("parity_delta", 0.0), server_gbps, servers)
    out["parity_delta"] += (servers - 1) * message_ns  # one delta message to each other server
    return out
