"""Checkpoint interval rules: how often a full checkpoint is written, one registered object per
``interval`` name (a deployment's or a training config's), one module per rule in this package.

An :class:`IntervalRule` turns the checkpoint's write time δ and the system MTBF M (both in ns)
into the intervals it prices (``intervals_ns``), checks the minutes a fixed rule is given
(``check``) and names each interval in listings (``label``). The scale model
(:mod:`nmp.train.extrapolate`) and the checkpointing strategy ask :data:`INTERVAL_RULES`, never a
rule's name.
"""

from __future__ import annotations

from typing import ClassVar

from nmp.registry import Registry


class IntervalRule:
    """One way to choose the checkpoint interval; subclasses register an instance."""

    name: ClassVar[str]
    description: ClassVar[str]
    rank: ClassVar[int]  # listing order
    takes_minutes: ClassVar[bool] = False  # priced at the ``interval_min`` given, not a formula

    def intervals_ns(
        self, delta_ns: float, mtbf_ns: float, minutes: tuple[float, ...]
    ) -> tuple[float, ...]:
        raise NotImplementedError

    def check(self, minutes: tuple[float, ...]) -> None:
        """Raise an NmpError for minutes this rule cannot take."""

    def label(self, name: str, minutes: tuple[float, ...], i: int) -> str:
        """The name of the ``i``-th interval's row in a listing of strategy ``name``."""
        return name

    def __repr__(self) -> str:
        return f"<checkpoint interval rule {self.name}>"


#: The checkpoint interval rules by name: the modules of this package register theirs.
INTERVAL_RULES: Registry[IntervalRule] = Registry(
    "checkpoint interval rule", package=__name__, order=lambda rule: rule.rank
)
