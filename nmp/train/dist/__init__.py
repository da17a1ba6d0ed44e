"""The distributed trainer: embedding servers and data-parallel workers as real processes on
``torch.distributed`` (gloo), real failures (SIGKILL) and recovery.

- :mod:`~nmp.train.dist.launch`: the launcher (rendezvous store, processes, kills, generations);
- :mod:`~nmp.train.dist.proc`: one process's main loop over generations;
- :mod:`~nmp.train.dist.server`, :mod:`~nmp.train.dist.worker`: the two roles' steps;
- :mod:`~nmp.train.dist.comm`: typed messages over a gloo group, traffic counted by kind;
- :mod:`~nmp.train.dist.control`: generations, the two-phase step commit, fault points;
- :mod:`~nmp.train.dist.files`: checkpoint files (full and partial saves);
- :mod:`~nmp.train.dist.outcome`: the final state's fingerprint, parity's check, traffic;
- :mod:`~nmp.train.dist.report`: ``nmp train --procs``: measured against modeled.

The numerics are the single-process trainer's (:mod:`nmp.train.shard`, :mod:`nmp.train.dense`),
called in the same order, so a failure-free run of both ends in the same bits.
"""
