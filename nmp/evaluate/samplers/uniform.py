"""``sampling = "random"``: ``samples`` distinct points drawn uniformly from the whole grid
(numpy's ``choice`` over its flat indices; past 2^63 points, a block by its share of the points
and a uniform digit per axis)."""

from __future__ import annotations

import itertools

import numpy as np

from nmp.evaluate.samplers import INT64_POINTS, SAMPLERS, GridShape, Sampler, random_offset


class Uniform(Sampler):
    name = "random"
    description = "samples distinct points drawn uniformly from the grid (seed)"
    takes_samples = True

    def pick(self, shape: GridShape, samples: int, seed: int) -> list[int]:
        total = shape.total
        rng = np.random.default_rng(seed)
        n = min(samples, total)
        if total < INT64_POINTS:
            return sorted(int(i) for i in rng.choice(total, size=n, replace=False))
        # past numpy's integers: a block by its share of the points, then a digit per axis
        sizes = shape.sizes
        starts = list(itertools.accumulate(sizes, initial=0))
        weights = np.array([size / total for size in sizes])
        weights /= weights.sum()  # (the float shares' rounding)
        picked: set[int] = set()
        while len(picked) < n:
            b = int(rng.choice(len(sizes), p=weights))
            picked.add(starts[b] + random_offset(shape.blocks[b], rng))
        return sorted(picked)


SAMPLERS.register(Uniform())
