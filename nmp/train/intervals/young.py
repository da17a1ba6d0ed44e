"""Young's interval, sqrt(2 δ M) (Young, CACM 1974)."""

from __future__ import annotations

from nmp.train.checkpoint import young_interval
from nmp.train.intervals import INTERVAL_RULES, IntervalRule


class Young(IntervalRule):
    name = "young"
    description = "Young's first-order optimum sqrt(2 delta M)"
    rank = 0

    def intervals_ns(
        self, delta_ns: float, mtbf_ns: float, minutes: tuple[float, ...]
    ) -> tuple[float, ...]:
        return (young_interval(delta_ns, mtbf_ns),)


INTERVAL_RULES.register(Young())
