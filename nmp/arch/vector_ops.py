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
from numba.extending import intrinsic

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

    @intrinsic
    def prefetch_row(typingctx, rows, i):  # pragma: no cover - compiled
        """Ask the CPU to bring ``rows[i]`` into its caches (``llvm.prefetch``, for reading):
        a hint, with no effect on any value."""
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
            # one per 64-byte line (LINE_LANES float32); read, keep in all levels, data
            args_ = [ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)]
            for p in vectors[:: LINE_LANES // vector_lanes(dim)]:
                builder.call(fn, [builder.bitcast(p, i8p), *args_])
            return context.get_dummy_value()

        return sig, codegen

    return add_two_rows, add_row_and_clear, prefetch_row


# Trees up to this many units get their bag-end reduction as straight-line code
# (:func:`reduce_tree_op`); a larger one keeps the loop (its code grows with the units).
MAX_TREE_UNITS = 128


def tree_fits(parent: tuple[int, ...]) -> bool:
    """Whether :func:`reduce_tree_op` takes the tree ``parent``: 1 to :data:`MAX_TREE_UNITS`
    units, each parent's id below its children's (-1: a root), the order the loop assumes."""
    return 0 < len(parent) <= MAX_TREE_UNITS and all(-1 <= p < k for k, p in enumerate(parent))


@functools.lru_cache(maxsize=32)
def reduce_tree_op(dim: int, parent: tuple[int, ...]):
    """``reduce_tree(out, b, acc)`` for rows of ``dim`` elements and the unit tree ``parent``
    (ids decrease up the tree; -1: a root): what the gather kernels' loop at the end of a bag
    does, ``for k = n-1 .. 0: (out[b] if parent[k] < 0 else acc[parent[k]]) += acc[k]; acc[k]
    = 0``, with the same additions in the same order, so the same bits.

    The loop adds a unit's partial sum into its parent's once the unit's own children (higher
    ids) are in it, so each parent takes its children's final sums in descending id order, and
    ``out[b]`` the roots' in descending order. Done vector by vector (each element's sum is
    independent of the others), every partial sum is loaded once, carried up the tree in a
    register and cleared; the loop loaded and stored each parent's row once per child, a chain
    of stores and loads of the same row. On the batch of ``benchmarks/arch.py --gather-only``
    (2-core AMD EPYC, Zen 3, AVX2; 18 units in 3 levels), with the kernel compiled per
    tracking mode (:func:`nmp.arch.functional._make_gather_tree_rows`), against the kernel
    before (``benchmarks/gather_ab.py``, 5 runs of 16 rounds, thread CPU time): paired
    medians 1.02-1.09x (median 1.07x), best times 0.83-1.11x."""
    if not tree_fits(parent):
        raise ValueError(f"a tree of 1 to {MAX_TREE_UNITS} units, parents before children")
    n = len(parent)
    children = [[c for c in range(n - 1, k, -1) if parent[c] == k] for k in range(n)]
    roots = [k for k in range(n - 1, -1, -1) if parent[k] < 0]
    lanes = vector_lanes(dim)

    @intrinsic
    def reduce_tree(typingctx, out, b, acc):  # pragma: no cover - compiled
        if not (_is_rows(out) and _is_rows(acc)):
            return None
        sig = types.void(out, types.int64, acc)

        def codegen(context, builder, signature, args):
            out_v, b_v, acc_v = args
            t = signature.args
            i64 = ir.IntType(64)
            zero = ir.Constant(ir.VectorType(ir.FloatType(), lanes), [0.0] * lanes)
            units = [
                _row_vectors(context, builder, acc_v, t[2], ir.Constant(i64, k), dim)
                for k in range(n)
            ]
            to = _row_vectors(context, builder, out_v, t[0], b_v, dim)

            def final(k: int, v: int):
                """unit k's sum of vector v once its children's are in it; its row cleared"""
                x = builder.load(units[k][v], align=4)
                for c in children[k]:
                    x = builder.fadd(x, final(c, v))
                builder.store(zero, units[k][v], align=4)
                return x

            for v in range(dim // lanes):
                o = builder.load(to[v], align=4)
                for r in roots:
                    o = builder.fadd(o, final(r, v))
                builder.store(o, to[v], align=4)
            return context.get_dummy_value()

        return sig, codegen

    return reduce_tree


__all__ = [
    "LANES",
    "LINE_LANES",
    "MAX_TREE_UNITS",
    "reduce_tree_op",
    "row_ops",
    "tree_fits",
    "vector_lanes",
]
