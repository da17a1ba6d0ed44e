"""The [low, high] limits the bounded pooling laws share (not a law: it registers none)."""

from __future__ import annotations

from nmp.config import KeyedValueError
from nmp.workload.pooling_laws import Pooling


def check_bounds(pooling: Pooling) -> None:
    if pooling.low < 0:
        raise KeyedValueError("low", "must be >= 0")
    if pooling.high < pooling.low:
        raise KeyedValueError("high", f"must be >= low ({pooling.low})")
