"""Memory specs: a DRAM standard + timing + organization + controller + energy, as one frozen
dataclass loaded from a TOML preset in ``models/memory/``.

A preset names its ``standard`` (``DDR4``, ``DDR5``, ``HBM2``, ``HBM3``); the standard's timing
rules live in ``models/memory/standards/<standard>.toml`` and become the constraint table of
:mod:`nmp.memory.standards`. All timings are in cycles of the memory clock (``tck_ps``).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from nmp.config import (
    PRESET_CATALOGS,
    KeyedValueError,
    apply_overrides,
    find_preset,
    from_mapping,
    load_toml,
    preset_names,
    require_at_least,
)
from nmp.errors import NmpError, SpecError
from nmp.memory.controller_options import REFRESH_MODES, ROW_POLICIES
from nmp.memory.energy_spec import Energy, check_energy_terms
from nmp.units import is_power_of_two

BUS_LEVELS = ("channel", "rank", "bankgroup", "bank")


@dataclass(frozen=True)
class Organization:
    """Counts per level. ``ranks`` are pseudo channels on HBM. ``columns`` are device columns per
    row; ``columns // prefetch`` column addresses of ``tx_bytes`` each make one row (page)."""

    channels: int
    ranks: int
    bankgroups: int
    banks: int
    rows: int
    columns: int
    prefetch: int
    channel_width_bits: int
    device_width_bits: int
    tx_bytes: int

    def validate(self) -> None:
        for name in ("channels", "ranks", "bankgroups", "banks", "rows", "columns", "prefetch"):
            value = getattr(self, name)
            if value < 1 or not is_power_of_two(value):
                raise KeyedValueError(name, f"must be a positive power of two, got {value}")
        if self.columns % self.prefetch:
            raise KeyedValueError(
                "prefetch",
                also=("columns",),
                message=f"prefetch ({self.prefetch}) must divide columns ({self.columns})",
            )
        if self.channel_width_bits < 8 or self.channel_width_bits % 8:
            raise KeyedValueError(
                "channel_width_bits",
                f"must be a positive multiple of 8, got {self.channel_width_bits}",
            )
        # a rank is channel_width_bits / device_width_bits chips (the energy's device count)
        if self.device_width_bits < 1 or self.channel_width_bits % self.device_width_bits:
            raise KeyedValueError(
                "device_width_bits",
                also=("channel_width_bits",),
                message=f"device_width_bits ({self.device_width_bits}) must be >= 1 and divide "
                f"channel_width_bits ({self.channel_width_bits})",
            )
        capacity = self.channels * self.banks_per_channel * self.rows * self.columns
        if capacity * max(1, self.channel_width_bits) >= 2**64 * 8:
            raise ValueError(
                f"{self.channels} channels x {self.banks_per_channel} banks x {self.rows} rows x "
                f"{self.columns} columns do not fit 64-bit byte addresses"
            )
        if self.channel_width_bits // 8 * self.prefetch != self.tx_bytes:
            raise KeyedValueError(
                "tx_bytes",
                f"inconsistent organization: channel_width_bits/8 x prefetch = "
                f"{self.channel_width_bits // 8 * self.prefetch}, not {self.tx_bytes}",
            )

    @property
    def column_addrs(self) -> int:
        """Column addresses (of ``tx_bytes``) per row."""
        return self.columns // self.prefetch

    @property
    def banks_per_rank(self) -> int:
        return self.bankgroups * self.banks

    @property
    def banks_per_channel(self) -> int:
        return self.ranks * self.bankgroups * self.banks


# The largest controller sizes taken. Chosen: queues of 2^16 entries (the presets use 32 and
# 1,568; Ramulator 2's defaults are 32), a line of 4 KiB (64 lines of 64 B: the engine splits
# it into tx_bytes transactions), a frontend of 2^16 requests per cycle.
MAX_CONTROLLER = {
    "read_queue": 2**16,
    "write_queue": 2**16,
    "priority_queue": 2**16,
    "frontend_ratio": 2**16,
    "line_bytes": 4096,
}


