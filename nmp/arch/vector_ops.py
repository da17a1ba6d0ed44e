"""Whole-row float32 operations for the gather kernels, written as explicit vector loads, adds
and stores (LLVM IR through numba intrinsics).

numba cannot tell LLVM that an accumulator row and the rows added into it never overlap, so
its loop over a row's elements gets a run-time overlap check and a scalar fallback on every
lookup; here the row is loaded, added and stored as whole vectors, which is what the compiled
loop did when the check passed. Each element gets the same additions in the same order as the
scalar code, so results are the same bit for bit. Rows are ``dim`` elements of C-contiguous
``float32 [rows, dim]`` arrays, ``dim`` a multiple of :data:`LANES`.

A vector is one 64-byte cache line (16 lanes) where ``dim`` allows, else 8 lanes: LLVM lowers
a 16-lane operation to one 512-bit instruction on a CPU with AVX-512 and to two 256-bit ones on
an AVX2 CPU (AMD EPYC up to Zen 3), from the same IR, so neither needs code of its own. With
8-lane vectors an AVX-512 CPU ran the same 256-bit code as an AVX2 one while
``torch.nn.EmbeddingBag`` used its 512-bit kernels there. 16 lanes took the kernel on the
batch of ``benchmarks/arch.py --gather-only`` from 22.9 to 20.3 ms (AVX2 code: 22.7 to 21.9 ms;
thread CPU time, best of 13 per table, summed; 2-core Xeon with AVX-512).
"""

from __future__ import annotations

import functools

from llvmlite import ir
from numba import types
from numba.extending import intrinsic, models, register_model

LANES = 8  # float32 lanes of the narrowest vector (256 bits): widths are multiples of it
LINE_LANES = 16  # float32 lanes of one 64-byte cache line, the widest vector used


def vector_lanes(dim: int) -> int:
    """Lanes of the vectors a row of ``dim`` elements is split into."""
    return LINE_LANES if dim % LINE_LANES == 0 else LANES


def _is_rows(ty) -> bool:
    return (
        isinstance(ty, types.Array)
        and ty.ndim == 2
        and ty.layout == "C"
        and ty.dtype == types.float32
    )


