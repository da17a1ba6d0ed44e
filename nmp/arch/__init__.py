"""Memory-side architectures that execute embedding gather-reduce and parity XOR.

- :mod:`nmp.arch.spec`: :class:`ArchSpec` (TOML presets in ``models/arch/``).
- :mod:`nmp.arch.layout`, :mod:`nmp.arch.placement`, :mod:`nmp.arch.partition`: which unit owns
  which banks and rows (horizontal, vertical, cross-level LP, hot-row replication, RankCache).
- :mod:`nmp.arch.architecture`: :class:`Architecture` with ``gather_reduce`` (functional, timed
  by the DRAM engine through :mod:`nmp.arch.lowering` and :mod:`nmp.arch.timing`) and
  ``parity_update`` (:mod:`nmp.arch.parity`).
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
