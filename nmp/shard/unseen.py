"""How statistics-driven sharders weigh the rows a profile never saw (``nmp shard --unseen``, a
shard study's ``params.unseen``): a small family, registered here. An estimator gives the share
of future lookups that a table's never-seen rows get; :meth:`nmp.shard.stats.TableStats.classes`
lets the seen classes share the rest in proportion to their counts. (No numpy at import: the
CLI lists the names.)"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from nmp.registry import Registry


@dataclass(frozen=True)
class UnseenEstimator:
    """The share of future lookups a table's never-seen rows get, from its profile
    (``mass(stats)``: 0 to 1); the seen classes share the rest in proportion to their counts."""

    name: str
    description: str
    mass: Callable[[Any], float]  # of a nmp.shard.stats.TableStats (which imports this module)


UNSEEN_ESTIMATORS: Registry[UnseenEstimator] = Registry("unseen-row estimator")
UNSEEN_ESTIMATORS.register(
    UnseenEstimator("zero", "no lookups: RecShard's statistics", lambda stats: 0.0)
)
UNSEEN_ESTIMATORS.register(
    UnseenEstimator(
        "good-turing",
        "the Good-Turing share: rows seen once / lookups (Good 1953)",
        lambda stats: stats.unseen_mass(),
    )
)
# the default of every sharder run: its rows are labelled by the sharder alone
DEFAULT_UNSEEN = "zero"
