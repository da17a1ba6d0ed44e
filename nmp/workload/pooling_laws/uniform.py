"""The ``uniform`` pooling law: a bag's lookups are an integer drawn evenly from [low, high]."""

from __future__ import annotations

import numpy as np

from nmp.workload.pooling_laws import POOLING_LAWS, Pooling, PoolingLaw
from nmp.workload.pooling_laws.bounds import check_bounds


class Uniform(PoolingLaw):
    name = "uniform"
    description = "an integer in [low, high], each equally likely"
    rank = 1

    def check(self, pooling: Pooling) -> None:
        check_bounds(pooling)

    def mean(self, pooling: Pooling) -> float:
        return (pooling.low + pooling.high) / 2

    def describe(self, pooling: Pooling) -> str:
        return f"U[{pooling.low},{pooling.high}]"

    def lengths(self, rng: np.random.Generator, pooling: Pooling, batch: int) -> np.ndarray:
        return rng.integers(pooling.low, pooling.high + 1, batch, dtype=np.int64)


POOLING_LAWS.register(Uniform())
