"""DRAM energy of a near-memory batch, charged by where the data moves.

Every design pays the array: activations, refresh and background (IDD formulas of
:func:`nmp.memory.command_energy_pj`, background and refresh once for the whole memory over the
batch). A column read's energy is charged up to the point of the data path where its unit sits
(``arch.dram_energy``): a bank unit pays ``bank_read_share`` of it, a bank-group unit
``bankgroup_read_share``, a rank unit (buffer chip) all of it plus the DRAM -> buffer-chip hop of
the off-chip I/O (``chip_to_buffer_io_share`` of ``io_pj_per_bit``); bytes to and from the host
pay the buffer-chip -> host hop. The host CPU pays the whole path for every byte.
"""

from __future__ import annotations

from nmp.arch import memview as mv
from nmp.arch.replay import dram_energy
from nmp.memory import command_energy_pj


def read_share(spec, level: str) -> float:
    """The part of a column read's energy a unit at ``level`` pays."""
    split = spec.dram_energy
    return {"bank": split.bank_read_share, "bankgroup": split.bankgroup_read_share}.get(level, 1.0)


def _reads(stats: list) -> float:
    return float(sum(st.cmd_counts.get("RD", 0) + st.cmd_counts.get("RDA", 0) for st in stats))


def near_memory_energy(
    arch,
    level_stats: dict[str, list],
    latency_cycles: float,
    rank_io_bytes: float,
    host_io_bytes: float,
) -> tuple[float, float, dict[str, float]]:
    """(DRAM core pJ, DRAM I/O pJ, where it went) of one batch.

    ``rank_io_bytes``: bytes between the DRAM chips and the buffer chip (rank units' reads, the
    partial sums in-DRAM units send up); ``host_io_bytes``: bytes between the buffer chip and
    the host (instructions, results)."""
    mem, spec = arch.mem, arch.spec
    every = [st for stats in level_stats.values() for st in stats]
    e = dram_energy(mem, every, latency_cycles)
    rd_pj = command_energy_pj(mem, {"RD": 1}, 0.0)["rd"]
    saved = sum(
        (1.0 - read_share(spec, lv)) * _reads(stats) * rd_pj for lv, stats in level_stats.items()
    )
    read_path = e.get("rd", 0.0) - saved
    array = sum(v for k, v in e.items() if k not in ("io", "rd"))
    io_bit = mv.io_pj_per_bit(mem)
    hop = spec.dram_energy.chip_to_buffer_io_share
    io = (rank_io_bytes * hop + host_io_bytes * (1.0 - hop)) * 8 * io_bit
    where = {
        "array_pj": array,
        "read_path_pj": read_path,
        "read_path_saved_pj": saved,
        "io_pj": io,
    }
    return array + read_path, io, where


__all__ = ["near_memory_energy", "read_share"]
