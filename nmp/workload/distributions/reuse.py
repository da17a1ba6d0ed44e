"""The ``reuse`` access distribution: a hot set of ``hot_rows`` rows receives a fraction
``hot_fraction`` of the accesses (uniform in the hot set, or Zipf with ``hot_alpha``), the rest
go uniformly to the other rows; ``reuse = high|medium|low|random`` selects the levels of
:data:`nmp.workload.spec.REUSE_LEVELS`."""

from __future__ import annotations

import numpy as np

from nmp.config import KeyedValueError
from nmp.workload.distributions import DISTRIBUTIONS, AccessDistribution, zipf_head_mass
from nmp.workload.ranked import reuse_rows
from nmp.workload.spec import REUSE_LEVELS, WorkloadSpec


class Reuse(AccessDistribution):
    name = "reuse"
    description = "a hot set with a share of the accesses, the rest uniform"
    rank = 3
    params = ("reuse", "hot_rows", "hot_fraction")

    def draw(self, spec: WorkloadSpec, table: int, rng: np.random.Generator, n: int) -> np.ndarray:
        return reuse_rows(spec, table, rng, n)

    def head_mass(self, spec: WorkloadSpec, table: int, k: int) -> float:
        rows = spec.tables[table].rows
        hot, frac = spec.hot_set(table)
        k = max(0, min(k, rows))
        if hot <= 0 or frac <= 0:
            return k / rows
        in_hot = min(k, hot)
        if spec.hot_alpha > 0:
            mass = frac * zipf_head_mass(hot, in_hot, spec.hot_alpha)
        else:
            mass = frac * in_hot / hot
        cold = rows - hot
        return mass + ((1.0 - frac) * (k - in_hot) / cold if cold > 0 else 0.0)

    def check(self, spec: WorkloadSpec) -> None:
        if not spec.reuse and (spec.hot_rows is None or spec.hot_fraction is None):
            raise KeyedValueError(
                "reuse",
                "distribution 'reuse' needs a level (high, medium, low, random) "
                "or both hot_rows and hot_fraction",
            )

    def describe(self, spec: WorkloadSpec) -> str:
        level_rows, level_frac = REUSE_LEVELS.get(spec.reuse, (0, 0.0))
        rows = level_rows if spec.hot_rows is None else spec.hot_rows
        frac = level_frac if spec.hot_fraction is None else spec.hot_fraction
        if rows == 0 or frac == 0:
            return f"reuse {spec.reuse or 'custom'} (uniform)"
        return f"reuse {spec.reuse or 'custom'} ({rows} hot rows/table, {frac:.0%})"


DISTRIBUTIONS.register(Reuse())
