"""Replay statistics (:class:`MemStats`) and DRAM energy from command counts.

Energy follows DRAMsim3's IDD formulas (PAPERS.md), V x mA x cycles x tCK(ns) = pJ:

- ACT (+ its PRE): ``VDD * (IDD0*tRC - (IDD3N*tRAS + IDD2N*tRP)) * devices``
- RD / WR burst: ``VDD * (IDD4R|IDD4W - IDD3N) * nBL * devices``
- REFab: ``VDD * (IDD5AB - IDD3N) * tRFC * devices``
- background per rank / pseudo channel: ``VDD * (IDD3N * active + IDD2N * precharged) * devices``
  per cycle, where *active* cycles are those with any bank open.

With ``energy.refresh_background = "active"`` (DRAMPower's accounting) each REFab adds ``VDD *
(IDD3N - IDD2N) * tRFC * devices`` to the background: its tRFC counted active, not precharged,
so that a refresh draws IDD5B in all, as a datasheet defines IDD5B (at most the precharged
cycles are raised: where every rank is taken as active, nothing moves).

With ``energy.bank_wise_rho`` below 1 these are DRAMPower 6's DDR5 formulas: the ACT's IDD3N
becomes I_1, one open bank's background, and the background ``I_rho * active + (IDD3N - I_rho)
/ B * bank_open + IDD2N * precharged``, *bank_open* the cycles each bank had a row open, summed
(:meth:`nmp.memory.energy_spec.Energy.background_currents`; at rho = 1 both are the above, bit
for bit).

Off-chip I/O energy (``io_pj_per_bit`` x bits of RD/WR data) is reported separately as ``io``:
near-memory processing avoids it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from nmp.identity_cache import IdentityCache
from nmp.memory.counters import (
    C_BANK_OPEN,
    C_COAL,
    C_CONF_R,
    C_CONF_W,
    C_FWD,
    C_HIT_R,
    C_HIT_W,
    C_MISS_R,
    C_MISS_W,
)
from nmp.memory.standards import COMMANDS

if TYPE_CHECKING:
    from nmp.memory.spec import MemorySpec


def command_energy_pj(
    spec: MemorySpec,
    cmd_counts: Mapping[str, float],
    cycles: float,
    active_cycles: float | None = None,
    bank_open_cycles: float | None = None,
) -> dict[str, float]:
    """Energy breakdown (pJ) of ``cmd_counts`` (keys ACT, RD, WR, REF; RDA/WRA/REFab accepted)
    over ``cycles`` of every rank / pseudo channel of ``spec``.

    ``active_cycles`` is the sum over ranks of cycles with a bank open; ``None`` takes every
    rank as active (IDD3N), an upper bound for the open-row policy. ``bank_open_cycles`` is the
    sum over banks of cycles with a row open (the background's bank-wise part, DRAMPower's, at
    ``energy.bank_wise_rho`` below 1); ``None`` takes every bank of an active rank as open, the
    upper bound (IDD3N over the active cycles, as at rho = 1).
    """
    consts = _per_spec(spec)[0]
    if consts is None:
        return {k: 0.0 for k in ("act", "rd", "wr", "ref", "background", "io")}
    k = consts
    n_rd = cmd_counts.get("RD", 0) + cmd_counts.get("RDA", 0)
    n_wr = cmd_counts.get("WR", 0) + cmd_counts.get("WRA", 0)
    n_ref = cmd_counts.get("REF", cmd_counts.get("REFab", 0))
    total_cycles = cycles * k.ranks
    active = total_cycles if active_cycles is None else min(active_cycles, total_cycles)
    all_open = k.banks * active
    open_banks = all_open if bank_open_cycles is None else min(bank_open_cycles, all_open)
    # DRAMPower's background: I_rho while a bank is open, (IDD3N - I_rho) / B more per open
    # bank, IDD2N while none is (at rho = 1: IDD3N and IDD2N, DRAMsim3's; per_bank is 0.0)
    background = k.scale * (
        k.i_rho * active + k.per_bank * open_banks + k.idd2n * (total_cycles - active)
    )
    if k.ref_background_per_cycle:  # (0.0 for DRAMsim3's accounting: its sum, bit for bit)
        # DRAMPower's: each refresh's tRFC at IDD3N, not the IDD2N of the precharged cycles
        # it lies in (a replay counts it so); a count that takes every rank as active has it
        # at IDD3N already, so only precharged cycles are raised
        refreshing = min(n_ref * k.nrfc, total_cycles - active)
        background += k.ref_background_per_cycle * refreshing
    return {
        "act": k.e_act * cmd_counts.get("ACT", 0),
        "rd": k.e_rd * n_rd,
        "wr": k.e_wr * n_wr,
        "ref": k.e_ref * n_ref,
        "background": background,
        "io": k.io_pj_per_bit * (n_rd + n_wr) * k.tx_bytes * 8,
    }


# Per spec (frozen: its figures never change), by id, each entry holding its spec so that an
# id is not reused while it is kept: a design point computes the statistics of 18 replays on
# three specs, and their constants took 8-10 us of each (issue 43)
_SPEC_CONSTANTS: IdentityCache[tuple] = IdentityCache(256)


def _per_spec(spec: MemorySpec) -> tuple:
    """(the energy constants or None, tCK in ns, tx_bytes, peak bandwidth GB/s, requests
    per line) of ``spec``."""
    return _SPEC_CONSTANTS.get(spec, lambda: _constants_of(spec))


def _constants_of(spec: MemorySpec) -> tuple:
    return (
        _energy_of(spec),
        spec.tck_ns,
        spec.org.tx_bytes,
        spec.peak_bandwidth_gbps,
        spec.requests_per_line,
    )


class _EnergyTerms(NamedTuple):
    """A spec's energy constants: pJ per command, per background rank- and bank-cycle (with
    ``scale``, V x devices x tCK), per I/O bit."""

    scale: float
    e_act: float
    e_rd: float
    e_wr: float
    e_ref: float
    ref_background_per_cycle: float
    nrfc: int
    i_rho: float
    per_bank: float
    banks: int
    idd2n: float
    io_pj_per_bit: float
    tx_bytes: int
    ranks: int


def _energy_of(spec: MemorySpec) -> _EnergyTerms | None:
    """The per-command energies (DRAMsim3's IDD formulas, DRAMPower's at its bank-wise factor:
    the module docstring) and the factors of the background and I/O terms; None without an
    energy model."""
    e = spec.energy
    if e is None:
        return None
    t = spec.timing
    tck = spec.tck_ns
    scale = e.vdd_v * e.devices * tck
    banks = spec.org.banks_per_rank
    excess = e.command_excess(t, banks)  # (the spec refuses a set that makes one negative)
    i_rho, per_bank = e.background_currents(banks)
    e_act = scale * excess["act"]
    e_rd = scale * excess["rd"] * t["nBL"]
    e_wr = scale * excess["wr"] * t["nBL"]
    e_ref = scale * excess["ref"] * t["nRFC"]
    ref_background_per_cycle = scale * excess["ref_background"]
    ranks = spec.org.channels * spec.org.ranks
    return _EnergyTerms(scale, e_act, e_rd, e_wr, e_ref, ref_background_per_cycle, t["nRFC"],
                        i_rho, per_bank, banks, e.idd2n_ma, e.io_pj_per_bit, spec.org.tx_bytes,
                        ranks)  # fmt: skip


@dataclass
class MemStats:
    """Result of one replay.

    ``cycles`` is Ramulator 2's: memory ticks done when the last request was accepted.
    ``cycles_drained`` runs until every request has completed (read data returned, write
    issued): what NMP timing uses. Counts, latency, bandwidth and energy cover the simulated
    run: the whole work by default (``replay(..., drain=True)``), or up to ``cycles`` with
    ``drain=False``. ``at_cycles`` always holds the command counts, row statistics and
    Ramulator's ``avg_read_latency`` at ``cycles``.
    """

    memory: str
    cycles: int
    cycles_drained: int
    t_ns: float
    t_drained_ns: float
    lines: int
    requests: int
    reads: int
    writes: int
    cmd_counts: dict[str, int]
    row_hits: int
    row_misses: int
    row_conflicts: int
    read_row_hits: int
    read_row_misses: int
    read_row_conflicts: int
    write_row_hits: int
    write_row_misses: int
    write_row_conflicts: int
    reads_forwarded: int
    writes_coalesced: int
    avg_read_latency_cycles: float
    bandwidth_gbps: float
    bandwidth_utilization: float
    energy_pj: float
    energy_breakdown_pj: dict[str, float]
    at_cycles: dict[str, Any] = field(default_factory=dict)
    active_cycles: int = 0
    bank_open_cycles: int = 0
    timeline: dict[str, Any] | None = field(default=None, repr=False)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("timeline")
        return out


# the counters' first commands, in their order (the engines' layout)
_COUNTED = ("ACT", "PREpb", "PREab", "RD", "WR", "RDA", "WRA", "REFab")
if COMMANDS[: len(_COUNTED)] != _COUNTED:
    raise ImportError(f"nmp.memory.stats reads the counters as {_COUNTED}, not {COMMANDS}")


def command_counts(cnt) -> dict[str, int]:
    """The command counts of an engine's counters (:mod:`nmp.memory.counters`' layout): ACT,
    PRE (PREpb + PREab, also apart), RD and WR (with their auto-precharge forms), REF."""
    act, prepb, preab, rd, wr, rda, wra, refab = map(int, cnt[:8])
    return {
        "ACT": act,
        "PRE": prepb + preab,
        "PREpb": prepb,
        "PREab": preab,
        "RD": rd + rda,
        "WR": wr + wra,
        "REF": refab,
    }


def run_stats(
    spec: MemorySpec,
    *,
    drain: bool,
    cycles: int,
    snap: list[int],
    final: list[int],
    sums: tuple[int, ...],
    active_sum: int,
    lines: int,
    timeline: dict[str, Any] | None = None,
) -> MemStats:
    """The statistics of an engine run on ``spec``: its ``cycles``, the counters at ``cycles``
    (``snap``) and at its end (``final``; :mod:`nmp.memory.counters`' layout), the read sums
    (the reads; the reads whose data returned by ``cycles`` and the sum of their latencies;
    the reads served and the sum of theirs; the last done cycle), the active cycles summed over
    ranks, the count of ``lines``; plain values (the numba engine's and the C engine's runs,
    with numpy or without, end here)."""
    reads, at_sum, served, served_sum, last_done = sums
    _, tck_ns, tx_bytes, peak_gbps, per_line = _per_spec(spec)
    n = lines * per_line  # the transactions
    # Ramulator's avg_read_latency at `cycles`: reads whose data returned by then (forwarded
    # ones with latency 1), over the RD commands issued by then.
    snap_counts = command_counts(snap)
    at_cycles: dict[str, Any] = {
        "cmd_counts": snap_counts,
        "row_hits": int(snap[C_HIT_R] + snap[C_HIT_W]),
        "row_misses": int(snap[C_MISS_R] + snap[C_MISS_W]),
        "row_conflicts": int(snap[C_CONF_R] + snap[C_CONF_W]),
        "avg_read_latency_cycles": at_sum / snap_counts["RD"] if snap_counts["RD"] else 0.0,
    }
    cnt = final if drain else snap
    counts = command_counts(cnt)
    if drain:
        # the exact integer sum over the count: numpy's mean of these integers (its float64
        # partial sums are exact below 2^53 cycles)
        avg_lat = float(served_sum) / served if served else 0.0
    else:
        avg_lat = at_cycles["avg_read_latency_cycles"]
    drained_cycles = max(last_done, cycles) if drain else cycles
    bank_open = int(cnt[C_BANK_OPEN])
    energy = command_energy_pj(spec, counts, drained_cycles, float(active_sum), float(bank_open))
    t_ns = cycles * tck_ns
    t_dr = drained_cycles * tck_ns
    moved = (counts["RD"] + counts["WR"]) * tx_bytes
    bw = moved / t_dr if t_dr > 0 else 0.0
    return MemStats(
        memory=spec.name,
        cycles=cycles,
        cycles_drained=drained_cycles,
        t_ns=t_ns,
        t_drained_ns=t_dr,
        lines=lines,
        requests=n,
        reads=reads,
        writes=n - reads,
        cmd_counts=counts,
        row_hits=int(cnt[C_HIT_R] + cnt[C_HIT_W]),
        row_misses=int(cnt[C_MISS_R] + cnt[C_MISS_W]),
        row_conflicts=int(cnt[C_CONF_R] + cnt[C_CONF_W]),
        read_row_hits=int(cnt[C_HIT_R]),
        read_row_misses=int(cnt[C_MISS_R]),
        read_row_conflicts=int(cnt[C_CONF_R]),
        write_row_hits=int(cnt[C_HIT_W]),
        write_row_misses=int(cnt[C_MISS_W]),
        write_row_conflicts=int(cnt[C_CONF_W]),
        reads_forwarded=int(cnt[C_FWD]),
        writes_coalesced=int(cnt[C_COAL]),
        avg_read_latency_cycles=avg_lat,
        bandwidth_gbps=bw,
        bandwidth_utilization=bw / peak_gbps if peak_gbps else 0.0,
        energy_pj=float(sum(energy.values())),
        energy_breakdown_pj=energy,
        at_cycles=at_cycles,
        active_cycles=active_sum,
        bank_open_cycles=bank_open,
        timeline=timeline,
    )
