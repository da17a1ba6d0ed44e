"""Daly's higher-order interval (Daly, FGCS 2006)."""

from __future__ import annotations

from nmp.train.checkpoint import daly_interval
from nmp.train.intervals import INTERVAL_RULES, IntervalRule


class Daly(IntervalRule):
    name = "daly"
    description = "Daly's higher-order optimum (M when delta >= 2M)"
    rank = 1

    def intervals_ns(
        self, delta_ns: float, mtbf_ns: float, minutes: tuple[float, ...]
    ) -> tuple[float, ...]:
        return (daly_interval(delta_ns, mtbf_ns),)


INTERVAL_RULES.register(Daly())
