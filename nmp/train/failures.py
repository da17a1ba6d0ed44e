"""Failure schedules: explicit ``(step, node[, phase])`` events, or random with an MTBF.

A failure *before* step s happens between steps s-1 and s. A failure *between* phases happens in
step s after the data units stored their new rows (commit phase 1) and before the parity units
applied the deltas (phase 2): the case the two-phase commit exists for.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from nmp.errors import NmpError

Phase = Literal["before", "between"]


@dataclass(frozen=True, order=True)
class Failure:
    step: int
    node: int
    phase: Phase = "before"


def parse_pairs(text: str, flag: str, example: str, keys: str) -> dict[str, str]:
    """``key=value,key=value`` of a failure flag (``--fail``, ``--kill``) -> its fields;
    ``keys`` lists the known ones (``|`` between alternatives), named by the error on any
    other."""
    fields: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if not sep:
            raise NmpError(f"{flag} expects key=value pairs like {example}, got '{text}'")
        if key.strip() in fields:  # (the last one was taken: node=1,node=2 failed node 2)
            raise NmpError(f"{flag}: key '{key.strip()}' given twice in '{text}'")
        fields[key.strip()] = value.strip()
    known = {k for alt in keys.split(", ") for k in alt.split("|")}
    unknown = set(fields) - known
    if unknown:
        raise NmpError(f"{flag}: unknown key '{sorted(unknown)[0]}' ({keys})")
    return fields


def parse_failure(text: str) -> Failure:
    """``step=300,node=1[,phase=between]`` -> :class:`Failure` (errors name the bad part)."""
    fields = parse_pairs(text, "--fail", "step=300,node=1", "step, node, phase")
    if "step" not in fields or "node" not in fields:
        raise NmpError(f"--fail needs step= and node=, got '{text}'")
    try:
        step, node = int(fields["step"]), int(fields["node"])
    except ValueError:
        raise NmpError(f"--fail: step and node must be integers, got '{text}'") from None
    phase = fields.get("phase", "before")
    if phase not in ("before", "between"):
        raise NmpError(f"--fail: phase must be 'before' or 'between', got '{phase}'")
    if step < 0 or node < 0:
        raise NmpError(f"--fail: step and node must be >= 0, got '{text}'")
    return Failure(step, node, phase)  # type: ignore[arg-type]


def random_failures(steps: int, nodes: int, mtbf_steps: float, seed: int) -> list[Failure]:
    """Failures as a Poisson process of the whole system with mean time ``mtbf_steps`` between
    failures, each on a uniformly chosen node (seeded)."""
    rng = np.random.default_rng([seed, 0xFA11])
    out: list[Failure] = []
    seen: set[Failure] = set()
    t = 0.0
    while True:
        t += rng.exponential(mtbf_steps)
        if t >= steps:
            return out
        f = Failure(int(t), int(rng.integers(nodes)))
        if f not in seen:  # two draws in one step on one node are one failure
            seen.add(f)
            out.append(f)


def check_schedule(failures: list[Failure], steps: int, nodes: int) -> list[Failure]:
    seen: set[Failure] = set()
    for f in failures:
        if f in seen:
            raise NmpError(
                f"--fail step={f.step},node={f.node},phase={f.phase} is given twice "
                "(a node fails once at a time; give distinct failures)"
            )
        seen.add(f)
        if f.node >= nodes:
            raise NmpError(f"--fail node={f.node}: the store has nodes 0..{nodes - 1}")
        if f.step >= steps:
            raise NmpError(f"--fail step={f.step}: the run has steps 0..{steps - 1}")
    return sorted(failures)
