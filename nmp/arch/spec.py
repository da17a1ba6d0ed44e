"""ArchSpec: a memory-side design as data (levels of processing units, placement, instructions).

A design is a tree per memory channel: memory controller -> rank (buffer chip) -> bank group ->
bank. Each of the three levels may hold processing units (``units`` per rank). The banks of a
rank are split between the levels that hold data (``capacity_banks``, e.g. ReCross's 16:12:4):
a level's units own whole banks and gather-reduce only rows stored there; partial sums travel up
the tree to the rank unit (buffer chip) and then over the channel to the host.

Every value of a preset cites its source in ``models/arch/*.toml``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from nmp.arch.salp_readings import SALP_READINGS_REGISTRY
from nmp.config import KeyedValueError, find_preset, require_at_least
from nmp.design import KeyAssumption
from nmp.errors import SpecError
from nmp.parity_codes import PARITY_CODES, ParityCode
from nmp.registry import Registry
from nmp.units import is_power_of_two

LEVELS = ("rank", "bankgroup", "bank")


@dataclass(frozen=True)
class ReplicaChoice:
    """How a lookup of a replicated hot row picks its replica (``replica_choice``;
    nmp.arch.replication)."""

    name: str
    description: str
    # lookup by lookup, in issue order, to the least-loaded node; else balanced per-node counts
    # handed out in blocks of the batch's table-major order
    greedy_in_issue_order: bool


REPLICA_CHOICES: Registry[ReplicaChoice] = Registry("replica choice")
REPLICA_CHOICES.register(
    ReplicaChoice("bag-blocks", "balanced counts, a bag's hot lookups on one node", False)
)
REPLICA_CHOICES.register(
    ReplicaChoice("least-loaded", "each hot lookup to the least-loaded node so far", True)
)


@dataclass(frozen=True)
class RankCachePolicy:
    """How a RankCache decides what to allocate (``rank.cache_policy``)."""

    name: str
    description: str
    needs_profile: bool  # placement profiles the batch first: the profile's hot rows are cached
    admits_online: bool  # a row is admitted once it recurs cache_reuse_threshold times


RANK_CACHE_POLICIES: Registry[RankCachePolicy] = Registry("RankCache policy")
RANK_CACHE_POLICIES.register(
    RankCachePolicy("profile", "the access profile's hot rows are allocated", True, False)
)
RANK_CACHE_POLICIES.register(
    RankCachePolicy("online", "a row is allocated once it recurs in the batch", False, True)
)


@dataclass(frozen=True)
class BasePlacement:
    """How a cross-level design without the LP picks each row's level (``base_placement``)."""

    name: str
    description: str
    # each table's hottest rows (by the access profile) on the level with the most bandwidth
    # per row it stores; else every row spread by the levels' capacity ratio
    hottest_to_fastest: bool


BASE_PLACEMENTS: Registry[BasePlacement] = Registry("base placement")
BASE_PLACEMENTS.register(
    BasePlacement("frequency", "hottest rows on the level with the most bandwidth per row", True)
)
BASE_PLACEMENTS.register(
    BasePlacement("capacity", "every row spread by capacity, oblivious of frequency", False)
)


def _require_choice(obj, key: str, choices: tuple[str, ...], what: str = "") -> None:
    """Raise :class:`KeyedValueError` naming ``key`` when its value is not one of ``choices``."""
    value = getattr(obj, key)
    if value not in choices:
        raise KeyedValueError(key, f"unknown {what}'{value}' (known: {', '.join(choices)})")


