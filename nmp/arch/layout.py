"""Which banks each processing unit owns, and where a row lives inside its node.

Per rank, the levels that hold rows split the rank's banks (``capacity_banks``; ReCross-d uses
16:12:4 of DDR5's 32 banks). Banks are handed out finest level first so that units of one level
sit in distinct bank groups: bank units take the last bank of bank groups 0, 1, 2, ...; bank-
group units take the remaining banks of the lowest bank groups in order, ``capacity/units`` banks
each; the rank unit (buffer chip) owns what is left. A level with units but no capacity (TRiM's
buffer-chip unit) only reduces partial sums.

Rows are interleaved over the nodes of their level (global row id modulo the node count, the
usual table interleave), and inside a node over its banks; consecutive slots of a bank fill a
DRAM page before moving on, and a row never straddles a page unless it is larger than one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nmp.arch import memview as mv
from nmp.arch.spec import LEVELS, ArchSpec
from nmp.errors import SpecError


@dataclass(frozen=True)
class LevelLayout:
    """The nodes of one level: ``units`` per rank, each owning ``banks_per_unit`` banks."""

    name: str
    units: int  # per rank
    capacity_banks: int  # per rank
    unit_bg: np.ndarray  # int64 [units, banks_per_unit]: bank group of each owned bank
    unit_bank: np.ndarray  # int64 [units, banks_per_unit]: bank index in its group
    channels: int
    ranks: int

    @property
    def banks_per_unit(self) -> int:
        return int(self.unit_bg.shape[1])

    @property
    def nodes(self) -> int:
        return self.channels * self.ranks * self.units

    def node_coords(self, node: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(channel, rank, unit-in-rank) of node ids."""
        unit = node % self.units
        rank = (node // self.units) % self.ranks
        chan = node // (self.units * self.ranks)
        return chan, rank, unit

    def node_rank_id(self, node: np.ndarray) -> np.ndarray:
        """Global rank id (channel * ranks + rank) of node ids."""
        return node // self.units

    def distinct_bankgroups(self) -> int:
        """Bank groups one unit spans (its column paths work in parallel)."""
        if self.unit_bg.size == 0:
            return 0
        return int(len(np.unique(self.unit_bg[0])))


def build_layout(spec: ArchSpec, mem, *, near_memory: bool = True) -> dict[str, LevelLayout]:
    """Level layouts of a design on memory ``mem``; raises SpecError naming the key when the
    unit counts do not divide the organization. ``near_memory``: the design's policy has units
    that read rows near memory (then its levels' capacity must cover a rank's banks)."""
    bgs, banks = mv.org(mem, "bankgroups"), mv.org(mem, "banks")
    rank_banks = bgs * banks
    channels, ranks = mv.org(mem, "channels"), mv.org(mem, "ranks")
    data_levels = spec.data_levels
    caps: dict[str, int] = {}
    for lv in spec.unit_levels:
        unit = spec.level(lv)
        cap = unit.capacity_banks
        if cap == -1:
            if len(data_levels) > 1:
                raise SpecError(
                    "several levels hold rows: give each its capacity_banks", key=f"arch.{lv}"
                )
            cap = rank_banks
        caps[lv] = cap
    total = sum(caps.values())
    if near_memory and total != rank_banks:
        key = f"arch.{data_levels[-1]}.capacity_banks" if data_levels else "arch.policy"
        raise SpecError(
            f"the levels' capacity_banks sum to {total}, but a rank has {rank_banks} banks "
            f"({bgs} bank groups x {banks})",
            key=key,
        )
    if spec.rank.units > 1:
        raise SpecError(
            "one rank unit per rank (it sits in the buffer chip)", key="arch.rank.units"
        )
    free = np.ones((bgs, banks), dtype=bool)
    out: dict[str, LevelLayout] = {}
    for lv in reversed(LEVELS):  # finest first
        unit = spec.level(lv)
        if unit.units == 0:
            continue
        cap = caps[lv]
        if cap % unit.units:
            raise SpecError(
                f"{unit.units} units must divide the level's {cap} banks per rank",
                key=f"arch.{lv}.units",
            )
        per = cap // unit.units
        if lv == "bank" and cap and per != 1:
            raise SpecError(
                f"a bank unit owns one bank: units ({unit.units}) must equal capacity_banks "
                f"({cap})",
                key="arch.bank.units",
            )
        if lv == "bank":
            # last bank of bank groups 0, 1, ... then the next-to-last bank, ...
            order = [(g, b) for b in reversed(range(banks)) for g in range(bgs)]
        else:
            order = [(g, b) for g in range(bgs) for b in range(banks)]
        taken = [(g, b) for g, b in order if free[g, b]][:cap]
        if len(taken) < cap:
            raise SpecError("not enough free banks for this level", key=f"arch.{lv}.capacity_banks")
        for g, b in taken:
            free[g, b] = False
        arr = (
            np.array(taken, dtype=np.int64).reshape(unit.units, per, 2)
            if cap
            else np.zeros((unit.units, 0, 2), dtype=np.int64)
        )
        if lv == "bankgroup" and per and per > banks and per % banks:
            raise SpecError(
                f"a bank-group unit must own whole bank groups or part of one; {per} banks "
                f"per unit with {banks} banks per group",
                key="arch.bankgroup.units",
            )
        if lv == "bankgroup" and per and per <= banks:
            spans = {len({g for g, _ in arr[u].tolist()}) for u in range(unit.units)}
            if spans != {1}:
                raise SpecError(
                    f"{unit.units} units of {per} banks do not each fit in one bank group",
                    key="arch.bankgroup.units",
                )
        out[lv] = LevelLayout(lv, unit.units, cap, arr[..., 0], arr[..., 1], channels, ranks)
    return dict(sorted(out.items(), key=lambda kv: LEVELS.index(kv[0])))


def slot_location(
    slot: np.ndarray, banks_per_unit: int, lines_per_row: int, lines_per_page: int, rows: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(bank index in the node, DRAM row, first column line) of node-local row slots.

    Slots beyond the node's capacity fold back (DRAM row modulo ``rows``)."""
    nb = max(banks_per_unit, 1)
    b = slot % nb
    q = slot // nb
    if lines_per_row <= lines_per_page:
        per_page = lines_per_page // lines_per_row
        page = q // per_page
        col = (q % per_page) * lines_per_row
    else:
        pages = -(-lines_per_row // lines_per_page)
        page = q * pages
        col = np.zeros_like(q)
    return b, page % rows, col


def node_capacity_slots(layout: LevelLayout, mem, row_bytes: int) -> int:
    """Rows of ``row_bytes`` one node of ``layout`` stores."""
    lpr = -(-row_bytes // mv.tx_bytes(mem))
    lpp = mv.lines_per_page(mem)
    per_page = lpp // lpr if lpr <= lpp else 1 / (-(-lpr // lpp))
    return max(1, int(layout.banks_per_unit * mv.org(mem, "rows") * per_page))


__all__ = ["LevelLayout", "build_layout", "slot_location"]
