"""The ``normal`` pooling law: round(N(mean, std)) clipped to [low, high]."""

from __future__ import annotations

import numpy as np

from nmp.config import KeyedValueError
from nmp.workload.pooling_laws import POOLING_LAWS, Pooling, PoolingLaw
from nmp.workload.pooling_laws.bounds import check_bounds


class Normal(PoolingLaw):
    name = "normal"
    description = "round(N(mean, std)) clipped to [low, high]"
    rank = 2

    def check(self, pooling: Pooling) -> None:
        check_bounds(pooling)
        if pooling.std < 0:
            raise KeyedValueError("std", "must be >= 0")
        if not pooling.low <= pooling.mean <= pooling.high:
            raise KeyedValueError(
                "mean", f"must lie in [low, high] = [{pooling.low}, {pooling.high}]"
            )

    def mean(self, pooling: Pooling) -> float:
        return float(pooling.mean)  # the clipped normal taken at its mean

    def describe(self, pooling: Pooling) -> str:
        return f"N({pooling.mean:g},{pooling.std:g})[{pooling.low},{pooling.high}]"

    def lengths(self, rng: np.random.Generator, pooling: Pooling, batch: int) -> np.ndarray:
        draws = np.rint(rng.normal(pooling.mean, pooling.std, batch))
        return np.clip(draws, pooling.low, pooling.high).astype(np.int64)


POOLING_LAWS.register(Normal())
