"""The ``fixed`` pooling law: every bag has ``value`` lookups."""

from __future__ import annotations

import numpy as np

from nmp.config import KeyedValueError
from nmp.workload.pooling_laws import POOLING_LAWS, Pooling, PoolingLaw


class Fixed(PoolingLaw):
    name = "fixed"
    description = "every bag has `value` lookups"
    rank = 0

    def check(self, pooling: Pooling) -> None:
        if pooling.value < 0:
            raise KeyedValueError("value", "must be >= 0")

    def mean(self, pooling: Pooling) -> float:
        return float(pooling.value)

    def describe(self, pooling: Pooling) -> str:
        return str(pooling.value)

    def lengths(self, rng: np.random.Generator, pooling: Pooling, batch: int) -> np.ndarray:
        return np.full(batch, pooling.value, dtype=np.int64)


POOLING_LAWS.register(Fixed())
