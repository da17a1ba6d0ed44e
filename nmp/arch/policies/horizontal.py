"""Horizontal placement (RecNMP, TRiM-G, TRiM-B): whole rows on the units of one data level,
global row id modulo the level's node count (the usual table interleave)."""

from __future__ import annotations

from nmp.arch.policies import register
from nmp.arch.policies.base import RowPolicy
from nmp.config import KeyedValueError


class Horizontal(RowPolicy):
    """RecNMP, TRiM: whole rows on one level's units, row id modulo the node count."""

    name = "horizontal"

    def validate(self, spec) -> None:
        super().validate(spec)
        if len(spec.data_levels) > 1:
            raise KeyedValueError("policy", "rows on several levels need policy 'cross-level'")


register(Horizontal())