def _row_vectors(context, builder, array, array_type, row, dim: int) -> list:
    """Pointers to the vectors (:func:`vector_lanes` wide) of ``array[row]``."""
    lanes = vector_lanes(dim)
    vec = ir.VectorType(ir.FloatType(), lanes)
    i64 = ir.IntType(64)
    data = context.make_array(array_type)(context, builder, array).data
    first = builder.mul(row, ir.Constant(i64, dim))
    return [
        builder.bitcast(
            builder.gep(data, [builder.add(first, ir.Constant(i64, k * lanes))]),
            vec.as_pointer(),
        )
        for k in range(dim // lanes)
    ]


@functools.lru_cache(maxsize=16)
def row_ops(dim: int) -> tuple:
    """``(add_two_rows, add_row_and_clear, prefetch_row)`` for rows of ``dim`` elements:

    * ``add_two_rows(acc, i, a, ia, b, ib)``: ``acc[i] = (acc[i] + a[ia]) + b[ib]``;
    * ``add_row_and_clear(dst, i, src, k)``: ``dst[i] = dst[i] + src[k]``, then ``src[k] = 0``;
    * ``prefetch_row(rows, i)``: a hint to load ``rows[i]`` into the caches.
    """
    if dim <= 0 or dim % LANES:
        raise ValueError(f"row_ops needs a positive multiple of {LANES} elements, got {dim}")

    @intrinsic
    def add_two_rows(typingctx, acc, i, a, ia, b, ib):  # pragma: no cover - compiled
        if not all(_is_rows(t) for t in (acc, a, b)):
            return None
        sig = types.void(acc, types.int64, a, types.int64, b, types.int64)

        def codegen(context, builder, signature, args):
            acc_v, i_v, a_v, ia_v, b_v, ib_v = args
            t = signature.args
            to = _row_vectors(context, builder, acc_v, t[0], i_v, dim)
            from_a = _row_vectors(context, builder, a_v, t[2], ia_v, dim)
            from_b = _row_vectors(context, builder, b_v, t[4], ib_v, dim)
            for p, pa, pb in zip(to, from_a, from_b, strict=True):
                x = builder.fadd(builder.load(p, align=4), builder.load(pa, align=4))
                builder.store(builder.fadd(x, builder.load(pb, align=4)), p, align=4)
            return context.get_dummy_value()

        return sig, codegen

    @intrinsic
    def add_row_and_clear(typingctx, dst, i, src, k):  # pragma: no cover - compiled
        if not (_is_rows(dst) and _is_rows(src)):
            return None
        sig = types.void(dst, types.int64, src, types.int64)

        def codegen(context, builder, signature, args):
            dst_v, i_v, src_v, k_v = args
            t = signature.args
            lanes = vector_lanes(dim)
            zero = ir.Constant(ir.VectorType(ir.FloatType(), lanes), [0.0] * lanes)
            to = _row_vectors(context, builder, dst_v, t[0], i_v, dim)
            from_ = _row_vectors(context, builder, src_v, t[2], k_v, dim)
            for p, ps in zip(to, from_, strict=True):
                builder.store(
                    builder.fadd(builder.load(p, align=4), builder.load(ps, align=4)), p, align=4
                )
                builder.store(zero, ps, align=4)
            return context.get_dummy_value()

        return sig, codegen

    prefetch_row = prefetch_op(dim, 3)

    return add_two_rows, add_row_and_clear, prefetch_row


@functools.lru_cache(maxsize=32)
def prefetch_op(dim: int, locality: int):
    """``prefetch_row(rows, i)``: ask the CPU to bring ``rows[i]`` of a ``dim``-wide array into
    its caches (``llvm.prefetch`` for reading, one per 64-byte line): locality 3 into every
    level (x86 ``prefetcht0``), 2 into L2 and below (``prefetcht1``). A hint, with no effect on
    any value."""
    if dim <= 0 or dim % LANES:
        raise ValueError(f"prefetch_op needs a positive multiple of {LANES} elements, got {dim}")

    @intrinsic
    def prefetch_row(typingctx, rows, i):  # pragma: no cover - compiled
        if not _is_rows(rows):
            return None
        sig = types.void(rows, types.int64)

        def codegen(context, builder, signature, args):
            rows_v, i_v = args
            i8p = ir.IntType(8).as_pointer()
            i32 = ir.IntType(32)
            fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
            fn = builder.module.declare_intrinsic("llvm.prefetch", [i8p], fnty)
            vectors = _row_vectors(context, builder, rows_v, signature.args[0], i_v, dim)
            # one per 64-byte line (LINE_LANES float32); read, the locality asked, data
            args_ = [ir.Constant(i32, 0), ir.Constant(i32, locality), ir.Constant(i32, 1)]
            for p in vectors[:: LINE_LANES // vector_lanes(dim)]:
                builder.call(fn, [builder.bitcast(p, i8p), *args_])
            return context.get_dummy_value()

        return sig, codegen

    return prefetch_row


class RowRegister(types.Type):
    """A whole row of ``dim`` float32 held as one LLVM vector value (``<dim x float>``): a
    kernel variable of this type lives in vector registers (8 ymm or 4 zmm at dim 64), not in
    memory, across the iterations of a loop."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        super().__init__(name=f"RowRegister({dim})")


@register_model(RowRegister)
class _RowRegisterModel(models.PrimitiveModel):
    def __init__(self, dmm, fe_type) -> None:
        super().__init__(dmm, fe_type, ir.VectorType(ir.FloatType(), fe_type.dim))


# Widest row kept in registers: 64 float32 are 8 ymm registers of AVX2's 16 (the basis rows
# being added take others); a wider one would spill on a CPU without AVX-512.
REGISTER_DIMS = (16, 32, 64)


def _row_pointer(context, builder, array, array_type, row, dim: int):
    """``array[row]`` as a pointer to ``<dim x float>``."""
    i64 = ir.IntType(64)
    data = context.make_array(array_type)(context, builder, array).data
    first = builder.gep(data, [builder.mul(row, ir.Constant(i64, dim))])
    return builder.bitcast(first, ir.VectorType(ir.FloatType(), dim).as_pointer())


@functools.lru_cache(maxsize=16)
def register_ops(dim: int) -> tuple:
    """``(zero_row, add_two_to_register, add_row_to_register, load_row, store_row)`` for a
    :class:`RowRegister` of ``dim`` elements (one of :data:`REGISTER_DIMS`):

    * ``zero_row()``: a register of +0.0;
    * ``add_two_to_register(reg, a, ia, b, ib)``: ``(reg + a[ia]) + b[ib]``, element-wise;
    * ``add_row_to_register(reg, src, k)``: ``reg + src[k]``;
    * ``load_row(src, k)``, ``store_row(dst, i, reg)``: ``src[k]``, ``dst[i] = reg``.

    Element-wise IEEE float32 additions (no fast-math flags), so a sum formed here has the
    bits of the same additions made element by element in memory."""
    if dim not in REGISTER_DIMS:
        raise ValueError(f"register_ops supports widths {REGISTER_DIMS}, got {dim}")
    reg = RowRegister(dim)

    @intrinsic
    def zero_row(typingctx):  # pragma: no cover - compiled
        def codegen(context, builder, signature, args):
            return ir.Constant(ir.VectorType(ir.FloatType(), dim), [0.0] * dim)

        return reg(), codegen

    @intrinsic
    def add_two_to_register(typingctx, r, a, ia, b, ib):  # pragma: no cover - compiled
        if r != reg or not (_is_rows(a) and _is_rows(b)):
            return None
        sig = reg(reg, a, types.int64, b, types.int64)

        def codegen(context, builder, signature, args):
            r_v, a_v, ia_v, b_v, ib_v = args
            t = signature.args
            va = builder.load(_row_pointer(context, builder, a_v, t[1], ia_v, dim), align=4)
            vb = builder.load(_row_pointer(context, builder, b_v, t[3], ib_v, dim), align=4)
            return builder.fadd(builder.fadd(r_v, va), vb)

        return sig, codegen

    @intrinsic
    def add_row_to_register(typingctx, r, src, k):  # pragma: no cover - compiled
        if r != reg or not _is_rows(src):
            return None
        sig = reg(reg, src, types.int64)

        def codegen(context, builder, signature, args):
            r_v, s_v, k_v = args
            p = _row_pointer(context, builder, s_v, signature.args[1], k_v, dim)
            return builder.fadd(r_v, builder.load(p, align=4))

        return sig, codegen

    @intrinsic
    def load_row(typingctx, src, k):  # pragma: no cover - compiled
        if not _is_rows(src):
            return None
        sig = reg(src, types.int64)

        def codegen(context, builder, signature, args):
            s_v, k_v = args
            p = _row_pointer(context, builder, s_v, signature.args[0], k_v, dim)
            return builder.load(p, align=4)

        return sig, codegen

    @intrinsic
    def store_row(typingctx, dst, i, r):  # pragma: no cover - compiled
        if r != reg or not _is_rows(dst):
            return None
        sig = types.void(dst, types.int64, reg)

        def codegen(context, builder, signature, args):
            d_v, i_v, r_v = args
            p = _row_pointer(context, builder, d_v, signature.args[0], i_v, dim)
            builder.store(r_v, p, align=4)
            return context.get_dummy_value()

        return sig, codegen

    return zero_row, add_two_to_register, add_row_to_register, load_row, store_row


__all__ = [
    "LANES",
    "LINE_LANES",
    "REGISTER_DIMS",
    "RowRegister",
    "register_ops",
    "row_ops",
    "vector_lanes",
]
