"""``sampling = "grid"``: every combination of the sweep's axes (the default)."""

from __future__ import annotations

from nmp.evaluate.samplers import SAMPLERS, GridShape, Sampler


class Grid(Sampler):
    name = "grid"
    description = "every combination of the axes"
    takes_samples = False

    def pick(self, shape: GridShape, samples: int, seed: int) -> list[int]:
        return list(range(shape.total))


SAMPLERS.register(Grid())
