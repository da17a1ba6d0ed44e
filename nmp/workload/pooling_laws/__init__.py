"""Pooling laws: how many lookups each bag of a table has, one registered object per
``pooling.dist`` name, one module per law in this package.

A :class:`PoolingLaw` knows what a stage asks about it, so no stage tests a law's name:
``check`` (its own fields' limits), ``mean`` (expected lookups per bag), ``describe`` (a short
label for listings) and ``lengths`` (the lookups of ``batch`` bags, drawn from a generator).
:class:`nmp.workload.spec.PoolingSpec` and :func:`nmp.workload.sampling.pooling_lengths` ask
:data:`POOLING_LAWS`; adding a law is adding a module here that registers one.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from nmp.registry import Registry

# A nmp.workload.spec.PoolingSpec: not imported here, since the spec asks this registry.
Pooling = Any


class PoolingLaw:
    """One law of lookups per bag (see the module docstring); subclasses register an instance."""

    name: ClassVar[str]
    description: ClassVar[str]
    rank: ClassVar[int]  # listing order

    def check(self, pooling: Pooling) -> None:
        """Raise a KeyedValueError for a value of its own fields it cannot take."""

    def mean(self, pooling: Pooling) -> float:
        raise NotImplementedError

    def describe(self, pooling: Pooling) -> str:
        raise NotImplementedError

    def lengths(self, rng: np.random.Generator, pooling: Pooling, batch: int) -> np.ndarray:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<pooling law {self.name}>"


#: The pooling laws by name: the modules of this package register theirs.
POOLING_LAWS: Registry[PoolingLaw] = Registry(
    "pooling law", package=__name__, order=lambda law: law.rank
)
