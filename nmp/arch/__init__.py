"""Memory-side architectures that execute embedding gather-reduce and parity XOR.

A design point flows through named stages (docs/arch-model.md): profile (:mod:`.profile`) ->
partition (:mod:`.partition`, :func:`.placement.solve_cross_level`) -> place (the policy, then
:func:`.placement.place_rows` with :mod:`.replication` and :mod:`.rankcache`) -> lower
(:mod:`.lowering`, :mod:`.salp`) -> replay (:mod:`.replay`) -> combine bounds (:mod:`.bounds`,
:mod:`.timing`, energy by where data moves in :mod:`.energy`).

- :mod:`nmp.arch.spec`: :class:`ArchSpec` (TOML presets in ``models/arch/``).
- :mod:`nmp.arch.policies`: one module per placement policy (host, horizontal, vertical,
  cross-level) behind the :class:`~nmp.arch.policies.PlacementPolicy` protocol.
- :mod:`nmp.arch.architecture`: :class:`Architecture` with ``gather_reduce`` (functional and
  timed) and ``parity_update`` (:mod:`nmp.arch.parity`).
- :mod:`nmp.arch.point`: ``load_arch``, ``run_design_point`` (``nmp run``), ``catalog_rows``.
"""

from nmp.arch.architecture import Architecture
from nmp.arch.point import catalog_rows, load_arch, run_design_point
from nmp.arch.spec import ArchSpec, load_arch_spec

__all__ = [
    "ArchSpec",
    "Architecture",
    "catalog_rows",
    "load_arch",
    "load_arch_spec",
    "run_design_point",
]
