"""Every preset's gather-reduce equals torch.nn.EmbeddingBag(mode="sum") on the same rows."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from nmp.arch import load_arch
from nmp.workload import generate_batch

from .conftest import NMP_PRESETS, PRESETS


def _reference(arch, batch) -> list[np.ndarray]:
    out = []
    for t, lk in enumerate(batch.tables):
        weight = torch.from_numpy(arch.store.dense_table(t))
        bag = torch.nn.EmbeddingBag.from_pretrained(weight, mode="sum")
        w = None if lk.weights is None else torch.from_numpy(lk.weights)
        ref = bag(
            torch.from_numpy(lk.indices), torch.from_numpy(lk.offsets[:-1]), per_sample_weights=w
        )
        out.append(ref.numpy())
    return out


def _rel_err(got: list[np.ndarray], ref: list[np.ndarray]) -> float:
    return max(float(np.abs(g - r).max() / np.abs(r).max()) for g, r in zip(got, ref, strict=True))


@pytest.mark.parametrize("name", PRESETS)
def test_pooled_outputs_match_embedding_bag(name, small_workload):
    arch = load_arch(name)
    arch.bind(small_workload)
    batch = generate_batch(small_workload, seed=5)
    pooled, op = arch.gather_reduce(batch)
    assert len(pooled) == len(batch.tables)
    for t, p in enumerate(pooled):
        assert p.dtype == np.float32 and p.shape == (batch.batch, batch.tables[t].dim)
    assert _rel_err(pooled, _reference(arch, batch)) <= 1e-5
    assert op.t_ns > 0 and op.total_energy_pj > 0


@pytest.mark.parametrize("name", ["recross", "tensordimm", "trim-b"])
def test_weighted_bags_and_other_dims(name, weighted_workload):
    arch = load_arch(name)
    arch.bind(weighted_workload)
    batch = generate_batch(weighted_workload, seed=2)
    pooled, _ = arch.gather_reduce(batch)
    assert _rel_err(pooled, _reference(arch, batch)) <= 1e-5


def test_rows_are_reproducible_and_written_rows_win(small_workload):
    a, b = load_arch("recross"), load_arch("recross")
    a.bind(small_workload)
    b.bind(small_workload)
    rows = np.array([0, 5, 999])
    assert np.array_equal(a.store.read(0, rows), b.store.read(0, rows))
    new = np.full((1, 64), 3.5, np.float32)
    a.store.write(0, np.array([5]), new)
    got = a.store.read(0, rows)
    assert np.array_equal(got[1], new[0])
    assert np.array_equal(got[[0, 2]], b.store.read(0, rows)[[0, 2]])


def test_units_really_reduce_through_the_tree(small_workload):
    """Changing a row that only a bank unit holds changes exactly the bags that use it."""
    arch = load_arch("recross")
    arch.bind(small_workload)
    batch = generate_batch(small_workload, seed=1)
    before, _ = arch.gather_reduce(batch)
    t = 2
    row = int(batch.tables[t].indices[0])
    arch.store.write(t, np.array([row]), arch.store.read(t, np.array([row])) + 1.0)
    after, _ = arch.gather_reduce(batch)
    lk = batch.tables[t]
    uses = np.array(
        [
            np.count_nonzero(lk.indices[lk.offsets[i] : lk.offsets[i + 1]] == row)
            for i in range(lk.batch)
        ],
        dtype=np.float32,
    )
    assert np.allclose(after[t] - before[t], uses[:, None], atol=1e-4)


@pytest.mark.parametrize(("dim", "weighted"), [(64, True), (48, False)])
def test_basis_kernel_every_width_and_weighting(dim, weighted):
    """The in-place row kernel (compiled per width for common widths, at run time otherwise)
    equals a plain per-bag sum of the same rows, with and without per-lookup weights."""
    from nmp.arch.functional import gather_tree_basis
    from nmp.arch.rowdata import _basis, base_rows

    rng = np.random.default_rng(7)
    n, batch = 3000, 40
    bag = np.sort(rng.integers(0, batch, n)).astype(np.int64)
    rows = rng.integers(0, 5_000_000, n).astype(np.int64)  # beyond one basis period
    parent = np.array([-1, 0, 0, 1, 1, 2], dtype=np.int64)  # a 3-level tree of 6 units
    base = np.array([0, 1, 3], dtype=np.int64)
    level = rng.integers(0, 3, n).astype(np.int64)
    node = np.where(level == 0, 0, rng.integers(0, 2, n)).astype(np.int64)
    w = rng.random(n).astype(np.float32) if weighted else np.empty(0, np.float32)
    got = gather_tree_basis(level, node, base, bag, rows, w, *_basis(3, 1, dim), parent, batch)
    vals = base_rows(3, 1, rows, dim) * (w[:, None] if weighted else 1.0)
    ref = np.zeros((batch, dim), np.float64)
    np.add.at(ref, bag, vals.astype(np.float64))
    assert got.shape == (batch, dim) and got.dtype == np.float32
    assert np.abs(got - ref).max() <= 1e-5 * np.abs(ref).max()


def _tree_sum_in_order(level, node, base, bag, rows, w, basis_a, basis_b, parent, batch):
    """The units' arithmetic in float32, one addition at a time: each unit adds its lookups of
    a bag as ``(acc + A[ia]) + B[ib]`` in lookup order; at the bag's end the units, highest id
    first, add their sums into their parent's (roots: into the output)."""
    dim = basis_a.shape[1]
    out = np.zeros((batch, dim), np.float32)
    acc = np.zeros((parent.size, dim), np.float32)
    for j in range(rows.size):
        nd = base[level[j]] + node[j]
        a, b = (
            basis_a[rows[j] % basis_a.shape[0]],
            basis_b[(rows[j] // basis_a.shape[0]) % basis_b.shape[0]],
        )
        acc[nd] = (acc[nd] + a) + b
        if j + 1 == rows.size or bag[j + 1] != bag[j]:
            for k in range(parent.size - 1, -1, -1):
                if acc[k].any():
                    if parent[k] < 0:
                        out[bag[j]] += acc[k]
                    else:
                        acc[parent[k]] += acc[k]
                    acc[k] = 0.0
    return out


@pytest.mark.parametrize(("dim", "batch"), [(16, 25), (24, 25), (64, 25), (256, 25), (64, 400)])
def test_basis_kernel_adds_in_a_fixed_order(dim, batch):
    """The kernels' results, bit for bit, are those of the additions in the documented order
    (whichever kernel a width gets: whole vectors, a compiled width or a run-time one; with
    more lookups per bag than units, where the vector kernel reduces every unit, and fewer,
    where it reduces the touched ones only)."""
    from nmp.arch.functional import gather_tree_basis
    from nmp.arch.rowdata import _basis

    rng = np.random.default_rng(dim)
    n = 2000
    bag = np.sort(rng.integers(0, batch, n)).astype(np.int64)
    rows = rng.integers(0, 5_000_000, n).astype(np.int64)
    parent = np.array([-1, -1, 0, 0, 1, 2, 3, 4], dtype=np.int64)
    base = np.array([0, 2, 4], dtype=np.int64)
    level = rng.integers(0, 3, n).astype(np.int64)
    node = rng.integers(0, np.array([2, 2, 4])[level]).astype(np.int64)
    args = (
        level,
        node,
        base,
        bag,
        rows,
        np.empty(0, np.float32),
        *_basis(5, 2, dim),
        parent,
        batch,
    )
    assert np.array_equal(
        gather_tree_basis(*args).view(np.uint32), _tree_sum_in_order(*args).view(np.uint32)
    )
    # calls sharing their partial sums' buffer (pool_tables' tables): each leaves it zero
    work: dict = {}
    for seed in (1, 2):
        again = (*args[:4], np.roll(rows, seed), *args[5:])
        got = gather_tree_basis(*again, work=work)
        assert np.array_equal(got.view(np.uint32), _tree_sum_in_order(*again).view(np.uint32))
    assert all(not acc.any() for acc in work.values())


@pytest.mark.parametrize(
    "parent",
    [
        (-1, -1, 0, 0, 0, 0, 1, 1, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9),  # recross: rank, group, bank
        (-1, -1, -1, -1, -1),  # units without a tree: every one a root
        (-1, 0, 1, 2, 3),  # a chain
        (-1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3),  # a root of many children, some with their own
        (1, -1, 1),  # a parent above its child's id: the loop's order, not compiled in
    ],
)
def test_vector_kernel_reduces_any_tree_in_the_loops_order(parent, monkeypatch):
    """The vector kernel's bag-end reduction, compiled for the design's tree (or, where the tree
    does not fit, the loop), gives the bits of the additions in the documented order; a tree
    with a parent above its child's id is left to the loop (which the documented order
    assumes, not checks)."""
    import nmp.arch.functional as gather
    from nmp.arch.functional import _fused_tree, gather_tree_basis
    from nmp.arch.rowdata import _basis

    # (other tests in this process may have compiled trees up to the bound already)
    monkeypatch.setattr(gather, "MAX_FUSED_TREES", 1 << 20)
    parent_a = np.array(parent, dtype=np.int64)
    fits = all(-1 <= p < k for k, p in enumerate(parent))
    assert (_fused_tree(parent_a) == parent) if fits else _fused_tree(parent_a) is None
    rng = np.random.default_rng(len(parent))
    n, batch, units = 3000, 30, len(parent)
    bag = np.sort(rng.integers(0, batch, n)).astype(np.int64)  # 100 a bag: every unit reduced
    rows = rng.integers(0, 5_000_000, n).astype(np.int64)
    level = np.zeros(n, dtype=np.int64)
    node = rng.integers(0, units, n).astype(np.int64)
    base = np.zeros(1, dtype=np.int64)
    args = (level, node, base, bag, rows, np.empty(0, np.float32), *_basis(5, 2, 64))
    args = (*args, parent_a, batch)
    work: dict = {}
    got = gather_tree_basis(*args, work=work)
    assert ((64, False, parent) in gather._BASIS_KERNELS) == fits  # its own kernel, if it fits
    assert np.array_equal(got.view(np.uint32), _tree_sum_in_order(*args).view(np.uint32))
    # every partial sum cleared (the loop leaves a child's sum in a parent below it, unread)
    assert all(not acc.any() for acc in work.values()) or not fits


class _PerTable:
    """A store that reads rows table by table (no bases: the generic kernel)."""

    def __init__(self, store):
        self.store = store

    def read(self, table, rows):
        return self.store.read(table, rows)

    def basis(self, table):
        return None


class _AllTables(_PerTable):
    """The same rows, also readable all tables at once by global row (as the trainer's)."""

    def __init__(self, store, table_rows):
        super().__init__(store)
        self.first = np.concatenate([[0], np.cumsum(table_rows)]).astype(np.int64)
        self.reads = 0

    def read_rows(self, grow):
        self.reads += 1
        table = np.searchsorted(self.first, grow, side="right") - 1
        out = None
        for t in np.unique(table):
            sel = np.flatnonzero(table == t)
            got = self.store.read(int(t), grow[sel] - self.first[t])
            out = np.zeros((grow.size, got.shape[1]), np.float32) if out is None else out
            out[sel] = got
        return out


@pytest.mark.parametrize("name", NMP_PRESETS)
@pytest.mark.parametrize("weighted", [False, True])
def test_one_pass_over_all_tables_adds_as_the_pass_per_table(
    name, weighted, small_workload, weighted_workload
):
    """pool_tables of a store with ``read_rows`` (one pass, bag = table * batch + bag) gives
    every bit of the pass per table: the same lookups in the same order per bag."""
    from nmp.arch.functional import pool_tables

    workload = weighted_workload if weighted else small_workload  # (one width each)
    arch = load_arch(name)
    arch.bind(workload)
    batch = generate_batch(workload, seed=9)
    flat, plc, _ = arch.prepare(batch)
    base, parent, level, node = arch.policy.reduce_nodes(arch, plc)
    per_table = pool_tables(_PerTable(arch.store), flat, arch.table_rows, base, parent, level, node)
    both = _AllTables(arch.store, arch.table_rows)
    one_pass = pool_tables(both, flat, arch.table_rows, base, parent, level, node)
    assert both.reads == 1
    for a, b in zip(per_table, one_pass, strict=True):
        np.testing.assert_array_equal(a, b)


def test_vector_kernel_sums_start_on_cache_lines():
    """The vector kernel's partial sums and output rows start on 64-byte lines (a 512-bit
    access to a row then never straddles two), zeroed, of the requested shape."""
    from nmp.arch.functional import _zeros_on_lines

    for rows, dim in [(18, 64), (3, 16), (1, 256)]:
        z = _zeros_on_lines(rows, dim)
        assert z.ctypes.data % 64 == 0 and z.shape == (rows, dim) and z.dtype == np.float32
        assert z.flags.c_contiguous and not z.any()


def test_trees_past_the_bound_get_the_loop_kernel(monkeypatch):
    """Past MAX_FUSED_TREES compiled trees a process reduces new trees with the loop's kernel
    (no compilation of its own), the same bits."""
    import nmp.arch.functional as gather
    from nmp.arch.rowdata import _basis

    monkeypatch.setattr(gather, "MAX_FUSED_TREES", 0)
    parent = np.array([-1, 0, 0, 1, 1, 1, 2], dtype=np.int64)
    rng = np.random.default_rng(3)
    n, batch = 1500, 10
    bag = np.sort(rng.integers(0, batch, n)).astype(np.int64)
    rows = rng.integers(0, 5_000_000, n).astype(np.int64)
    node = rng.integers(0, parent.size, n).astype(np.int64)
    args = (np.zeros(n, np.int64), node, np.zeros(1, np.int64), bag, rows)
    args = (*args, np.empty(0, np.float32), *_basis(5, 2, 64), parent, batch)
    got = gather.gather_tree_basis(*args)
    assert (64, False, tuple(parent.tolist())) not in gather._BASIS_KERNELS
    assert (64, False, None) in gather._BASIS_KERNELS
    assert np.array_equal(got.view(np.uint32), _tree_sum_in_order(*args).view(np.uint32))
