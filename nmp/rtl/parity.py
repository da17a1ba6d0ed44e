"""The memory-side parity-update datapath in PyRTL (rtllib style: small explicit builders).

A parity unit sits beside the parity memory (an SRAM macro with one synchronous read port and one
write port). Each cycle it may accept one update ``(addr, delta[, coef])``; it reads the parity
word, XORs the (GF-scaled) delta in, and writes it back:

    stage 1   register the update; present ``rd_addr``; GF variant: scale the delta
    stage 2   the SRAM returns the word (synchronous read, 1 cycle)
    ...       (``stages > 2``: the update and the read word travel on; models a slower SRAM
               or leaves room to retime)
    stage P   forward, XOR, write back (``wr_en``, ``wr_addr``, ``wr_data``)

Throughput is one update per cycle. An update reads the SRAM P - 1 cycles before it writes, so
the last P - 1 writes may be missing from its word; a history of those writes (addr, data) is
compared against its address and the newest match replaces the SRAM word (forwarding), so
back-to-back updates to one address are exact. After reset the unit clears the parity memory
(``depth`` cycles with ``in_ready`` low) so that parity starts as the encode of all-zero data.

Latency from acceptance to write-back: ``stages`` cycles (+1 with the data-side delta unit in
front, ``input_mode="old_new"``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pyrtl

from nmp.errors import SpecError
from nmp.rtl.gf import gf_scale_word
from nmp.rtl.input_modes import INPUT_MODES, InputMode


@dataclass(frozen=True)
class ParityUnitConfig:
    """Parameters of one parity unit (hardware, not model, parameters)."""

    width: int = 64  # parity word width in bits (64..512, whole bytes)
    depth: int = 1024  # parity memory words
    stages: int = 2  # cycles from acceptance to write-back (>= 2: read, then write)
    gf: bool = False  # GF(2^8) variant: scale each byte lane of the delta by in_coef
    input_mode: str = "delta"  # a registered front end (nmp.rtl.input_modes): delta, old_new
    clear_on_reset: bool = True  # sweep the parity memory to zero after reset

    def __post_init__(self) -> None:
        if not 64 <= self.width <= 512 or self.width % 8:
            raise SpecError("word width must be a multiple of 8 in 64..512", key="width")
        if not 2 <= self.depth <= 1 << 20:
            raise SpecError("parity memory depth must be in 2..2^20 words", key="depth")
        if not 2 <= self.stages <= 8:
            raise SpecError("pipeline depth must be in 2..8 stages", key="stages")
        if self.input_mode not in INPUT_MODES.names():
            known = ", ".join(INPUT_MODES.names())
            raise SpecError(f"input mode must be one of {known}", key="input_mode")

    @property
    def front_end(self) -> InputMode:
        """The registered front end of ``input_mode``."""
        return INPUT_MODES.get(self.input_mode)

    @property
    def addr_bits(self) -> int:
        return max(1, math.ceil(math.log2(self.depth)))

    @property
    def latency_cycles(self) -> int:
        """Cycles from an accepted input to its write-back."""
        return self.stages + self.front_end.extra_cycles

    @property
    def name(self) -> str:
        """A legal Verilog identifier naming this configuration."""
        kind = "gf" if self.gf else "xor"
        mode = self.front_end.name_suffix
        return f"nmp_parity_{kind}{mode}_w{self.width}_d{self.depth}_s{self.stages}"


def clear_sweep(depth: int, addr_bits: int) -> tuple[pyrtl.WireVector, pyrtl.WireVector]:
    """Zero the parity memory after reset: one word per cycle for ``depth`` cycles.

    Returns ``(clearing, clear_addr)``; ``clearing`` is high from reset until the last word.
    """
    clearing = pyrtl.Register(1, name="clearing", reset_value=1)
    clear_addr = pyrtl.Register(addr_bits, name="clear_addr")
    last = clear_addr == depth - 1
    clearing.next <<= clearing & ~last
    clear_addr.next <<= pyrtl.select(clearing & ~last, clear_addr + 1, clear_addr)[:addr_bits]
    return clearing, clear_addr


def forward_select(
    addr: pyrtl.WireVector,
    sram_word: pyrtl.WireVector,
    history: list[tuple[pyrtl.WireVector, pyrtl.WireVector, pyrtl.WireVector]],
) -> pyrtl.WireVector:
    """The current parity word for ``addr``: the newest write in ``history`` (newest first,
    entries ``(en, addr, data)``) to that address, else the SRAM word. Combinational, latency 0;
    a priority mux chain of ``len(history)`` address comparators."""
    word = sram_word
    for en, h_addr, h_data in reversed(history):  # oldest first, so the newest wins
        word = pyrtl.select(en & (h_addr == addr), h_data, word)
    return word


def pipeline_regs(prefix: str, **signals: pyrtl.WireVector) -> dict[str, pyrtl.Register]:
    """One pipeline stage: a register per named signal, each loaded every cycle (latency 1)."""
    regs = {}
    for name, sig in signals.items():
        reg = pyrtl.Register(len(sig), name=f"{prefix}_{name}")
        reg.next <<= sig
        regs[name] = reg
    return regs


def parity_core(
    cfg: ParityUnitConfig,
    in_valid: pyrtl.WireVector,
    in_addr: pyrtl.WireVector,
    in_delta: pyrtl.WireVector,
    in_coef: pyrtl.WireVector | None,
    rd_data: pyrtl.WireVector,
) -> dict[str, pyrtl.WireVector]:
    """The parity-update pipeline without its memory (see the module docstring).

    ``rd_data`` must be the SRAM word at the ``rd_addr`` of the previous cycle (synchronous
    read, read-before-write). Returns the wires ``in_ready``, ``rd_en``, ``rd_addr``, ``wr_en``,
    ``wr_addr``, ``wr_data``. Latency ``cfg.stages`` cycles, one update per cycle.
    """
    clearing, clear_addr = (
        clear_sweep(cfg.depth, cfg.addr_bits)
        if cfg.clear_on_reset
        else (pyrtl.Const(0, 1), pyrtl.Const(0, cfg.addr_bits))
    )
    in_ready = ~clearing
    accept = in_valid & in_ready

    s1 = pipeline_regs("s1", valid=accept, addr=in_addr, delta=in_delta)
    if cfg.gf:
        s1["coef"] = pipeline_regs("s1", coef=in_coef)["coef"]
        scaled = gf_scale_word(s1["delta"], s1["coef"])
    else:
        scaled = s1["delta"]

    # Stages 2..P: the update travels on; the SRAM word joins at stage 2.
    stage = pipeline_regs("s2", valid=s1["valid"], addr=s1["addr"], delta=scaled)
    word = rd_data
    for p in range(3, cfg.stages + 1):
        stage = pipeline_regs(
            f"s{p}", valid=stage["valid"], addr=stage["addr"], delta=stage["delta"], word=word
        )
        word = stage["word"]

    # Write history: the writes of the last P - 1 cycles, newest first.
    wr_en = pyrtl.WireVector(1, name="wr_en_int")
    wr_addr = pyrtl.WireVector(cfg.addr_bits, name="wr_addr_int")
    wr_data = pyrtl.WireVector(cfg.width, name="wr_data_int")
    history = []
    prev = (wr_en, wr_addr, wr_data)
    for h in range(1, cfg.stages):
        regs = pipeline_regs(f"h{h}", en=prev[0], addr=prev[1], data=prev[2])
        prev = (regs["en"], regs["addr"], regs["data"])
        history.append(prev)

    current = forward_select(stage["addr"], word, history)
    updated = current ^ stage["delta"]
    wr_en <<= stage["valid"] | clearing
    wr_addr <<= pyrtl.select(clearing, clear_addr, stage["addr"])
    wr_data <<= pyrtl.select(clearing, pyrtl.Const(0, cfg.width), updated)
    return {
        "in_ready": in_ready,
        "rd_en": s1["valid"],
        "rd_addr": s1["addr"],
        "wr_en": wr_en,
        "wr_addr": wr_addr,
        "wr_data": wr_data,
    }


def _inputs(cfg: ParityUnitConfig) -> dict[str, pyrtl.Input]:
    ins = {"in_valid": pyrtl.Input(1, "in_valid"), "in_addr": pyrtl.Input(cfg.addr_bits, "in_addr")}
    for port in cfg.front_end.data_ports:
        ins[port] = pyrtl.Input(cfg.width, port)
    if cfg.gf:
        ins["in_coef"] = pyrtl.Input(8, "in_coef")
    return ins


def _connect(cfg: ParityUnitConfig, ins: dict, rd_data: pyrtl.WireVector) -> dict:
    core_ready = pyrtl.WireVector(1, name="core_ready")
    in_ready, valid, addr, delta, coef = cfg.front_end.front(ins, core_ready)
    ports = parity_core(cfg, valid, addr, delta, coef, rd_data)
    core_ready <<= ports["in_ready"]
    return {**ports, "in_ready": in_ready}


def build_datapath(cfg: ParityUnitConfig) -> pyrtl.Block:
    """The unit without its parity memory, which stays outside as SRAM ports (``rd_addr``,
    ``rd_en``, ``rd_data`` in, ``wr_*`` out): what synthesis and timing analysis measure."""
    block = pyrtl.Block()
    with pyrtl.set_working_block(block, no_sanity_check=True):
        ins = _inputs(cfg)
        rd_data = pyrtl.Input(cfg.width, "rd_data")
        ports = _connect(cfg, ins, rd_data)
        for name in ("in_ready", "rd_en", "rd_addr", "wr_en", "wr_addr", "wr_data"):
            out = pyrtl.Output(len(ports[name]), name)
            out <<= ports[name]
    return block


def build_unit(cfg: ParityUnitConfig) -> pyrtl.Block:
    """The unit with its parity memory (``parity_mem``, synchronous read modeled by the
    ``rd_q`` register) and a debug read port (``dbg_addr`` -> ``dbg_data``, combinational) to
    read parity back: what simulation and Verilog export use."""
    block = pyrtl.Block()
    with pyrtl.set_working_block(block, no_sanity_check=True):
        ins = _inputs(cfg)
        dbg_addr = pyrtl.Input(cfg.addr_bits, "dbg_addr")
        mem = pyrtl.MemBlock(cfg.width, cfg.addr_bits, name="parity_mem", max_read_ports=2)
        rd_q = pyrtl.Register(cfg.width, name="rd_q")
        ports = _connect(cfg, ins, rd_q)
        rd_q.next <<= mem[ports["rd_addr"]]
        mem[ports["wr_addr"]] <<= pyrtl.MemBlock.EnabledWrite(ports["wr_data"], ports["wr_en"])
        for name in ("in_ready", "wr_en", "wr_addr", "wr_data"):
            out = pyrtl.Output(len(ports[name]), name)
            out <<= ports[name]
        dbg = pyrtl.Output(cfg.width, "dbg_data")
        dbg <<= mem[dbg_addr]
    return block
