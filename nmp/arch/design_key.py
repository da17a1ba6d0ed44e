"""The part of a design its set-up stages read: a key for sharing that set-up between designs.

A design's access profile, partition (with its calibration replay) and warmed caches depend on
what times the design, never on what it costs: a field whose name carries an energy or area
unit (``pj``, ``mm2``, ``energy``: the project names every figure with its unit) only feeds
:mod:`nmp.arch.energy` and :mod:`nmp.arch.area`. :func:`timing_key` is the design's value with
those fields left out, so that a sweep of an energy or area figure (``arch.rank.pj_per_add``)
shares one set-up; tests/arch/test_design_key.py checks that a design with every such field
tripled times identically.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

# a name segment that is an energy or area unit, or an energy group (dram_energy)
_COST_SEGMENT = re.compile(r"(?:^|_)(?:pj|mm2|energy)(?:_|$)")


def is_cost_field(name: str) -> bool:
    """Whether a spec field, by the unit in its name, is an energy or area figure."""
    return _COST_SEGMENT.search(name) is not None


def _timing_parts(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (
            type(value).__name__,
            tuple(
                (f.name, _timing_parts(getattr(value, f.name)))
                for f in dataclasses.fields(value)
                if not is_cost_field(f.name)
            ),
        )
    return repr(value)


def timing_key(spec: Any) -> str:
    """``spec`` (a frozen dataclass, nested) without its energy and area fields, as text."""
    return repr(_timing_parts(spec))


__all__ = ["is_cost_field", "timing_key"]
