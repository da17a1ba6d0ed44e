"""Sweep samplers (nmp/evaluate/samplers/): the grid, a uniform draw, a Latin hypercube.

The Latin hypercube's point is balance: in a sparse sample every axis's values appear in
equal shares (within one), which a uniform draw of the same size misses for some seeds."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from evaluate_fakes import toy_sweep

from nmp.errors import SpecError
from nmp.evaluate.budget import sweep_estimate
from nmp.evaluate.samplers import SAMPLERS, GridShape
from nmp.evaluate.samplers.latin_hypercube import apportion, block_offsets
from nmp.evaluate.sweep import expand, grid_size

# one design, one workload: a block of 6 x 5 x 4 = 120 points, 12 drawn
WIDE_AXES = {
    "workload": {"batch": [1, 2, 4, 8, 16, 32], "pooling": [5, 10, 20, 40, 80]},
    "arch": {"bank": {"units": [2, 4, 8, 16]}},
}
WIDE = {"archs": ["a"], "designs": [], "workloads": ["w1"], "axes": WIDE_AXES}


VALUES = {
    "workload.batch": WIDE_AXES["workload"]["batch"],
    "workload.pooling": WIDE_AXES["workload"]["pooling"],
    "arch.bank.units": WIDE_AXES["arch"]["bank"]["units"],
}


def _spread(points, key: str) -> int:
    """The most and least times a value of axis ``key`` appears (none counts), apart."""
    counts = Counter(p.overrides[key] for p in points)
    shares = [counts.get(value, 0) for value in VALUES[key]]
    return max(shares) - min(shares)


def test_the_shipped_samplers_are_registered():
    assert list(SAMPLERS.names()) == ["grid", "latin-hypercube", "random"]


def test_random_draws_as_it_always_did():
    """The flat indices of ``numpy.random.default_rng(seed).choice`` (the sweep files' seeds
    keep their points)."""
    shape = GridShape(((3,), (3,), (3, 2)))
    got = SAMPLERS.get("random").pick(shape, 7, 3)
    want = sorted(int(i) for i in np.random.default_rng(3).choice(12, size=7, replace=False))
    assert got == want


@pytest.mark.parametrize("seed", range(8))
def test_a_latin_hypercube_balances_every_axis(seed):
    points = expand(toy_sweep(**WIDE, sampling="latin-hypercube", samples=12, seed=seed))
    assert len(points) == 12 and len({repr(p.overrides) for p in points}) == 12
    # 12 samples: each of 6 batches twice, of 5 poolings 2 or 3 times, of 4 unit counts 3 times
    for key in VALUES:
        assert _spread(points, key) <= 1, key


def test_a_uniform_draw_of_the_same_size_does_not():
    spreads = [
        max(
            _spread(expand(toy_sweep(**WIDE, sampling="random", samples=12, seed=s)), key)
            for key in VALUES
        )
        for s in range(8)
    ]
    assert max(spreads) >= 3


def test_a_latin_hypercube_is_seeded_and_shares_samples_among_the_blocks():
    a = expand(toy_sweep(sampling="latin-hypercube", samples=9, seed=1))
    assert a == expand(toy_sweep(sampling="latin-hypercube", samples=9, seed=1))
    assert a != expand(toy_sweep(sampling="latin-hypercube", samples=9, seed=2))
    grid = {repr((p.design, p.workload, p.overrides)) for p in expand(toy_sweep())}
    assert all(repr((p.design, p.workload, p.overrides)) in grid for p in a)
    # every drawn context has its baseline point (design a), as with a uniform draw
    contexts = {(p.workload, repr(p.axes)) for p in a}
    assert contexts == {(p.workload, repr(p.axes)) for p in a if p.design == "a"}
    assert apportion(9, [3, 3, 3, 3, 6, 6]) == [1, 1, 1, 1, 3, 2]
    assert sum(apportion(9, [3, 3, 6])) == 9


def test_samples_that_land_on_one_point_are_topped_up_with_distinct_points():
    rng = np.random.default_rng(0)
    for k in range(1, 7):  # a 2 x 3 block: every share up to the whole block
        got = block_offsets((2, 3), k, rng)
        assert len(got) == len(set(got)) == k and all(0 <= g < 6 for g in got)
    big = block_offsets((1000, 1000), 50, rng)  # the far larger block: redrawn
    assert len(set(big)) == 50


def test_more_samples_than_points_run_the_grid():
    spec = toy_sweep(sampling="latin-hypercube", samples=10_000)
    assert len(expand(spec)) == grid_size(spec)


@pytest.mark.parametrize(
    ("change", "key", "words"),
    [
        ({"sampling": "sobol"}, "sampling", "unknown sweep sampler 'sobol'"),
        ({"sampling": "latin-hypercube"}, "samples", "latin-hypercube sampling needs samples"),
        ({"samples": 3}, "samples", "'latin-hypercube' or 'random'"),
    ],
)
def test_a_sampler_error_names_its_key(change, key, words):
    with pytest.raises(SpecError) as err:
        toy_sweep(**change)
    assert err.value.key == key and words in err.value.message


def test_the_sweep_follows_the_samplers_data_not_its_name(monkeypatch):
    """A Latin hypercube registered under another name picks the same points and gets the
    same baselines and memory estimate (a name test would have expanded it as the grid)."""
    lhs = SAMPLERS.get("latin-hypercube")
    twin = type("Twin", (type(lhs),), {"name": "lhs-twin"})()
    monkeypatch.setitem(SAMPLERS._items, twin.name, twin)
    a = toy_sweep(sampling="latin-hypercube", samples=5, seed=4)
    b = toy_sweep(sampling="lhs-twin", samples=5, seed=4)
    assert expand(a) == expand(b) != expand(toy_sweep())
    real = {"archs": ["host-cpu", "recnmp"], "designs": [], "baseline": "host-cpu"}
    a, b = (toy_sweep(**real, sampling=s, samples=5) for s in ("latin-hypercube", "lhs-twin"))
    assert sweep_estimate(a, "toy.toml") == sweep_estimate(b, "toy.toml")
    assert sweep_estimate(b, "toy.toml").key == "samples"


@pytest.mark.parametrize("sampling", ["random", "latin-hypercube"])
def test_a_grid_past_numpys_integers_is_sampled_exactly(sampling):
    """Ten axes of 100 values: 10^20 points a design, past 2^63 (an OverflowError before)."""
    huge = {"workload": {f"a{i}": list(range(100)) for i in range(10)}}
    spec = toy_sweep(archs=["a", "b"], designs=[], workloads=["w1"], axes=huge)
    assert grid_size(spec) == 2 * 10**20
    sampled = dict(sampling=sampling, samples=40, seed=2)
    points = expand(toy_sweep(archs=["a", "b"], designs=[], workloads=["w1"], axes=huge, **sampled))
    assert points == expand(
        toy_sweep(archs=["a", "b"], designs=[], workloads=["w1"], axes=huge, **sampled)
    )
    drawn = [p for p in points if p.design == "b"]
    assert len({repr(p.overrides) for p in drawn}) == len(drawn) >= 10
    if sampling == "latin-hypercube":  # 20 samples a design over 100 values: none twice
        assert len(drawn) == 20
        for i in range(10):
            assert max(Counter(p.overrides[f"workload.a{i}"] for p in drawn).values()) == 1
