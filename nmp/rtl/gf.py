"""GF(2^8) arithmetic as PyRTL logic (polynomial 0x11d, as :mod:`nmp.coding.gf256`).

All builders here are purely combinational (latency 0 cycles): XOR/AND networks, no registers.
"""

from __future__ import annotations

import pyrtl

from nmp.coding.gf256 import MUL, POLY


def xor_tree(terms: list[pyrtl.WireVector]) -> pyrtl.WireVector:
    """XOR of ``terms`` as a balanced tree (depth ceil(log2 n)); latency 0."""
    if not terms:
        raise pyrtl.PyrtlError("xor_tree needs at least one term")
    while len(terms) > 1:
        pairs = [terms[i] ^ terms[i + 1] for i in range(0, len(terms) - 1, 2)]
        terms = pairs + ([terms[-1]] if len(terms) % 2 else [])
    return terms[0]


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


def gf_times_power_of_two(x: pyrtl.WireVector, b: int) -> pyrtl.WireVector:
    """``x * 2^b`` as a flat linear map: output bit k is the XOR of the input bits j whose
    ``2^j * 2^b`` has bit k set (a tree of depth <= 3 instead of a chain of b xtimes)."""
    bits = []
    for k in range(8):
        inputs = [x[j] for j in range(8) if (MUL[1 << j, 1 << b] >> k) & 1]
        bits.append(xor_tree(inputs) if inputs else pyrtl.Const(0, 1))
    return pyrtl.concat_list(bits)


def gf_mul_lane(x: pyrtl.WireVector, c: pyrtl.WireVector) -> pyrtl.WireVector:
    """``c * x`` for one byte lane: XOR over the bits b of ``c`` of ``x * 2^b`` gated by c[b].

    Flat form (Mastrovito style): the 8 products ``x * 2^b`` are XOR trees of depth <= 3 over
    the input bits, then AND gating and an 8-input XOR tree (depth 3): about 7 gate levels
    against 11 for a chain of doublings. Latency 0.
    """
    if len(x) != 8 or len(c) != 8:
        raise pyrtl.PyrtlError("gf_mul_lane needs 8-bit operands")
    gated = [gf_times_power_of_two(x, b) & c[b].sign_extended(8) for b in range(8)]
    return xor_tree(gated)


def gf_scale_word(word: pyrtl.WireVector, coef: pyrtl.WireVector) -> pyrtl.WireVector:
    """Multiply every byte lane of ``word`` by the 8-bit ``coef`` (byte lane b = bits 8b..8b+7).

    ``len(word) / 8`` independent :func:`gf_mul_lane` copies; latency 0.
    """
    if len(word) % 8:
        raise pyrtl.PyrtlError("gf_scale_word needs a whole number of bytes")
    lanes = [gf_mul_lane(word[8 * b : 8 * b + 8], coef) for b in range(len(word) // 8)]
    return pyrtl.concat_list(lanes)