@dataclass(frozen=True)
class Controller:
    """Controller parameters (README §1, §4): buffer sizes, write-drain watermarks, row policy,
    refresh, command slots per cycle and the frontend's offer rate."""

    read_queue: int = 32
    write_queue: int = 32
    # Ramulator 2's buffer of maintenance requests: the engine issues refreshes itself and
    # holds none, so the size changes no result (kept so that a Ramulator configuration reads)
    priority_queue: int = 1568
    wr_high_watermark: float = 0.8
    wr_low_watermark: float = 0.2
    row_policy: str = "open"  # a name in nmp.memory.controller_options.ROW_POLICIES
    refresh: str = "all-bank"  # a name in nmp.memory.controller_options.REFRESH_MODES
    dual_issue: bool = False
    frontend_ratio: int = 1
    channel_interleave_bits: int = 0
    line_bytes: int = 64
    # Ramulator 2's FR-FCFS protects only the active buffer's rows: a younger miss's PRE, ready
    # while the open row's queued hits wait for the column path, closes the row. A near-memory
    # unit reads a lookup's lines under one activation (nmp.arch.lowering.unit_view), so its
    # controller holds the row while hits to it are queued.
    hold_hit_rows: bool = False

    @property
    def refreshes(self) -> bool:
        """Whether each rank refreshes every nREFI cycles (all-bank refresh)."""
        return REFRESH_MODES.get(self.refresh).refreshes

    @property
    def closes_rows(self) -> bool:
        """Whether every column access precharges its row (the closed-row policy's switch)."""
        return ROW_POLICIES.get(self.row_policy).closes_row

    def validate(self) -> None:
        if self.row_policy not in ROW_POLICIES:
            raise KeyedValueError("row_policy", ROW_POLICIES.unknown_message(self.row_policy))
        if self.refresh not in REFRESH_MODES:
            raise KeyedValueError("refresh", REFRESH_MODES.unknown_message(self.refresh))
        for name in ("read_queue", "write_queue", "priority_queue", "frontend_ratio", "line_bytes"):
            if getattr(self, name) < 1:
                raise KeyedValueError(name, "must be at least 1")
        # counts the engine allocates by: bounded before it allocates (a read queue of 10^9
        # ran the engine out of memory)
        for name, most in MAX_CONTROLLER.items():
            if getattr(self, name) > most:
                raise KeyedValueError(name, f"must be <= {most:,}, got {getattr(self, name):,}")
        # each watermark is named by itself: the one out of [0, 1] is the one to blame
        for name in ("wr_high_watermark", "wr_low_watermark"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise KeyedValueError(name, f"must lie in [0, 1], got {getattr(self, name)}")
        if self.wr_low_watermark <= 0.0:
            # write mode ends when fewer than this share of writes is queued: never, at 0
            raise KeyedValueError(
                "wr_low_watermark",
                "must be > 0 (at 0 the controller never leaves write mode and queued reads "
                "wait forever)",
            )
        if self.wr_high_watermark < self.wr_low_watermark:
            raise KeyedValueError(
                "wr_high_watermark",
                also=("wr_low_watermark",),
                message=f"wr_high_watermark ({self.wr_high_watermark}) must be >= "
                f"wr_low_watermark ({self.wr_low_watermark})",
            )
        if self.channel_interleave_bits < 0:
            raise KeyedValueError("channel_interleave_bits", "must be >= 0")


# The longest timing parameter taken (chosen: 2^24 cycles, 10 ms at 1.6 GHz, about 1,300x the
# longest parameter of any preset, nREFI = 12,480): the engine adds parameters and counts cycles
# in 64-bit integers, which a value such as 10^17 overflows into negative latencies.
MAX_TIMING_CYCLES = 2**24


# tck_ps is whole picoseconds: 4800 MT/s is 416.67 ps, stored 416 (0.16 % off). Chosen: 1 %
# tolerates that rounding and refuses any clock that disagrees with the rate by a speed grade.
RATE_CLOCK_TOLERANCE = 0.01


def check_rate_matches_clock(
    rate_mtps: int, tck_ps: int, transfers_per_clock: int, standard: str
) -> None:
    """The rule ``rate-matches-clock``: the data rate is ``transfers_per_clock`` transfers per
    memory clock. Timing is counted in tck_ps cycles while bandwidth and reports quote rate_mtps,
    so a spec whose two disagree (a --set of one without the other) would time one memory and
    label it another."""
    expected_mtps = transfers_per_clock * 1e6 / tck_ps
    if abs(rate_mtps - expected_mtps) > RATE_CLOCK_TOLERANCE * expected_mtps:
        raise KeyedValueError(
            "rate_mtps",
            also=("tck_ps",),
            message=f"rule rate-matches-clock: {rate_mtps:,} MT/s disagrees with tck_ps = "
            f"{tck_ps:,} ({standard} moves {transfers_per_clock} transfers per clock: "
            f"{expected_mtps:,.0f} MT/s; set both, e.g. tck_ps = "
            f"{round(transfers_per_clock * 1e6 / rate_mtps):,} for {rate_mtps:,} MT/s)",
        )


# ACT to RD: one parameter where the standard has one (DDR4/5 nRCD), the read one where it splits
# ACT-to-RD from ACT-to-WR (HBM nRCDRD); a preset names exactly one of them.
TRCD_KEYS = ("nRCD", "nRCDRD")


def trcd_cycles(timing: Mapping[str, int]) -> int:
    """ACT to RD in memory cycles (tRCD), the one accessor every model reads it through; a
    SpecError when the timing has neither of :data:`TRCD_KEYS` (no silent 0)."""
    for key in TRCD_KEYS:
        if key in timing:
            return int(timing[key])
    raise SpecError(f"timing has no ACT-to-RD parameter ({' or '.join(TRCD_KEYS)})")


def check_refresh_leaves_time(timing: dict[str, int]) -> None:
    """The rule ``refresh-leaves-time``: every nREFI cycles a rank precharges all banks (nRP)
    and refreshes (nRFC); what is left must hold at least one row cycle (nRC: activate, access,
    precharge), else no request ever completes and a replay runs forever. JEDEC's figures leave
    over 90 % of the interval (DDR4-3200: nREFI 12,480, nRFC 576)."""
    row_cycle = timing.get("nRC", timing.get("nRAS", 0) + timing.get("nRP", 0))
    need = timing.get("nRP", 0) + timing["nRFC"] + row_cycle
    if timing["nREFI"] <= need:
        raise KeyedValueError(
            "timing.nREFI",
            also=("timing.nRFC", "timing.nRP", "timing.nRC", "timing.nRAS"),
            message=f"rule refresh-leaves-time: nREFI ({timing['nREFI']:,}) must exceed nRP + "
            f"nRFC + nRC ({need:,} cycles): a refresh interval shorter than a refresh and one "
            'row cycle never lets a request complete (or set controller.refresh = "none")',
        )


@dataclass(frozen=True)
class MemorySpec:
    """One modeled memory system. ``timing`` holds the standard's parameters in cycles.

    ``bus_level`` names the level whose nodes own a private data path: ``"channel"`` is a normal
    memory system; ``"rank"``, ``"bankgroup"`` or ``"bank"`` give the internal view an NMP unit at
    that level sees (see :func:`nmp.memory.internal_view`).
    """

    name: str
    standard: str
    description: str
    rate_mtps: int
    tck_ps: int
    mapping: str
    timing: dict[str, int]
    org: Organization
    controller: Controller = field(default_factory=Controller)
    energy: Energy | None = None
    bus_level: Literal["channel", "rank", "bankgroup", "bank"] = "channel"

    def validate(self) -> None:
        # loaded when the command runs, not for `nmp --help`
        from nmp.memory.mapping_name import parse_mapping
        from nmp.memory.standards import load_standard

        try:
            std = load_standard(self.standard)
        except SpecError as exc:  # reported at this spec's file and key
            raise KeyedValueError("standard", exc.message) from None
        missing = sorted(std.parameters() - set(self.timing))
        if missing:
            raise KeyedValueError(f"timing.{missing[0]}", f"missing for standard {std.name}")
        if "nREFI" not in self.timing or "nRFC" not in self.timing:
            raise KeyedValueError("timing", "needs nREFI and nRFC")
        # a misspelt key (a preset's, or --set timing.nCl=...) would otherwise be ignored
        known = std.parameters() | {"nREFI", "nRFC"}
        unknown = sorted(set(self.timing) - known)
        if unknown:
            raise KeyedValueError(
                f"timing.{unknown[0]}",
                f"not a timing parameter of {std.name} (known: {', '.join(sorted(known))})",
            )
        for name, cycles in self.timing.items():  # a zero or negative gap breaks the engine
            if cycles < 1:
                raise KeyedValueError(f"timing.{name}", f"must be >= 1 cycle, got {cycles}")
            if cycles > MAX_TIMING_CYCLES:
                raise KeyedValueError(
                    f"timing.{name}",
                    f"must be <= {MAX_TIMING_CYCLES:,} cycles, got {cycles:,} (the engine's "
                    "cycle counts would overflow)",
                )
        if self.controller.refreshes:
            check_refresh_leaves_time(self.timing)
        require_at_least(self, 1, "rate_mtps", "tck_ps")
        check_rate_matches_clock(self.rate_mtps, self.tck_ps, std.transfers_per_clock, std.name)
        column_bits = self.org.column_addrs.bit_length() - 1
        interleave_bits = self.controller.channel_interleave_bits
        if interleave_bits > column_bits:  # was clamped to the column bits, silently
            raise KeyedValueError(
                "controller.channel_interleave_bits",
                f"must be <= {column_bits} (the column address bits of "
                f"{self.org.column_addrs:,} columns), got {interleave_bits}",
            )
        if self.controller.line_bytes % self.org.tx_bytes:
            raise KeyedValueError(
                "controller.line_bytes",
                f"must be a multiple of tx_bytes ({self.org.tx_bytes})",
                also=("org.tx_bytes",),
            )
        try:
            parse_mapping(self.mapping)
        except SpecError as exc:
            raise KeyedValueError("mapping", exc.message) from None
        if self.energy is not None:
            check_energy_terms(self.energy, self.timing, self.org.banks_per_rank)

    # ---- derived figures -------------------------------------------------------------------
    @property
    def tck_ns(self) -> float:
        return self.tck_ps / 1000.0

    @property
    def trcd_cycles(self) -> int:
        """ACT to RD (tRCD) in cycles: :func:`trcd_cycles` of this spec's timing."""
        return trcd_cycles(self.timing)

    @property
    def read_latency_cycles(self) -> int:
        """RD issue to last data beat: nCL + nBL (README §4)."""
        return self.timing["nCL"] + self.timing["nBL"]

    @property
    def page_bytes(self) -> int:
        """Bytes of one row of one rank / pseudo channel."""
        return self.org.column_addrs * self.org.tx_bytes

    @property
    def capacity_bytes(self) -> int:
        o = self.org
        return o.channels * o.banks_per_channel * o.rows * self.page_bytes

    @property
    def peak_bandwidth_gbps(self) -> float:
        """Data-bus peak: tx_bytes per nBL cycles per data bus (a channel on DDR, a pseudo
        channel on HBM), in GB/s."""
        from nmp.memory.standards import load_standard  # (cached; loaded on use)

        per_rank = load_standard(self.standard).data_bus_per_rank
        buses = self.org.channels * (self.org.ranks if per_rank else 1)
        return buses * self.org.tx_bytes / (self.timing["nBL"] * self.tck_ns)

    @property
    def requests_per_line(self) -> int:
        return self.controller.line_bytes // self.org.tx_bytes

    def with_org(self, **changes: Any) -> MemorySpec:
        """This spec with organization fields replaced (validated), e.g. ``with_org(ranks=1)``."""
        return apply_overrides(self, {f"org.{k}": v for k, v in changes.items()})

    def replace(self, **changes: Any) -> MemorySpec:
        return dataclasses.replace(self, **changes)


def internal_view(spec: MemorySpec, level: str) -> MemorySpec:
    """The spec an NMP unit at ``level`` (``rank``, ``bankgroup`` or ``bank``) sees.

    The unit reads through its own data path, so the constraints of the shared buses above it
    are dropped from the timing table (see :func:`nmp.memory.standards.build_table`):
    ``rank`` drops the channel data-bus rules and the rank-switch (sibling) rules;
    ``bankgroup`` also drops the rank-level column-to-column rules (tCCD_S, turnarounds), so a
    bank group is bounded by tCCD_L / tRRD_L / tWTR_L of its own; ``bank`` also turns the bank
    group's column-to-column rules into per-bank rules (each bank has its own column path,
    still at most one column access per tCCD_L). tRRD/tFAW (power) stay per rank.
    Combine with ``spec.with_org(ranks=1)`` etc. to time a stream confined to one node.
    """
    if level not in BUS_LEVELS:
        raise SpecError(f"unknown level '{level}' (expected one of {', '.join(BUS_LEVELS)})")
    return spec.replace(bus_level=level)


def _canonical(name: str) -> str:
    """Preset names match case-insensitively (README §8)."""
    lowered = name.lower()
    for known in preset_names("memory"):
        if known.lower() == lowered:
            return known
    return name


@functools.lru_cache(maxsize=64)
def _load_base(name: str) -> MemorySpec:
    path = find_preset("memory", _canonical(name))
    data = load_toml(path)
    return from_mapping(MemorySpec, data, file=str(path))


def load_memory(
    preset: str | MemorySpec,
    *,
    channels: int | None = None,
    ranks: int | None = None,
    mapping: str | None = None,
    overrides: dict[str, Any] | None = None,
    key_root: str = "",
) -> MemorySpec:
    """Load a memory preset (name, case-insensitive, or a TOML path) and apply CLI-style changes.

    ``overrides`` are dotted paths (``{"timing.nCL": 24, "controller.row_policy": "closed"}``);
    ``key_root`` prefixes their keys in errors (``memory``: ``memory.timing.nCL``, as given to
    ``nmp run --set``).
    """
    spec = preset if isinstance(preset, MemorySpec) else _load_base(str(preset))
    changes: dict[str, Any] = {}
    if channels is not None:
        changes["org.channels"] = channels
    if ranks is not None:
        changes["org.ranks"] = ranks
    if mapping is not None:
        # loaded when the command runs, not for `nmp --help`
        from nmp.memory.mapping_name import parse_mapping

        changes["mapping"] = parse_mapping(mapping).name
    if changes:  # the flags' own changes (channels, ranks, mapping)
        spec = apply_overrides(spec, changes)
    if overrides:
        spec = apply_overrides(spec, overrides, root=key_root)
    return spec


@PRESET_CATALOGS.register(name="memory")
def catalog_rows() -> list[dict[str, Any]]:
    """One row per memory preset for ``nmp models``."""
    from nmp.memory.standards import load_standard

    rows: list[dict[str, Any]] = []
    for name in preset_names("memory"):
        try:
            s = load_memory(name)
            level = load_standard(s.standard).rank_level_short
        except NmpError as exc:  # listed as invalid, as the other kinds' presets are
            rows.append({"name": name, "summary": f"invalid: {exc}"})
            continue
        t = s.timing
        trcd = s.trcd_cycles
        o = s.org
        rows.append(
            {
                "name": name,
                "standard": s.standard,
                "data_rate": f"{s.rate_mtps} MT/s",
                "tCK_ns": round(s.tck_ns, 4),
                "CL-tRCD-tRP": f"{t['nCL']}-{trcd}-{t['nRP']}",
                "org": f"{o.channels}ch x {o.ranks}{level} x {o.bankgroups}BG x {o.banks}",
                "peak_GB/s": round(s.peak_bandwidth_gbps, 1),
                "capacity_GiB": round(s.capacity_bytes / 2**30, 2),
                "summary": f"{s.standard} {s.rate_mtps} MT/s, {s.peak_bandwidth_gbps:.1f} GB/s",
            }
        )
    return rows
