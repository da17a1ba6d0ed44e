"""Cycle-by-cycle PyRTL simulation of the parity unit under an :class:`UpdateStream`.

The driver is the one the exported testbench uses: each cycle it offers the current stream
entry; a valid entry is consumed when ``in_ready`` is high, a bubble is consumed at once. The
run lasts :func:`run_cycles` cycles (clear sweep + stream + pipeline drain), then the parity
words of every touched address are read back through the debug port.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyrtl

from nmp.rtl.parity import ParityUnitConfig, build_unit
from nmp.rtl.stream import UpdateStream, word_to_int

OUTPUTS = ("in_ready", "wr_en", "wr_addr", "wr_data")


def run_cycles(cfg: ParityUnitConfig, stream: UpdateStream) -> int:
    """Cycles the driver runs: the clear sweep, one per entry, the latency, and 2 spare."""
    clear = cfg.depth if cfg.clear_on_reset else 0
    return clear + len(stream) + cfg.latency_cycles + 2


def entry_inputs(cfg: ParityUnitConfig, stream: UpdateStream, idx: int) -> dict[str, int]:
    """Input values offering entry ``idx`` (an idle input past the end of the stream)."""
    live = idx < len(stream)
    vals = {
        "in_valid": int(stream.valid[idx]) if live else 0,
        "in_addr": int(stream.addr[idx]) if live else 0,
        "dbg_addr": 0,
    }
    old = word_to_int(stream.old[idx]) if live else 0
    new = word_to_int(stream.new[idx]) if live else 0
    mode = cfg.front_end
    vals.update(zip(mode.data_ports, mode.port_values(old, new), strict=True))
    if cfg.gf:
        vals["in_coef"] = int(stream.coef[idx]) if live else 0
    return vals


@dataclass(frozen=True)
class SimResult:
    outputs: list[tuple[int, ...]]  # per cycle: in_ready, wr_en, wr_addr, wr_data
    readback: dict[int, int]  # touched address -> parity word after the stream
    cycles: int

    def update_writes(self, cfg: ParityUnitConfig) -> list[tuple[int, bytes]]:
        """The write-backs of updates (the clear sweep's writes dropped), in order."""
        skip = cfg.depth if cfg.clear_on_reset else 0
        writes = [(a, d) for _, en, a, d in self.outputs if en][skip:]
        return [(a, d.to_bytes(cfg.width // 8, "little")) for a, d in writes]


def simulate(cfg: ParityUnitConfig, stream: UpdateStream, *, fast: bool = True) -> SimResult:
    """Run the PyRTL model of ``build_unit(cfg)`` under ``stream``."""
    block = build_unit(cfg)
    sim_cls = pyrtl.FastSimulation if fast else pyrtl.Simulation
    sim = sim_cls(block=block, tracer=None)
    outputs = []
    idx = 0
    total = run_cycles(cfg, stream)
    for _ in range(total):
        vals = entry_inputs(cfg, stream, idx)
        sim.step(vals)
        row = tuple(int(sim.inspect(name)) for name in OUTPUTS)
        outputs.append(row)
        if idx < len(stream) and (not vals["in_valid"] or row[0]):
            idx += 1
    readback = {}
    for a in sorted(stream.final_parity):
        vals = entry_inputs(cfg, stream, len(stream))
        vals["dbg_addr"] = a
        sim.step(vals)
        readback[a] = int(sim.inspect("dbg_data"))
    return SimResult(outputs, readback, total)
