"""The parity codes a design or the trainer may name (``arch.parity.code``, ``train.code``).

One :class:`ParityCode` per code, registered in :data:`PARITY_CODES`: the arch model
(:mod:`nmp.arch.parity`) builds its in-memory byte code from it, the trainer
(:mod:`nmp.train.codes`) its stripe scheme, and both configs and the CLI check a name and its
parity count against it. No stage tests a code's name: a new code is one ``register`` call
here (its trainer scheme follows from the code object's class).

The codes (:mod:`nmp.coding`, numba kernels) are imported when a code is built, not when a
config names one: ``nmp train --help`` and a spec's validation stay light.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from nmp.registry import Registry


@dataclass(frozen=True)
class ParityCode:
    """A parity code: how to build it for ``k`` data and ``r`` parity rows, and its limits."""

    name: str
    description: str
    make: Callable[[int, int], Any]  # (k, r) -> the code (XorCode, ReedSolomonCode, ...)
    fixed_parities: int | None = None  # the r it always has (None: any r >= 1)
    default_parities: int = 1  # the r a user who names only the code gets
    in_memory: bool = True  # raw-byte arithmetic a near-memory unit applies (nmp.arch models it)
    plain_xor: bool = False  # parity ^= delta with r = 1: what the multi-process runtime applies
    # a parity unit multiplies each delta byte by a GF(2^8) coefficient before its XOR: the
    # RTL's gf datapath (nmp.rtl.parity), whose area and energy the arch model charges
    unit_multiplies: bool = False

    def parities_error(self, r: int) -> str | None:
        """Why ``r`` parities do not suit this code (None when they do)."""
        if self.fixed_parities is None or r == self.fixed_parities:
            return None
        others = ", ".join(n for n, c in PARITY_CODES.items() if c.fixed_parities is None)
        return (
            f"{self.name} parity has r = {self.fixed_parities}, got r = {r} "
            f"(codes with more parities: {others})"
        )

    def build(self, k: int, r: int) -> Any:
        """The code for stripes of ``k`` data rows and ``r`` parities."""
        return self.make(k, r)


#: Every code is registered in this module (a registry without a package: nothing to find).
PARITY_CODES: Registry[ParityCode] = Registry("parity code")


def _xor(k: int, r: int) -> Any:
    from nmp.coding.codes import XorCode

    return XorCode(k)


def _reed_solomon(k: int, r: int) -> Any:
    from nmp.coding.codes import ReedSolomonCode

    return ReedSolomonCode(k, r)


def _float_sum(k: int, r: int) -> Any:
    from nmp.coding.floatsum import FloatSumParity

    return FloatSumParity(k)


PARITY_CODES.register(
    ParityCode(
        "xor",
        "raw-bit XOR of the k rows (k + 1); exact",
        _xor,
        fixed_parities=1,
        plain_xor=True,
    )
)
PARITY_CODES.register(
    ParityCode(
        "rs",
        "Reed-Solomon over GF(2^8) (k + r), parity_i ^= g_ij * delta; exact",
        _reed_solomon,
        default_parities=2,
        unit_multiplies=True,
    )
)
PARITY_CODES.register(
    ParityCode(
        "float-sum",
        "ECRec's published float32 sum of the k rows; recovery rounds, so it drifts",
        _float_sum,
        fixed_parities=1,
        in_memory=False,
    )
)


def unit_code_for(r: int) -> ParityCode:
    """The in-memory code a near-memory unit applies for ``r`` parities: one made for exactly
    ``r`` where there is one (XOR for one parity), else the first that takes any ``r``."""
    in_memory = [c for _, c in PARITY_CODES.items() if c.in_memory]
    exact = [c for c in in_memory if c.fixed_parities == r]
    if exact:
        return exact[0]
    return next(c for c in in_memory if c.fixed_parities is None)


__all__ = ["PARITY_CODES", "ParityCode", "unit_code_for"]
