"""Memory-side architectures that execute embedding gather-reduce and parity XOR.

A design point flows through named stages (docs/arch-model.md): profile (:mod:`.profile`) ->
partition (:mod:`.partition`, :func:`.placement.solve_cross_level`) -> place (the policy, then
:func:`.placement.place_rows` with :mod:`.replication` and :mod:`.rankcache`) -> lower
(:mod:`.lowering`, :mod:`.salp`) -> replay (:mod:`.replay`) -> combine bounds (:mod:`.bounds`,
:mod:`.timing`, energy by where data moves in :mod:`.energy`).

- :mod:`nmp.arch.spec`: :class:`ArchSpec` (TOML presets in ``models/arch/``, loaded by
  :mod:`nmp.arch.presets`).
- :mod:`nmp.arch.policies`: one module per placement policy (host, horizontal, vertical,
  cross-level) behind the :class:`~nmp.arch.policies.PlacementPolicy` protocol.
- :mod:`nmp.arch.architecture`: :class:`Architecture` with ``gather_reduce`` (functional and
  timed) and ``parity_update`` (:mod:`nmp.arch.parity`).
- :mod:`nmp.arch.point`: ``load_arch``, ``run_design_point`` (``nmp run``), ``catalog_rows``.
- :mod:`nmp.arch.family`: the NMP design family (what ``nmp run`` and sweeps ask of a design).

The names below load on first access (PEP 562): the models compile with numba and import scipy
(seconds), which a lookup of a spec or a family does not need.
"""

from __future__ import annotations

import importlib
from typing import Any

# name -> module that defines it
_LAZY = {
    "ArchSpec": "nmp.arch.spec",
    "Architecture": "nmp.arch.architecture",
    "catalog_rows": "nmp.arch.point",
    "load_arch": "nmp.arch.point",
    "load_arch_spec": "nmp.arch.presets",
    "run_design_point": "nmp.arch.point",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'nmp.arch' has no attribute '{name}'")


def __dir__() -> list[str]:
    return sorted(__all__)
