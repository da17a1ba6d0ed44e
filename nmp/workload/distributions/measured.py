"""The ``measured`` access distribution: rows drawn from the popularity classes fitted to a
published production reuse histogram (:mod:`nmp.workload.locality`; ``data/locality/``),
``locality = "meta-2022"`` (the default) naming ``data/locality/<name>.toml``.

Each table gets the classes laid out on its own rows (:func:`~nmp.workload.locality.table_layout`:
the hot classes keep their per-lookup probability, the cold tail fills the rest of the table),
and ranks go through the workload's seeded permutation as Zipf's do: hot rows are scattered in
memory, the convention of FBGEMM's benchmark generator (it shuffles row ids after sampling).
One uniform per lookup, vectorized."""

from __future__ import annotations

import numpy as np

from nmp.config import KeyedValueError
from nmp.workload.distributions import DISTRIBUTIONS, AccessDistribution
from nmp.workload.locality import DEFAULT_LOCALITY, load_histogram, locality_names, table_layout
from nmp.workload.ranked import ranked_rows
from nmp.workload.spec import WorkloadSpec


def locality_of(spec: WorkloadSpec) -> str:
    """The measured locality a workload draws from (its ``locality``, else the default)."""
    return spec.locality or DEFAULT_LOCALITY


class Measured(AccessDistribution):
    name = "measured"
    description = (
        "popularity classes fitted to a published production reuse histogram (data/locality)"
    )
    rank = 4
    params = ("locality",)

    def draw(self, spec: WorkloadSpec, table: int, rng: np.random.Generator, n: int) -> np.ndarray:
        rows = spec.tables[table].rows
        ranks = table_layout(locality_of(spec), rows).ranks(rng.random(n), rows)
        return ranked_rows(spec, table, ranks)

    def head_mass(self, spec: WorkloadSpec, table: int, k: int) -> float:
        rows = spec.tables[table].rows
        return table_layout(locality_of(spec), rows).head_mass(max(0, min(k, rows)))

    def check(self, spec: WorkloadSpec) -> None:
        # a file lookup, not a registry one (the data's names, not code's)
        if spec.locality and spec.locality not in locality_names():
            raise KeyedValueError(
                "locality",
                f"unknown measured locality '{spec.locality}' "
                f"(known: {', '.join(locality_names()) or 'none'}; data/locality/*.toml)",
            )

    def describe(self, spec: WorkloadSpec) -> str:
        return f"measured ({locality_of(spec)} reuse histogram)"

    def locality_source(self, spec: WorkloadSpec) -> str:
        return load_histogram(locality_of(spec)).source


DISTRIBUTIONS.register(Measured())

__all__ = ["Measured", "locality_of"]
