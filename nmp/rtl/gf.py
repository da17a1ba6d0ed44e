"""GF(2^8) arithmetic as PyRTL logic (polynomial 0x11d, as :mod:`nmp.coding.gf256`).

All builders here are purely combinational (latency 0 cycles): XOR/AND networks, no registers.
"""

from __future__ import annotations

import pyrtl

from nmp.coding.gf256 import POLY


def gf_xtime(x: pyrtl.WireVector) -> pyrtl.WireVector:
    """``x * 2`` in GF(2^8): shift left, and XOR the reduction 0x1d where bit 7 fell out.

    Wiring plus three 2-input XORs; latency 0.
    """
    if len(x) != 8:
        raise pyrtl.PyrtlError("gf_xtime needs an 8-bit lane")
    msb = x[7]
    bits = []
    for b in range(8):
        shifted = x[b - 1] if b > 0 else pyrtl.Const(0, 1)
        bits.append(shifted ^ msb if (POLY >> b) & 1 else shifted)
    return pyrtl.concat_list(bits)


def gf_mul_lane(x: pyrtl.WireVector, c: pyrtl.WireVector) -> pyrtl.WireVector:
    """``c * x`` for one byte lane: XOR of the doublings ``x * 2^b`` gated by bit ``b`` of ``c``.

    7 xtime stages (21 XORs), 8 AND8 gates and an 8-input XOR tree; latency 0.
    """
    terms = [x]
    for _ in range(7):
        terms.append(gf_xtime(terms[-1]))
    gated = [terms[b] & c[b].sign_extended(8) for b in range(8)]
    while len(gated) > 1:  # balanced XOR tree: depth 3
        gated = [gated[i] ^ gated[i + 1] for i in range(0, len(gated), 2)]
    return gated[0]


def gf_scale_word(word: pyrtl.WireVector, coef: pyrtl.WireVector) -> pyrtl.WireVector:
    """Multiply every byte lane of ``word`` by the 8-bit ``coef`` (byte lane b = bits 8b..8b+7).

    ``len(word) / 8`` independent :func:`gf_mul_lane` copies; latency 0.
    """
    if len(word) % 8:
        raise pyrtl.PyrtlError("gf_scale_word needs a whole number of bytes")
    lanes = [gf_mul_lane(word[8 * b : 8 * b + 8], coef) for b in range(len(word) // 8)]
    return pyrtl.concat_list(lanes)
