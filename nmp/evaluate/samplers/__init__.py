"""How a sweep picks its points from its grid (``sampling`` in a sweep file), one module each:
:mod:`.grid` (every point), :mod:`.uniform` (``random``: distinct points drawn uniformly),
:mod:`.latin_hypercube` (each axis's values drawn in equal shares).

A sampler sees the grid as its blocks (one per design, memory and workload: the value counts
of the block's axes, last axis fastest) and returns the flat indices it picks into their
concatenation, ascending; the sweep turns them into points and, where a sampler takes
``samples``, adds each drawn context's baseline point. Adding a sampler: a module here that
registers a :class:`Sampler` with ``SAMPLERS.register(...)`` (found by that line).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from nmp.config import KeyedValueError
from nmp.errors import NmpError
from nmp.registry import Registry


@dataclass(frozen=True)
class GridShape:
    """A sweep's grid: per block, the number of values of each of its axes."""

    blocks: tuple[tuple[int, ...], ...]

    @property
    def sizes(self) -> list[int]:
        return [math.prod(counts) for counts in self.blocks]

    @property
    def total(self) -> int:
        return sum(self.sizes)


class Sampler(ABC):
    """One way to pick a sweep's points."""

    name: str
    description: str
    takes_samples: bool  # the sweep's ``samples`` sets how many: a subset, baselines added

    @abstractmethod
    def pick(self, shape: GridShape, samples: int, seed: int) -> list[int]:
        """The flat indices of the points to run, ascending, each once."""

    def most_points(self, total: int, samples: int) -> int:
        """The most points a sweep of ``total`` grid points runs (for the memory estimate):
        a drawn point and its baseline each at most."""
        return 2 * min(total, samples) if self.takes_samples else total


# numpy's integers hold a grid of fewer points; a sweep of ten axes of 100 values holds 10^20
INT64_POINTS = 2**63


def random_offset(counts: tuple[int, ...], rng: np.random.Generator) -> int:
    """A uniform offset into a block whose axes have ``counts`` values (last fastest), a
    digit per axis: exact at any size."""
    offset = 0
    for c in counts:
        offset = offset * c + int(rng.integers(c))
    return offset


SAMPLERS: Registry[Sampler] = Registry(
    "sweep sampler",
    package="nmp.evaluate.samplers",
    marker=r"^SAMPLERS\.register\(",
    order=lambda sampler: sampler.name,
)


def check_sampling(sampling: str, samples: int) -> None:
    """A sweep file's ``sampling`` names a sampler, and ``samples`` is given where it takes
    them and only there (errors at those keys)."""
    try:
        sampler = SAMPLERS.get(sampling)
    except NmpError as exc:
        raise KeyedValueError("sampling", exc.message) from None
    if sampler.takes_samples and samples <= 0:
        raise KeyedValueError("samples", f"{sampling} sampling needs samples = N > 0")
    if not sampler.takes_samples and samples:
        takers = [name for name in SAMPLERS.names() if SAMPLERS.get(name).takes_samples]
        raise KeyedValueError(
            "samples", f"only used with sampling = {' or '.join(map(repr, takers))}"
        )
