"""Placement policies: where a design's rows live and who reduces them, one module per policy.

A policy registers itself under the name a preset's ``policy`` key gives. The stages of a design
point ask the policy, never its name:

* profile / partition (:class:`nmp.arch.architecture.Architecture`): ``needs_profile``,
  ``partitions`` (a cross-level LP over the data levels);
* place: ``place`` (level, node and slot of every lookup; the shared mechanisms, hot-row
  replication and the RankCache, run inside :func:`nmp.arch.placement.place_rows`);
* lower / replay / combine bounds (:mod:`nmp.arch.timing`): ``time_batch`` and, for designs
  whose units read rows near memory, the hooks ``split``, ``lower``, ``level_work``,
  ``instruction_lookups`` and ``result_slices``;
* functional execution: ``tree_traffic`` and ``execute``.

Adding a policy is one module here that subclasses :class:`~nmp.arch.policies.base.RowPolicy`
(or implements :class:`PlacementPolicy`), calls :func:`register`, and is imported below.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np

    from nmp.arch.placement import FlatLookups, Placement
    from nmp.arch.tree import TreeTraffic
    from nmp.results import OpResult


class PlacementPolicy(Protocol):
    """What a placement policy provides (see the module docstring for the stage of each)."""

    name: str
    near_memory: bool  # units near memory reduce rows (False: the host reads every row)

    def validate(self, spec: Any) -> None: ...
    def needs_profile(self, spec: Any) -> bool: ...
    def partitions(self, spec: Any) -> bool: ...
    def issue_order(self, spec: Any, flat: FlatLookups) -> np.ndarray: ...
    def place(self, arch: Any, flat: FlatLookups, order: np.ndarray) -> Placement: ...
    def tree_traffic(self, arch: Any, flat: FlatLookups, plc: Placement) -> TreeTraffic: ...
    def execute(self, arch: Any, flat: FlatLookups, plc: Placement) -> list[np.ndarray]: ...
    def time_batch(
        self, arch: Any, flat: FlatLookups, plc: Placement, order: np.ndarray, traffic: TreeTraffic
    ) -> OpResult: ...


_REGISTRY: dict[str, PlacementPolicy] = {}


def register(policy: PlacementPolicy) -> PlacementPolicy:
    """Make ``policy`` available under ``policy.name``."""
    _REGISTRY[policy.name] = policy
    return policy


def policy_names() -> tuple[str, ...]:
    return tuple(_REGISTRY)


def get_policy(name: str) -> PlacementPolicy | None:
    """The registered policy ``name`` (None when unknown; ArchSpec.validate reports it)."""
    return _REGISTRY.get(name)


# the policies register themselves on import
from nmp.arch.policies import cross_level, horizontal, host, vertical  # noqa: E402, F401

__all__ = ["PlacementPolicy", "get_policy", "policy_names", "register"]