@dataclass(frozen=True)
class MemorySetup:
    """The memory the design sits on: a ``models/memory`` preset and its channel/rank count."""

    preset: str
    channels: int = 1
    ranks: int = 1

    def validate(self) -> None:
        if self.channels <= 0:
            raise KeyedValueError("channels", "must be positive")
        if self.ranks <= 0:
            raise KeyedValueError("ranks", "must be positive")
        # what the memory would refuse later under its own key (org.channels), named here
        # where the design file gives it
        for key in ("channels", "ranks"):
            v = getattr(self, key)
            if not is_power_of_two(v):
                raise KeyedValueError(key, f"must be a power of two, got {v}")
        if isinstance(self.preset, str):  # (a caller may give a MemorySpec itself)
            try:
                find_preset("memory", self.preset)
            except SpecError as exc:
                raise KeyedValueError("preset", exc.message) from None


@dataclass(frozen=True)
class HostSpec:
    """The host CPU that issues lookups and (for ``host-cpu``) reduces them itself: its cores
    and cache hierarchy (docs/host-model.md, :mod:`nmp.arch.host_hierarchy`). The defaults are
    a Golden Cove (Sapphire Rapids) core's; the presets give every value's source."""

    cpu: str = ""  # the real CPU the values describe (documentation)
    source: str = ""  # where the values come from ("measured on <cpu>, <date>": nmp measure host)
    cores: int = 16
    threads: int = 0  # cores the lookups run on (one thread each); 0: every core
    clock_ghz: float = 2.2
    simd_lanes: int = 16  # FP32 lanes per core per cycle
    # the lookup kernel's fixed work per lookup (index load, bounds check, address, loop)
    lookup_cycles: float = 8.0
    # cycles per SIMD vector of a row the kernel loads and adds (1: one vector add per cycle)
    vector_cycles: float = 1.0
    # CPU time of one kernel call beyond its lookups (framework dispatch, argument checks, the
    # output's allocation), charged once per batch; and what each thread beyond the first adds
    # to a call (waking it, joining it). 0: not charged (nmp measure host measures both).
    call_ns: float = 0.0
    thread_sync_ns: float = 0.0
    # energy of one FP32 add on the core, with its overheads: Horowitz (ISSCC'14, 45 nm) ~70 pJ
    # of instruction overhead per 16-lane SIMD add plus 0.9 pJ per add -> ~5 pJ per element
    # (as models/arch/host-cpu.toml; the near-memory designs' host adds pay it too)
    pj_per_flop: float = 5.0
    # Private caches per core: size (0: none), ways, load-to-use latency, misses in flight.
    l1_kib: float = 48.0
    l1_ways: int = 12
    l1_latency_ns: float = 2.3
    l1_fill_buffers: float = 16.0  # L1 misses a core keeps in flight
    l2_kib: float = 2048.0
    l2_ways: int = 16
    l2_latency_ns: float = 7.3
    l2_mshrs: float = 48.0  # L2 misses a core keeps in flight
    # Lines the lookup kernel keeps in flight when they come from the L2, the LLC or DRAM (its
    # out-of-order window, prefetches and fill buffers together; nmp measure host measures them
    # with the kernel itself). 0: l1_fill_buffers (every demand miss holds a fill buffer).
    l2_lines_in_flight: float = 0.0
    llc_lines_in_flight: float = 0.0
    dram_lines_in_flight: float = 0.0
    l2_bytes_per_cycle: float = 64.0  # L2 -> L1 fill bandwidth per core
    # Last-level cache shared by the cores: a set-associative LRU simulated on the L2s'
    # misses, warmed by the batches before. 0: no LLC.
    llc_mib: float = 0.0
    llc_ways: int = 16
    llc_latency_ns: float = 33.0
    llc_gbps: float = 500.0  # the LLC's read bandwidth to all cores together
    llc_pj_per_bit: float = 1.6  # energy of reading a hit from the LLC
    l1_pj_per_bit: float = 0.3  # energy of reading a hit from the L1
    l2_pj_per_bit: float = 1.6  # energy of reading a hit from the L2
    dram_latency_ns: float = 110.0  # load-to-use latency of a line from DRAM, idle
    # Address translation: a TLB of 4-KiB pages per core; a miss walks the page table
    # (page_walk_ns, with page_walkers walks in flight per core).
    tlb_entries: int = 2048
    page_walk_ns: float = 25.0
    page_walkers: float = 4.0
    # The CPU's die, counted as the design's area where the host does the work (host policy;
    # nmp.arch.area), with where the figure comes from. 0: not counted.
    die_area_mm2: float = 0.0
    die_area_source: str = ""

    def validate(self) -> None:
        for name in (
            "cores",
            "clock_ghz",
            "simd_lanes",
            "llc_ways",
            "l1_ways",
            "l2_ways",
            "l1_fill_buffers",
            "l2_mshrs",
            "l2_bytes_per_cycle",
            "llc_gbps",
            "tlb_entries",
            "page_walkers",
        ):
            if getattr(self, name) <= 0:
                raise KeyedValueError(name, "must be positive")
        # rates so small that a batch's time overflows to infinity (clock_ghz = 1e-300): the
        # floors are far below any real CPU's and far above the overflow (chosen)
        _require_floor(self, clock_ghz=1e-3, llc_gbps=1e-3, l2_bytes_per_cycle=1e-3)
        if self.threads < 0:
            raise KeyedValueError("threads", "must be >= 0 (0: every core)")
        if self.threads > self.cores:
            raise KeyedValueError("threads", f"must be <= cores ({self.cores}): one per core")
        require_at_least(
            self,
            0,
            "pj_per_flop",
            "l1_kib",
            "l2_kib",
            "llc_mib",
            "llc_pj_per_bit",
            "die_area_mm2",
            "l1_pj_per_bit",
            "l2_pj_per_bit",
            "lookup_cycles",
            "vector_cycles",
            "call_ns",
            "thread_sync_ns",
            "l2_lines_in_flight",
            "llc_lines_in_flight",
            "dram_lines_in_flight",
            "l1_latency_ns",
            "l2_latency_ns",
            "llc_latency_ns",
            "dram_latency_ns",
            "page_walk_ns",
        )


