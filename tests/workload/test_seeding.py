"""The batch's per-table Generators (nmp.workload.seeding) against numpy's default_rng."""

from __future__ import annotations

import numpy as np
import pytest

from nmp.workload.batch import generate_batch
from nmp.workload.seeding import rng_of
from nmp.workload.spec import load_workload

EDGES = [0, 1, 2, 25, 12345, 2**31, 2**32 - 1, 2**32, 2**32 + 1, 2**40 + 17, 2**63, 2**64 - 1]


@pytest.mark.parametrize("a", EDGES)
def test_state_equals_numpy_at_word_edges(a):
    for b in EDGES:
        ours, theirs = rng_of(a, b), np.random.default_rng([a, b])
        assert ours.bit_generator.state == theirs.bit_generator.state, (a, b)


def test_state_equals_numpy_on_random_keys():
    keys = np.random.default_rng(7).integers(0, 2**64, size=(2000, 2), dtype=np.uint64)
    for a, b in keys.tolist():
        assert rng_of(a, b).bit_generator.state == np.random.default_rng([a, b]).bit_generator.state


def test_draws_equal_numpy():
    ours, theirs = rng_of(2024, 3), np.random.default_rng([2024, 3])
    assert np.array_equal(ours.random(1000), theirs.random(1000))
    assert np.array_equal(ours.integers(0, 10**9, 1000), theirs.integers(0, 10**9, 1000))


def test_keys_outside_64_bits_go_to_numpy():
    big = 2**64 + 5
    assert rng_of(big, 1).bit_generator.state == np.random.default_rng([big, 1]).bit_generator.state
    with pytest.raises(ValueError):
        rng_of(-1, 0)


def test_batch_equals_one_drawn_with_default_rng(monkeypatch):
    spec = load_workload("recross-eval")
    ours = generate_batch(spec, seed=11)
    import nmp.workload.batch as batch

    monkeypatch.setattr(batch, "rng_of", lambda a, b: np.random.default_rng([a, b]))
    theirs = generate_batch(spec, seed=11)
    for x, y in zip(ours, theirs, strict=True):
        assert np.array_equal(x.indices, y.indices) and np.array_equal(x.offsets, y.offsets)


def test_a_numpy_that_seeds_otherwise_gets_its_own(monkeypatch):
    import nmp.workload.seeding as seeding

    monkeypatch.setattr(seeding, "_OK", False)
    monkeypatch.setattr(seeding, "_generator", lambda a, b: pytest.fail("the compiled path ran"))
    assert rng_of(3, 4).bit_generator.state == np.random.default_rng([3, 4]).bit_generator.state
