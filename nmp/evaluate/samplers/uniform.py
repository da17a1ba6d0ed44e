"""``sampling = "random"``: ``samples`` distinct points drawn uniformly from the whole grid."""

from __future__ import annotations

import numpy as np

from nmp.evaluate.samplers import SAMPLERS, GridShape, Sampler


class Uniform(Sampler):
    name = "random"
    description = "samples distinct points drawn uniformly from the grid (seed)"
    takes_samples = True

    def pick(self, shape: GridShape, samples: int, seed: int) -> list[int]:
        total = shape.total
        rng = np.random.default_rng(seed)
        return sorted(int(i) for i in rng.choice(total, size=min(samples, total), replace=False))


SAMPLERS.register(Uniform())
