"""Fixed intervals in minutes (``interval_min``), as the papers' Ckpt-30 / Ckpt-60 rows."""

from __future__ import annotations

from nmp.errors import NmpError
from nmp.train.intervals import INTERVAL_RULES, IntervalRule


class Fixed(IntervalRule):
    name = "fixed"
    description = "every interval_min minutes (one row per value)"
    rank = 2
    takes_minutes = True

    def intervals_ns(
        self, delta_ns: float, mtbf_ns: float, minutes: tuple[float, ...]
    ) -> tuple[float, ...]:
        return tuple(m * 60e9 for m in minutes)

    def check(self, minutes: tuple[float, ...]) -> None:
        if not minutes or min(minutes) <= 0:
            raise NmpError("interval fixed needs interval_min > 0")

    def label(self, name: str, minutes: tuple[float, ...], i: int) -> str:
        return f"{name}-{minutes[i]:g}min" if len(minutes) > 1 else name


INTERVAL_RULES.register(Fixed())
