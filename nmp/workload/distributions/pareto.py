"""The ``pareto`` access distribution: torchrec's multi-hot generator, rank = floor(Lomax(alpha))
mod rows, alpha 0.25 by default (``np.random.pareto(a=0.25)`` in torchrec's ``Multihot``)."""

from __future__ import annotations

import numpy as np

from nmp.workload import sampling
from nmp.workload.distributions import DISTRIBUTIONS, AccessDistribution
from nmp.workload.ranked import ranked_rows
from nmp.workload.spec import DEFAULT_PARETO_ALPHA, WorkloadSpec


class Pareto(AccessDistribution):
    name = "pareto"
    description = "torchrec's multi-hot: floor(Lomax(alpha)) mod rows"
    rank = 2
    params = ("alpha",)
    default_alpha = DEFAULT_PARETO_ALPHA

    def draw(self, spec: WorkloadSpec, table: int, rng: np.random.Generator, n: int) -> np.ndarray:
        rows = spec.tables[table].rows
        return ranked_rows(spec, table, sampling.pareto_ranks(rng, n, rows, spec.effective_alpha))


DISTRIBUTIONS.register(Pareto())
