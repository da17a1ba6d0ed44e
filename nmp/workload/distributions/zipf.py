"""The ``zipf`` access distribution: bounded Zipf, p(rank i) ∝ i^-alpha for i = 1..rows,
sampled exactly by rejection-inversion; ranks go through the workload's seeded permutation so
hot rows are scattered (as the DRAM reference generator does)."""

from __future__ import annotations

import numpy as np

from nmp.config import KeyedValueError
from nmp.workload import sampling
from nmp.workload.distributions import DISTRIBUTIONS, AccessDistribution, zipf_head_mass
from nmp.workload.ranked import ranked_rows
from nmp.workload.spec import DEFAULT_ZIPF_ALPHA, MAX_ZIPF_ALPHA, WorkloadSpec


class Zipf(AccessDistribution):
    name = "zipf"
    description = "bounded Zipf(alpha) over scattered ranks (rejection-inversion)"
    rank = 1
    params = ("alpha",)
    default_alpha = DEFAULT_ZIPF_ALPHA

    def draw(self, spec: WorkloadSpec, table: int, rng: np.random.Generator, n: int) -> np.ndarray:
        rows = spec.tables[table].rows
        return ranked_rows(spec, table, sampling.zipf_ranks(rng, n, rows, spec.effective_alpha))

    def head_mass(self, spec: WorkloadSpec, table: int, k: int) -> float:
        return zipf_head_mass(spec.tables[table].rows, k, spec.effective_alpha)

    def check(self, spec: WorkloadSpec) -> None:
        if spec.alpha is not None and spec.alpha > MAX_ZIPF_ALPHA:
            raise KeyedValueError(
                "alpha", f"must be <= {MAX_ZIPF_ALPHA:g} for zipf, got {spec.alpha:g}"
            )

    def zipf_exponent(self, spec: WorkloadSpec) -> float:
        return spec.effective_alpha


DISTRIBUTIONS.register(Zipf())
