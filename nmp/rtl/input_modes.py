"""What a parity unit takes in (``ParityUnitConfig.input_mode``): registered front ends.

A front end names the unit's data ports, says what a stream entry drives on them, and builds
the PyRTL between those ports and the parity pipeline (:func:`nmp.rtl.parity.parity_core`,
which takes ``(valid, addr, delta, coef)``). The builders, the simulator's stimulus and the
exported testbench ask the mode; none of them tests its name. A new front end (say, one that
reads the old word itself) is one more :class:`InputMode` registered here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nmp.registry import Registry

if TYPE_CHECKING:
    import pyrtl

# (in_ready, valid, addr, delta, coef): the unit's ready output and the core's inputs
FrontWires = tuple[Any, Any, Any, Any, Any]


@dataclass(frozen=True)
class InputMode:
    """One front end of the parity unit."""

    name: str
    description: str
    data_ports: tuple[str, ...]  # the unit's data inputs (``in_*``, a word each), in port order
    name_suffix: str  # in the Verilog module's name
    extra_cycles: int  # cycles in front of the core: added to the unit's latency
    # (old word, new word) of a stream entry -> the value of each data port
    port_values: Callable[[int, int], tuple[int, ...]]
    # (the unit's inputs by name, the core's in_ready) -> FrontWires
    front: Callable[[dict[str, Any], Any], FrontWires]


INPUT_MODES: Registry[InputMode] = Registry("parity unit input")


def delta_unit(
    valid: pyrtl.WireVector,
    addr: pyrtl.WireVector,
    old: pyrtl.WireVector,
    new: pyrtl.WireVector,
    ready: pyrtl.WireVector,
) -> tuple[pyrtl.WireVector, pyrtl.WireVector, pyrtl.WireVector, pyrtl.WireVector]:
    """Data-side delta unit: ``delta = old XOR new``, registered (latency 1 cycle).

    Returns ``(in_ready, out_valid, out_addr, out_delta)``. A one-entry pipeline buffer: it
    takes an input when it is empty or the downstream ``ready`` is high (``in_ready``), and
    holds its output otherwise.
    """
    # pyrtl: loaded on use (`nmp rtl --help` lists the modes without it)
    import pyrtl

    out_valid = pyrtl.Register(1, name="du_valid")
    out_addr = pyrtl.Register(len(addr), name="du_addr")
    out_delta = pyrtl.Register(len(old), name="du_delta")
    take = ready | ~out_valid
    out_valid.next <<= pyrtl.select(take, valid, out_valid)
    out_addr.next <<= pyrtl.select(take, addr, out_addr)
    out_delta.next <<= pyrtl.select(take, old ^ new, out_delta)
    return take, out_valid, out_addr, out_delta


def direct_front(ins: dict[str, Any], core_ready: pyrtl.WireVector) -> FrontWires:
    """The core's inputs straight from the unit's: the delta comes in computed."""
    return core_ready, ins["in_valid"], ins["in_addr"], ins["in_delta"], ins.get("in_coef")


def delta_unit_front(ins: dict[str, Any], core_ready: pyrtl.WireVector) -> FrontWires:
    """The old and new words through the data-side delta unit, which then also delays the
    GF coefficient one cycle."""
    import pyrtl  # (loaded on use)

    in_ready, valid, addr, delta = delta_unit(
        ins["in_valid"], ins["in_addr"], ins["in_old"], ins["in_new"], core_ready
    )
    coef = ins.get("in_coef")
    if coef is not None:
        coef_reg = pyrtl.Register(8, name="du_coef")
        coef_reg.next <<= pyrtl.select(in_ready, coef, coef_reg)
        coef = coef_reg
    return in_ready, valid, addr, delta, coef


INPUT_MODES.register(
    InputMode(
        name="delta",
        description="(addr, delta): the data side sends old XOR new",
        data_ports=("in_delta",),
        name_suffix="",
        extra_cycles=0,
        port_values=lambda old, new: (old ^ new,),
        front=direct_front,
    )
)
INPUT_MODES.register(
    InputMode(
        name="old_new",
        description="(addr, old, new) through the data-side delta unit (one more cycle)",
        data_ports=("in_old", "in_new"),
        name_suffix="_oldnew",
        extra_cycles=1,
        port_values=lambda old, new: (old, new),
        front=delta_unit_front,
    )
)