@dataclass(frozen=True)
class UnitSpec:
    """Processing units of one level. ``units`` is the count per rank (0: no units here).

    ``capacity_banks``: banks per rank whose rows this level serves (-1: all banks of the rank
    when this is the only data level). ``lanes``: FP32 multiply-add lanes of one unit, summed
    over the DRAM chips it spans. ``buffer_kib``: SRAM for partial sums (and the cache).
    ``cache_kib``/``cache_reuse_threshold``: a RecNMP RankCache; rows seen at least that many
    times in a batch are served from SRAM after their first read. ``area_mm2``: one unit's area
    on one chip (buffer chip for the rank level, each DRAM chip of the rank otherwise).
    """

    units: int = 0
    capacity_banks: int = -1
    clock_mhz: float = 300.0
    lanes: int = 16
    buffer_kib: float = 16.0
    cache_kib: float = 0.0
    cache_reuse_threshold: int = 2
    cache_policy: str = "profile"
    pj_per_add: float = 0.9
    pj_per_mul: float = 3.7
    sram_pj_per_bit: float = 0.16
    area_mm2: float = 0.0
    subarrays: int = 1  # subarrays per bank usable in parallel (bank level, with SALP)
    # What subarray-level parallelism overlaps (Kim et al., ISCA'12; bank level, with
    # ``subarray_parallelism``): "salp1" hides the precharge of one subarray behind the
    # activation of the next (a row every tRAS instead of tRC); "salp2" also lets a second
    # subarray activate while the first is open (two activations in flight); "masa" keeps
    # several subarrays' rows open at once (up to SALP_TRACKED_SUBARRAYS, tCCD_L binds).
    salp: str = "masa"

    def validate(self) -> None:
        if self.units < 0:
            raise KeyedValueError("units", "must be >= 0")
        if self.capacity_banks < -1:
            raise KeyedValueError("capacity_banks", "must be >= 0 (or -1: every bank)")
        for name in ("clock_mhz", "lanes", "subarrays"):
            if getattr(self, name) <= 0:
                raise KeyedValueError(name, "must be positive")
        _require_floor(self, clock_mhz=1.0)
        require_at_least(
            self, 0, "buffer_kib", "cache_kib", "pj_per_add", "pj_per_mul", "sram_pj_per_bit"
        )
        if self.area_mm2 < 0:
            raise KeyedValueError("area_mm2", "must be >= 0")
        if self.cache_kib > self.buffer_kib:
            raise KeyedValueError(
                "cache_kib",
                f"cache of {self.cache_kib:g} KiB is larger than the unit's SRAM "
                f"(buffer_kib = {self.buffer_kib:g})",
            )
        # the registries as they are now: a reading or policy registered later is a choice too
        _require_choice(self, "salp", SALP_READINGS_REGISTRY.names(), "reading ")
        _require_choice(self, "cache_policy", RANK_CACHE_POLICIES.names())
        if self.cache_reuse_threshold < 1:
            raise KeyedValueError("cache_reuse_threshold", "must be >= 1")


