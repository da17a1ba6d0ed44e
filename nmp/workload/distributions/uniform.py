"""The ``uniform`` access distribution: every row equally likely."""

from __future__ import annotations

import numpy as np

from nmp.workload.distributions import DISTRIBUTIONS, AccessDistribution
from nmp.workload.spec import WorkloadSpec


class Uniform(AccessDistribution):
    name = "uniform"
    description = "every row equally likely"
    rank = 0

    def draw(self, spec: WorkloadSpec, table: int, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.integers(0, spec.tables[table].rows, n, dtype=np.int64)

    def head_mass(self, spec: WorkloadSpec, table: int, k: int) -> float:
        return min(max(k, 0), spec.tables[table].rows) / spec.tables[table].rows

    def zipf_exponent(self, spec: WorkloadSpec) -> float:
        return 0.0  # p(rank i) ∝ i^0

    def locality_source(self, spec: WorkloadSpec) -> str:
        return "uniform (no reuse beyond chance)"


DISTRIBUTIONS.register(Uniform())
