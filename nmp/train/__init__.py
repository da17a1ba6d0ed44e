"""Functional DLRM training on the modeled near-memory hardware, with node failures.

- :mod:`nmp.train.model`: the dense half of DLRM in torch (bottom MLP, dot interaction, top MLP).
- :mod:`nmp.train.data`: synthetic Criteo-like data with a hidden teacher; Criteo TSV reader.
- :mod:`nmp.train.store`: embedding records (rows + optimizer state) striped with parity over N
  memory nodes (``nmp.coding``): degraded reads, two-phase commit, range-by-range rebuild.
- :mod:`nmp.train.strategies`: ``ecrec``, ``checkpoint``, ``cpr-mfu``, ``cpr-ssu``, ``none``.
- :mod:`nmp.train.cost`, :mod:`nmp.train.hwcost`: modeled time and energy from ``nmp.arch``.
- :mod:`nmp.train.trainer`: the loop; :mod:`nmp.train.compare`, :mod:`nmp.train.extrapolate`:
  the tables of ``nmp train --compare`` and ``--extrapolate``.
"""
