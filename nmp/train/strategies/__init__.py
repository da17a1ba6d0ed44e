"""Recovery strategies: what happens when a memory node fails during training.

- ``ecrec``: erasure-coded store; training never pauses. Lost rows are decoded from survivors
  on read; a background rebuild restores the node range by range (updates to the range in
  flight are buffered and applied after); the two-phase commit's log rolls a half-done update
  forward when a node fails between data write and parity delta.
- ``checkpoint``: full recovery. Checkpoints to real files every τ (Young or Daly with the
  modeled write time and the MTBF); a failure rolls every node back to the last checkpoint and
  re-executes the lost steps.
- ``cpr-mfu`` / ``cpr-ssu``: partial recovery (CPR, Maeng et al. MLSys'21). Saves every τ, with
  τ chosen from the bound on the portion of lost samples; every ``cpr_full_every``-th save is a
  full checkpoint, the others save a subset of rows: the most-frequently-used since the last
  save (MFU: a counter per row, top-k, the saved rows' counters reset) or the rows touched by a
  sample of the inputs (SSU). A failure reloads only the failed node's rows.
- ``none``: the failed node's rows are re-initialized.
- ``failure-free``: no protection (the baseline that overheads are measured against).

Each variant is one module that registers its classes (:func:`register`) in :data:`REGISTRY`
(an ``nmp.registry.Registry`` that imports the modules on first use); the CLI's list, help,
the comparison's rows, the models at scale and the distributed trainer's recovery come from
it and from each class's attributes (``uses_parity``, ``schedule``, ``rolls_back``, ...) and
class methods (``scale_expected``, ``restore_replacement``, ...), never from a name.
The dense MLP is replicated on ``dense_replicas`` nodes in every strategy: a failure erases the
replica on its node and a survivor is copied; with no survivor the checkpointing strategies
reload it from their checkpoint and the others re-create it from the seed (its learned weights
are lost, an event says so).
"""

from __future__ import annotations

from nmp.train.strategies.base import (
    REGISTRY,
    Strategy,
    baseline_name,
    make_strategy,
    register,
    strategy_help,
    strategy_names,
)

__all__ = [
    "REGISTRY",
    "Strategy",
    "baseline_name",
    "make_strategy",
    "register",
    "strategy_help",
    "strategy_names",
]