@dataclass(frozen=True)
class InstructionSpec:
    """Instruction delivery: one NMP instruction per lookup (TRiM: 85 bits).

    ``host_bits_per_cycle``: memory controller -> buffer chip over C/A (+DQ), per channel and
    DRAM cycle. ``dram_ca_bits_per_cycle``: buffer chip -> DRAM chips over the rank's C/A, per
    rank and DRAM cycle (only lookups served inside the DRAM chips use it).
    """

    bits_per_lookup: int = 0
    host_bits_per_cycle: float = 78.0
    dram_ca_bits_per_cycle: float = 14.0

    def validate(self) -> None:
        if self.bits_per_lookup < 0:
            raise KeyedValueError("bits_per_lookup", "must be >= 0")
        for name in ("host_bits_per_cycle", "dram_ca_bits_per_cycle"):
            if getattr(self, name) <= 0:
                raise KeyedValueError(name, "must be positive")
        _require_floor(self, host_bits_per_cycle=1e-3, dram_ca_bits_per_cycle=1e-3)


def _require_floor(spec: object, **floors: float) -> None:
    """Each named rate at least its floor: a positive rate far below any real part's
    (``--set arch.rank.clock_mhz=1e-300``) made the batch time overflow to infinity."""
    for name, floor in floors.items():
        value = getattr(spec, name)
        if value < floor:
            raise KeyedValueError(name, f"must be >= {floor:g}, got {value:g}")


def _parity_code(name: str) -> ParityCode:
    """The code ``name`` names; a KeyedValueError at ``code`` listing the codes when none."""
    if name not in PARITY_CODES:
        raise KeyedValueError("code", PARITY_CODES.unknown_message(name))
    return PARITY_CODES.get(name)


@dataclass(frozen=True)
class ParitySpec:
    """In-memory parity: stripes of ``k`` data rows + ``r`` parity rows over the nodes of
    ``level``; the data's unit computes old XOR new, the parity's unit applies the delta."""

    level: Literal["rank", "bankgroup", "bank"] = "rank"
    k: int = 4
    r: int = 1
    code: str = "xor"  # a name of nmp.parity_codes.PARITY_CODES that a memory unit applies
    rotating: bool = True
    pj_per_byte_xor: float = 0.1  # XOR of one byte in the unit, with its registers
    unit_area_mm2: float = -1.0  # -1: from nmp.rtl figures when present, else placeholder
    unit_clock_mhz: float = -1.0

    def validate(self) -> None:
        if self.k < 1:
            raise KeyedValueError("k", "must be >= 1")
        if self.r < 1:
            raise KeyedValueError("r", "must be >= 1")
        code = _parity_code(self.code)
        if not code.in_memory:
            raise KeyedValueError("code", f"'{self.code}' is not applied by a memory unit")
        error = code.parities_error(self.r)
        if error:
            raise KeyedValueError("r", error)
        if self.pj_per_byte_xor < 0:
            raise KeyedValueError("pj_per_byte_xor", "must be >= 0")


