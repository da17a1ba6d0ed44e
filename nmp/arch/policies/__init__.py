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
(or implements :class:`PlacementPolicy`), calls :func:`register`, and is listed in
:data:`POLICIES` (which imports the modules on its first lookup).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from nmp.config import KeyedValueError
from nmp.errors import NmpError, SpecError
from nmp.registry import Registry

if TYPE_CHECKING:
    import numpy as np

    from nmp.arch.placement import FlatLookups, Placement
    from nmp.arch.tree import TreeTraffic
    from nmp.results import OpResult


class PlacementPolicy(Protocol):
    """What a placement policy provides (see the module docstring for the stage of each)."""

    name: str
    near_memory: bool  # units near memory reduce rows (False: the host reads every row)
    slices_rows: bool  # every lookup reaches every rank, a slice of its row each (vertical)

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


#: The placement policies by name; each module of this package registers its policy when imported.
POLICIES: Registry[PlacementPolicy] = Registry("placement policy", package=__name__)
register = POLICIES.register


def check_policy(spec: Any, *, file: str | None = None, root: str = "") -> PlacementPolicy:
    """The policy a design's spec names, after the policy checked that the spec suits it
    (levels, partitioning); a SpecError naming ``file`` and the key (under ``root``) if not.

    Called where a design is assembled (loading its preset, building an Architecture), never
    inside the spec: the spec stays data and the policies may import it."""
    prefix = f"{root}." if root else ""
    try:
        policy = POLICIES.get(spec.policy)
    except NmpError as exc:
        raise SpecError(exc.message, file=file, key=f"{prefix}policy") from None
    try:
        policy.validate(spec)
    except KeyedValueError as exc:
        raise SpecError(exc.message, file=file, key=f"{prefix}{exc.key}") from None
    return policy


__all__ = ["POLICIES", "PlacementPolicy", "check_policy", "register"]
