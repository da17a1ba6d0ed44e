"""The arithmetic the units perform: gather rows, multiply-accumulate into partial sums, and
reduce partial sums up the tree (bank/bank-group unit -> rank unit -> host).

A *segment* is one partial sum: the rows of one bag (sample) of one table that one unit holds.
Each unit accumulates its segments in its SRAM buffer; each parent adds the partial sums of its
children. The kernels are compiled (numba); the Python side loops over tables only.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from nmp.arch.rowdata import BASIS_A, BASIS_B
from nmp.arch.vector_ops import LANES, MAX_TREE_UNITS, reduce_tree_op, row_ops, tree_fits
from nmp.jit import njit


@njit(cache=True)
def _gather_segments(seg, uinv, weights, values, nseg, col_lo, col_hi):  # pragma: no cover
    dim = col_hi - col_lo
    out = np.zeros((nseg, dim), dtype=np.float32)
    weighted = weights.shape[0] > 0
    for i in range(seg.shape[0]):
        s = seg[i]
        u = uinv[i]
        if weighted:
            w = weights[i]
            for c in range(dim):
                out[s, c] += w * values[u, col_lo + c]
        else:
            for c in range(dim):
                out[s, c] += values[u, col_lo + c]
    return out


@njit(cache=True)
def _reduce_segments(parent, partial, nparent):  # pragma: no cover
    out = np.zeros((nparent, partial.shape[1]), dtype=np.float32)
    for i in range(parent.shape[0]):
        p = parent[i]
        for c in range(partial.shape[1]):
            out[p, c] += partial[i, c]
    return out


@njit(cache=True, nogil=True)
def dedupe(keys, key_space=-1):  # pragma: no cover - compiled
    """(distinct keys in first-seen order, index of each key among them) in linear time: a
    direct index when the keys lie in [0, key_space) and that space is small, else open
    addressing."""
    n = keys.shape[0]
    if 0 < key_space <= 8 * n + 4096:
        where = np.full(key_space, -1, dtype=np.int64)
        uniq = np.empty(n, dtype=np.int64)
        inv = np.empty(n, dtype=np.int64)
        m = 0
        for i in range(n):
            k = keys[i]
            s = where[k]
            if s == -1:
                where[k] = m
                uniq[m] = k
                s = m
                m += 1
            inv[i] = s
        return uniq[:m], inv
    size = 1
    while size < 2 * n + 2:
        size *= 2
    mask = size - 1
    slots = np.full(size, -1, dtype=np.int64)
    uniq = np.empty(n, dtype=np.int64)
    inv = np.empty(n, dtype=np.int64)
    m = 0
    for i in range(n):
        k = keys[i]
        h = (np.uint64(k) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(32)
        j = np.int64(h) & mask
        while True:
            s = slots[j]
            if s == -1:
                slots[j] = m
                uniq[m] = k
                inv[i] = m
                m += 1
                break
            if uniq[s] == k:
                inv[i] = s
                break
            j = (j + 1) & mask
    return uniq[:m], inv


@njit(cache=True, inline="always")
def _reduce_up_tree(acc, touched, parent, out, b):  # pragma: no cover
    """Children before parents (node ids decrease up the tree): each touched unit's partial sum
    of bag ``b`` is added into its parent's, the roots' (parent -1) into ``out[b]``; clears
    ``touched`` for the next bag."""
    dim = acc.shape[1]
    for nd in range(acc.shape[0] - 1, -1, -1):
        if not touched[nd]:
            continue
        touched[nd] = False
        p = parent[nd]
        if p < 0:
            for c in range(dim):
                out[b, c] += acc[nd, c]
        elif touched[p]:
            for c in range(dim):
                acc[p, c] += acc[nd, c]
        else:
            touched[p] = True
            for c in range(dim):
                acc[p, c] = acc[nd, c]


@njit(cache=True, nogil=True)
def gather_tree(node, bag, uinv, weights, values, parent, n_nodes, batch):  # pragma: no cover
    """Bag by bag: every unit (``node``) accumulates the partial sum of its rows of the bag;
    then, children before parents (node ids decrease up the tree), each partial sum is added
    into its parent's; the roots' (parent -1) are added by the host. Lookups of a bag are
    contiguous (EmbeddingBag order). Returns float32 [batch, dim]."""
    dim = values.shape[1]
    out = np.zeros((batch, dim), dtype=np.float32)
    acc = np.zeros((n_nodes, dim), dtype=np.float32)
    touched = np.zeros(n_nodes, dtype=np.bool_)
    weighted = weights.shape[0] > 0
    n = node.shape[0]
    i = 0
    while i < n:
        b = bag[i]
        j = i
        while j < n and bag[j] == b:
            nd = node[j]
            u = uinv[j]
            w = weights[j] if weighted else np.float32(1.0)
            if touched[nd]:
                for c in range(dim):
                    acc[nd, c] += w * values[u, c]
            else:
                touched[nd] = True
                for c in range(dim):
                    acc[nd, c] = w * values[u, c]
            j += 1
        _reduce_up_tree(acc, touched, parent, out, b)
        i = j
    return out


_BASIS_A, _BASIS_B = BASIS_A, BASIS_B

# Embedding widths with a kernel compiled for that width: the dim loop then has a constant trip
# count, so the compiler unrolls it into whole vector registers (about 1.7x faster than a
# run-time width on AVX2/AVX-512). Other widths use the run-time kernel (dim = 0 here).
SPECIALIZED_DIMS = (16, 32, 64, 128, 256)


def _make_gather_tree_basis(fixed_dim: int, weighted: bool):
    """The kernel of :func:`gather_tree_basis` for rows of ``fixed_dim`` elements (0: any),
    with or without per-lookup weights (separate kernels keep the branch out of the loop).

    Not cached on disk: numba's cache keeps all variants of a closure in one index, and worker
    processes writing it at once left entries whose reload failed ("NRT_adapt_ndarray_to_python:
    'descr' is NULL"); compiling a variant takes about 1 s, once per process."""

    @njit(cache=False, fastmath=True, nogil=True)
    def kernel(
        level, node, base, bag, rows, weights, basis_a, basis_b, parent, batch
    ):  # pragma: no cover
        dim = fixed_dim if fixed_dim > 0 else basis_a.shape[1]
        # unsigned division by the basis sizes (compile-time constants): multiply and shift
        na, nb = np.uint64(_BASIS_A), np.uint64(_BASIS_B)
        n_nodes = parent.shape[0]
        out = np.zeros((batch, dim), dtype=np.float32)
        # accumulators stay zero between bags (cleared as they are reduced), so a lookup only
        # adds: no branch on whether its unit has started this bag
        acc = np.zeros((n_nodes, dim), dtype=np.float32)
        touched = np.zeros(n_nodes, dtype=np.bool_)
        n = node.shape[0]
        for j in range(n):
            nd = base[level[j]] + node[j]
            r = np.uint64(rows[j])
            q = r // na
            ia = np.int64(r - q * na)
            ib = np.int64(q % nb)
            touched[nd] = True
            if weighted:
                w = weights[j]
                for c in range(dim):
                    acc[nd, c] += w * (basis_a[ia, c] + basis_b[ib, c])
            else:
                for c in range(dim):
                    acc[nd, c] += basis_a[ia, c] + basis_b[ib, c]
            if j + 1 == n or bag[j + 1] != bag[j]:
                # end of the bag: children before parents (ids decrease up the tree), each
                # touched unit's partial sum goes into its parent's, or out[b] for a root, and
                # is cleared (written out here: a call, even inlined, halves the speed)
                b = bag[j]
                for k in range(n_nodes - 1, -1, -1):
                    if not touched[k]:
                        continue
                    touched[k] = False
                    p = parent[k]
                    if p < 0:
                        for c in range(dim):
                            out[b, c] += acc[k, c]
                            acc[k, c] = 0.0
                    else:
                        touched[p] = True
                        for c in range(dim):
                            acc[p, c] += acc[k, c]
                            acc[k, c] = 0.0
        return out

    return kernel


# Lookups ahead whose basis rows the vector kernel prefetches: the bases of a workload's many
# tables (1 MiB each at dim 64) do not stay in L2 between design points. Chosen 16, swept by
# benchmarks/gather_prefetch.py: on the 2-core Intel Xeon VM 8 took recross-eval's gather from
# 1.8 to 1.35 ms per point (4: 1.45, 16: 1.37; thread CPU time); on a 2-core AMD EPYC (Zen 3,
# 512 KiB of L2) the gather against EmbeddingBag, the paired medians of two sweeps of 6 rounds,
# ran 0.81-0.84x at 8, 0.87-0.88x at 16, 0.87-0.89x at 24 (docs/performance.md). Only A's row
# is prefetched: B's row index is ``r div 4099``, so 4099 consecutive rows share one B row and
# a table touches few of them (49 for 200,000 rows), which stay in L1; prefetching them too cost
# 6% (22.9 vs 21.5 ms on arch.py --gather-only's batch).
PREFETCH_AHEAD = 16


def _make_gather_tree_rows(dim: int, tree: tuple[int, ...] | None = None):
    """The unweighted kernel of :func:`gather_tree_basis` for rows of ``dim`` elements (a
    multiple of 8), its row arithmetic in whole vectors (:mod:`nmp.arch.vector_ops`): the same
    additions in the same order as :func:`_make_gather_tree_basis`'s kernel, so the same bits
    (its compiled loop adds ``(acc + A) + B`` per element), without a run-time overlap check
    per lookup. Not cached on disk, as that kernel.

    Where a bag has at least as many lookups as there are units on average, most units take
    part in every bag and the tree is reduced without tracking which did: every unit's partial
    sum is added into its parent's and cleared, the untouched ones' being zero. That gives the
    same bits, as adding +0.0 leaves any sum unchanged and no partial sum is ever -0.0 (each
    starts at +0.0, and a rounded-to-nearest sum is -0.0 only of two -0.0); it saves a store
    per lookup and a branch per unit and bag. Otherwise only touched units are visited.

    ``tree``: the ``parent`` array every call passes, as a tuple (:func:`_fused_tree`); the
    untracked reduction is then compiled for it as straight-line code
    (:func:`nmp.arch.vector_ops.reduce_tree_op`: the same bits, each partial sum loaded
    once). Without it the loop reduces any ``parent``."""
    add_two_rows, add_row_and_clear, prefetch_row = row_ops(dim)
    ahead = PREFETCH_AHEAD
    fused = tree is not None
    reduce_tree = reduce_tree_op(dim, tree if tree is not None else (-1,))

    # Indices are unsigned where they can be (every index here is non-negative): numba adds a
    # wrap-around of negative indices to each signed one, and dropping it took the kernel
    # from 19.4 to 18.1 ms (AVX2 code: 19.6 to 18.7; arch.py --gather-only's batch, thread
    # CPU time, best of 15 per table).
    def compiled(track: bool):
        """The kernel with ``track`` (fewer lookups per bag than units, on average) fixed at
        compile time: the hot loop then holds only its own reduction's code."""

        @njit(cache=False, nogil=True, boundscheck=False)
        def kernel(
            level, node, base, bag, rows, basis_a, basis_b, parent, out, acc
        ):  # pragma: no cover
            na, nb = np.uint64(_BASIS_A), np.uint64(_BASIS_B)
            n_nodes = parent.shape[0]
            # out and acc start zeroed and on whole cache lines (_zeros_on_lines); acc is
            # zero between bags, as above, and so after the last (the next table's call
            # reuses it)
            touched = np.zeros(n_nodes, dtype=np.bool_)
            n = np.uint64(node.shape[0])
            one, far = np.uint64(1), np.uint64(ahead)
            for k in range(min(ahead, node.shape[0])):  # the first lookups' basis rows
                r = np.uint64(rows[k])
                prefetch_row(basis_a, np.int64(r - (r // na) * na))
            for i in range(node.shape[0]):
                j = np.uint64(i)
                if j + far < n:  # the basis row of a lookup further on, on its way
                    r = np.uint64(rows[j + far])
                    prefetch_row(basis_a, np.int64(r - (r // na) * na))
                nd = np.uint64(base[np.uint64(level[j])] + node[j])
                r = np.uint64(rows[j])
                q = r // na
                add_two_rows(
                    acc, np.int64(nd), basis_a, np.int64(r - q * na), basis_b, np.int64(q % nb)
                )
                if track:
                    touched[nd] = True
                if j + one == n or bag[j + one] != bag[j]:
                    b = bag[j]
                    if fused and not track:
                        reduce_tree(out, b, acc)
                        continue
                    for k in range(n_nodes - 1, -1, -1):
                        uk = np.uint64(k)
                        if track:
                            if not touched[uk]:
                                continue
                            touched[uk] = False
                        p = parent[uk]
                        if p < 0:
                            add_row_and_clear(out, b, acc, k)
                        else:
                            if track:
                                touched[np.uint64(p)] = True
                            add_row_and_clear(acc, p, acc, k)
            return out

        return kernel

    kernels = (compiled(False), compiled(True))

    def run(level, node, base, bag, rows, weights, basis_a, basis_b, parent, batch, acc=None):
        out = _zeros_on_lines(batch, dim)
        acc = _zeros_on_lines(parent.shape[0], dim) if acc is None else acc
        track = parent.shape[0] * batch > node.shape[0]
        return kernels[track](level, node, base, bag, rows, basis_a, basis_b, parent, out, acc)

    run.kernels = kernels  # type: ignore[attr-defined]  # (their compiled code, for inspection)
    return run


def _zeros_on_lines(rows: int, dim: int) -> np.ndarray:
    """float32 zeros [rows, dim] starting on a 64-byte cache line. numba aligns its arrays to
    32 bytes, and the partial sums' rows it allocated started mid-line: every 512-bit access
    straddled two lines. On lines the vector kernel took 16.7 instead of 18.7 ms natively
    (arch.py --gather-only's batch, thread CPU time, best of 15 per table; AVX2 code, whose
    32-byte accesses never straddle, the same within the noise: 18.7 and 18.2 ms)."""
    buf = np.zeros(rows * dim + 16, dtype=np.float32)
    skip = (-buf.ctypes.data % 64) // 4
    return buf[skip : skip + rows * dim].reshape(rows, dim)


_BASIS_KERNELS: dict[tuple[int, bool, tuple[int, ...] | None], Any] = {}


# Trees whose reduction a process compiles into a kernel of its own (about 0.5-1 s each, on the
# 2-core AMD EPYC): chosen, so that a sweep over many memory organizations (a tree each) pays
# for a few compilations, not one per design; the others get the loop's kernel, the same bits.
MAX_FUSED_TREES = 8


def _fused_count() -> int:
    # (a snapshot of the keys: a design point's threads may add a kernel meanwhile)
    return sum(1 for k in tuple(_BASIS_KERNELS) if k[2] is not None)


def _fused_tree(parent: np.ndarray) -> tuple[int, ...] | None:
    """``parent`` as a tuple where the vector kernel's reduction can be compiled for it
    (:func:`~nmp.arch.vector_ops.tree_fits`); None: the loop reduces it."""
    if not 0 < parent.shape[0] <= MAX_TREE_UNITS:  # (no tuple of a large tree)
        return None
    # kept by the tree's bytes: a point asks once per table (26 on recross-eval) for the same
    # tree, and the tuple and its check took 10-20 us each time
    return _fused_tree_of(np.ascontiguousarray(parent, dtype=np.int64).tobytes())


@functools.lru_cache(maxsize=256)
def _fused_tree_of(raw: bytes) -> tuple[int, ...] | None:
    tree = tuple(int(p) for p in np.frombuffer(raw, dtype=np.int64).tolist())
    return tree if tree_fits(tree) else None


def gather_tree_basis(
    level, node, base, bag, rows, weights, basis_a, basis_b, parent, batch, *, work=None
):
    """:func:`gather_tree` reading each row in place as :mod:`nmp.arch.rowdata` stores it
    (``A[r mod |A|] + B[(r div |A|) mod |B|]``); a lookup's unit is ``base[level] + node``.
    ``work``: a dict the calls of one thread share (:func:`pool_tables`' tables), where the
    vector kernel keeps its units' partial sums between calls (it leaves them zero).

    Every unit accumulates the partial sum of its rows of a bag; after the bag, children before
    parents (node ids decrease up the tree), each partial sum is added into its parent's, the
    roots' (parent -1) into the output. Lookups of a bag are contiguous (EmbeddingBag order).
    Rows are non-negative. Returns float32 [batch, dim]."""
    dim = int(basis_a.shape[1])
    fixed_dim, weighted = (dim if dim in SPECIALIZED_DIMS else 0), weights.shape[0] > 0
    vector = fixed_dim % LANES == 0 and fixed_dim > 0 and not weighted
    # (the vector kernel is compiled per tree it reduces: a design's tree is the same at every
    # call; past MAX_FUSED_TREES trees in a process the loop's kernel reduces the others)
    key = (fixed_dim, weighted, _fused_tree(parent) if vector else None)
    if key[2] is not None and key not in _BASIS_KERNELS and _fused_count() >= MAX_FUSED_TREES:
        key = (fixed_dim, weighted, None)
    kernel = _BASIS_KERNELS.get(key)
    if kernel is None:
        if vector:
            kernel = _make_gather_tree_rows(fixed_dim, key[2])
        else:
            kernel = _make_gather_tree_basis(fixed_dim, weighted)
        _BASIS_KERNELS[key] = kernel
    if work is not None and getattr(kernel, "kernels", None) is not None:  # the vector kernel
        acc = work.get(key)
        if acc is None or acc.shape != (parent.shape[0], dim):
            acc = work[key] = _zeros_on_lines(parent.shape[0], dim)
        return kernel(
            level, node, base, bag, rows, weights, basis_a, basis_b, parent, int(batch), acc
        )
    return kernel(level, node, base, bag, rows, weights, basis_a, basis_b, parent, int(batch))


_NO_WEIGHTS = np.empty(0, dtype=np.float32)


def pool_tables(store, flat, table_rows, base, parent, level, node) -> list[np.ndarray]:
    """Pooled sums of every table (float32 [batch, dim]): the lookup at ``base[level] + node``'s
    unit is accumulated there, and the partial sums climb ``parent`` to the output. Rows are read
    in place from ``store`` (:mod:`nmp.arch.rowdata`) where it keeps a table as two bases,
    otherwise each distinct row is read once; a store that also reads the rows of all tables
    at once (``read_rows``, by global row) is gathered in one pass over every table, with the
    same sums. ``flat`` is table-sorted (:class:`FlatLookups`)."""
    read_rows = getattr(store, "read_rows", None)
    if read_rows is not None and flat.n:
        return _pool_all_tables(read_rows, flat, table_rows, base, parent, level, node)
    pooled: list[np.ndarray] = []
    starts = np.searchsorted(flat.table, np.arange(flat.num_tables + 1))
    work: dict = {}  # the tables' calls share their partial sums' buffers
    for t in range(flat.num_tables):
        a, b = int(starts[t]), int(starts[t + 1])
        rows = np.ascontiguousarray(flat.row[a:b])
        bag = np.ascontiguousarray(flat.bag[a:b])
        w = _NO_WEIGHTS if flat.weight is None else np.ascontiguousarray(flat.weight[a:b])
        basis: tuple[np.ndarray, np.ndarray] | None = store.basis(t)
        if basis is not None:
            pooled.append(
                gather_tree_basis(
                    level[a:b],
                    node[a:b],
                    base,
                    bag,
                    rows,
                    w,
                    *basis,
                    parent,
                    flat.batch,
                    work=work,
                )  # fmt: skip
            )
            continue
        uniq, uinv = dedupe(rows, table_rows[t])
        values = store.read(t, uniq)
        unit = base[level[a:b]] + node[a:b]
        pooled.append(gather_tree(unit, bag, uinv, w, values, parent, parent.size, flat.batch))
    return pooled


def _pool_all_tables(read_rows, flat, table_rows, base, parent, level, node) -> list[np.ndarray]:
    """:func:`pool_tables` of a store that reads rows of all tables at once (``read_rows`` by
    global row): one pass, bag ``table * batch + bag``. Each bag's lookups, their order and so
    every sum are those of the pass per table (the trainer's servers: 26 small tables a step,
    where the passes per table cost more than their work)."""
    uniq, uinv = dedupe(np.ascontiguousarray(flat.grow, dtype=np.int64), int(sum(table_rows)))
    w = _NO_WEIGHTS if flat.weight is None else np.ascontiguousarray(flat.weight)
    batch = flat.batch
    out = gather_tree(
        base[level] + node,
        np.ascontiguousarray(flat.table * batch + flat.bag, dtype=np.int64),
        uinv,
        w,
        read_rows(uniq),
        parent,
        parent.size,
        batch * flat.num_tables,
    )
    return [out[t * batch : (t + 1) * batch] for t in range(flat.num_tables)]


def gather_segments(
    seg: np.ndarray,
    uinv: np.ndarray,
    weights: np.ndarray | None,
    values: np.ndarray,
    nseg: int,
    cols: tuple[int, int] | None = None,
) -> np.ndarray:
    """Partial sums: ``out[seg[i]] += weights[i] * values[uinv[i], cols]`` (float32)."""
    lo, hi = cols if cols is not None else (0, values.shape[1])
    w = _NO_WEIGHTS if weights is None else np.ascontiguousarray(weights, dtype=np.float32)
    return _gather_segments(
        np.ascontiguousarray(seg, dtype=np.int64),
        np.ascontiguousarray(uinv, dtype=np.int64),
        w,
        np.ascontiguousarray(values, dtype=np.float32),
        int(nseg),
        int(lo),
        int(hi),
    )


def reduce_segments(parent: np.ndarray, partial: np.ndarray, nparent: int) -> np.ndarray:
    """Add child partial sums into their parents: ``out[parent[i]] += partial[i]``."""
    return _reduce_segments(
        np.ascontiguousarray(parent, dtype=np.int64),
        np.ascontiguousarray(partial, dtype=np.float32),
        int(nparent),
    )


def segment_ids(*keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Dense ids of the distinct key tuples: (id per element, first element of each id, count).

    Keys are non-negative int64 arrays of equal length; ids follow the lexicographic order.
    """
    n = keys[0].shape[0]
    if n == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64), 0
    combined = np.zeros(n, dtype=np.int64)
    for k in keys:
        span = int(k.max()) + 1 if k.size else 1
        combined = combined * span + k
    uniq, first, inv = np.unique(combined, return_index=True, return_inverse=True)
    return inv.astype(np.int64), first.astype(np.int64), int(uniq.size)


__all__ = [
    "dedupe",
    "gather_segments",
    "gather_tree",
    "gather_tree_basis",
    "pool_tables",
    "reduce_segments",
    "segment_ids",
]