@dataclass(frozen=True)
class DramEnergySplit:
    """Where a read's energy goes along the DRAM's data path, so that each unit pays only the
    part of the path its data crosses (see docs/arch-model.md, "Energy by where data moves").

    A column read's energy (the IDD4R burst of :func:`nmp.memory.command_energy_pj`) moves
    data from the sense amplifiers through the bank's column path, the bank group's I/O and
    the chip's global data bus to the pads; ``bank_read_share`` / ``bankgroup_read_share``
    are the parts a bank / bank-group unit pays (it sits at that point of the path). The
    memory's ``io_pj_per_bit`` is the off-chip path from the DRAM pins to the host;
    ``chip_to_buffer_io_share`` is its DRAM -> buffer-chip hop, what a rank unit pays.
    Activation, refresh and background are paid by every design.
    """

    # chosen (switches; docs/arch-model.md): O'Connor et al. (MICRO'17, "Fine-grained DRAM")
    # put HBM2's read energy at 1.21 pJ/bit activation, 2.24 on-die data movement, 0.3 I/O
    # [secondary, PAPERS.md], most of the movement on the global wires between the banks and
    # the I/O; a bank unit (at the bank's column path) pays about a third of a column read, a
    # bank-group unit (at the bank group's I/O) about half. Swept in
    # papers/sensitivity-recross-trim-energy and papers/sensitivity-host-energy.
    bank_read_share: float = 0.35
    bankgroup_read_share: float = 0.55
    # chosen: the DRAM -> buffer-chip hop is half the pin-to-host I/O energy (both hops drive
    # a terminated DDR5 data line; the host hop is the longer one, taken as equal)
    chip_to_buffer_io_share: float = 0.5

    def validate(self) -> None:
        for name in ("bank_read_share", "bankgroup_read_share", "chip_to_buffer_io_share"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise KeyedValueError(name, "must be in [0, 1]")
        if self.bank_read_share > self.bankgroup_read_share:
            raise KeyedValueError(
                "bank_read_share", "a bank unit's part of the path is within its bank group's"
            )


@dataclass(frozen=True)
class ArchSpec:
    """One memory-side design. See the module docstring for the model."""

    name: str
    memory: MemorySetup
    policy: str = "horizontal"
    description: str = ""
    host: HostSpec = field(default_factory=HostSpec)
    rank: UnitSpec = field(default_factory=UnitSpec)
    bankgroup: UnitSpec = field(default_factory=UnitSpec)
    bank: UnitSpec = field(default_factory=UnitSpec)
    instruction: InstructionSpec = field(default_factory=InstructionSpec)
    parity: ParitySpec = field(default_factory=ParitySpec)
    dram_energy: DramEnergySplit = field(default_factory=DramEnergySplit)
    # mechanisms (switches, so that ablations run with --set arch.<switch>=false)
    subarray_parallelism: bool = False
    bandwidth_aware_partition: bool = False
    locality_aware_scheduling: bool = False
    table_aware_scheduling: bool = False
    # Lookups a unit can reorder at once with locality_aware_scheduling (its queue); chosen:
    # 32, the controller's read queue (Ramulator 2's default, as models/memory) holding one
    # lookup instruction per entry; 0 sorts the whole batch in advance (an oracle).
    scheduling_window: int = 32
    partition_calibration: bool = True  # re-solve the LP with measured per-level costs
    # Cross-level placement without the LP (ReCross's ablation base): "frequency" puts each
    # table's hottest rows on the level with the most bandwidth per row it stores, each level
    # taking its capacity share of the table's rows (a frequency-aware designer without an
    # optimizer); "capacity" spreads every row by the capacity ratio, oblivious of frequency.
    base_placement: str = "frequency"
    # A bank unit in a bank group that also has a bank-group unit reads through that bank
    # group's column path, which the two then share (one burst per tCCD_L); false: the bank
    # unit has a column path of its own (as TRiM-B's bank units, alone in their bank groups,
    # always do). Chosen (issue 29): the sources do not say how ReCross's bank units connect.
    shared_bankgroup_column_path: bool = True
    # A unit reads a lookup's lines under one activation: its controller holds an open row
    # while hits to it are queued. The papers' lookup instructions carry the lines to read
    # (TRiM: nRD; RecNMP: the vector size; PAPERS.md), so a unit never closes a row it has
    # still to read. False: Ramulator 2's FR-FCFS (the host's controller), where a younger
    # miss's PRE, ready while the open row's hits wait for the column path, closes the row:
    # 1.48 activations per lookup for TRiM-G on dlrm-benchmark, against 1.01 when true.
    units_hold_rows: bool = True
    replicate_hot_rows: int = 0  # hottest rows copied to every node of the finest level
    # how a lookup of a replicated row picks its replica (nmp.arch.replication; TRiM does not
    # say): "bag-blocks" (balanced counts, a bag's hot lookups on one node) or "least-loaded"
    # (lookup by lookup to the least-loaded node, a bag's hot lookups spread)
    replica_choice: str = "bag-blocks"
    profile_seed_offset: int = 1  # the access profile comes from another batch (seed + this)
    # Per-node request streams longer than this are timed on an evenly spread sample of this
    # many requests and scaled (nmp.arch.timing.sample_index); 0 replays every request.
    # Chosen so that recross-eval's per-node NMP streams are replayed whole (the host CPU's one
    # stream of 266K requests is sampled, as is dlrm-benchmark); tests/arch/test_timing.py
    # bounds the sampling error (cycles, row conflicts, energy within 2 %).
    replay_sample_requests: int = 262144
    # What this design's standing rests on, each with the --set that tests it (reports re-run
    # points under them: nmp.evaluate.explain); not a model input.
    key_assumptions: tuple[KeyAssumption, ...] = ()

    def level(self, name: str) -> UnitSpec:
        return getattr(self, name)

    @property
    def unit_levels(self) -> tuple[str, ...]:
        """Levels that hold processing units, coarse to fine."""
        return tuple(lv for lv in LEVELS if self.level(lv).units > 0)

    @property
    def data_levels(self) -> tuple[str, ...]:
        """Levels whose units read rows from DRAM (capacity_banks != 0)."""
        return tuple(lv for lv in self.unit_levels if self.level(lv).capacity_banks != 0)

    def validate(self) -> None:
        if self.replay_sample_requests < 0:
            raise KeyedValueError("replay_sample_requests", "must be >= 0 (0 replays everything)")
        _require_choice(self, "base_placement", BASE_PLACEMENTS.names(), "base placement ")
        if self.subarray_parallelism and self.bank.units == 0:
            raise KeyedValueError("subarray_parallelism", "needs bank units (bank.units > 0)")
        if self.scheduling_window < 0:
            raise KeyedValueError("scheduling_window", "must be >= 0 (0: the whole batch)")
        _require_choice(self, "replica_choice", REPLICA_CHOICES.names(), "replica choice ")
        if self.replicate_hot_rows < 0:
            raise KeyedValueError("replicate_hot_rows", "must be >= 0")
        for lv in LEVELS:
            unit = self.level(lv)
            if lv != "rank" and unit.cache_kib > 0:
                raise KeyedValueError(f"{lv}.cache_kib", "the RankCache sits in the buffer chip")
            if unit.units == 0 and unit.capacity_banks > 0:
                raise KeyedValueError(f"{lv}.capacity_banks", "a level without units holds no rows")


__all__ = [
    "BASE_PLACEMENTS",
    "REPLICA_CHOICES",
    "BasePlacement",
    "DramEnergySplit",
    "LEVELS",
    "ArchSpec",
    "HostSpec",
    "InstructionSpec",
    "MemorySetup",
    "ParitySpec",
    "ReplicaChoice",
    "UnitSpec",
]
