"""Functional DLRM training on the modeled near-memory hardware, with node failures.

- :mod:`nmp.train.model`: the dense half of DLRM in torch (bottom MLP, dot interaction, top MLP).
- :mod:`nmp.train.data`: synthetic Criteo-like data with a hidden teacher; Criteo TSV reader.
- :mod:`nmp.train.store`: embedding records (rows + optimizer state) striped with parity over N
  memory nodes (``nmp.coding``): degraded reads, two-phase commit, range-by-range rebuild.
- :mod:`nmp.train.shard`: the embedding servers: where rows live, each server's memory as an
  ``nmp.arch`` design whose units gather-reduce its rows; :mod:`nmp.train.dense`: the workers'
  micro-batch forward/backward, shared by both trainers.
- :mod:`nmp.train.dist`: the same training as processes on torch.distributed (servers,
  workers, real SIGKILLs, recovery), ``nmp train --procs``; :mod:`nmp.train.traffic`: its bytes
  per unit of work, which the scale model charges; :mod:`nmp.train.measured`: the scale model
  against the small cluster (``nmp validate``).
- :mod:`nmp.train.strategies`: the recovery strategies; each registers itself
  (``strategies.REGISTRY``: ``nmp train --strategy`` help, ``--compare`` rows and the scale
  models derive from it).
- :mod:`nmp.train.cost`, :mod:`nmp.train.hwcost`: modeled time and energy from ``nmp.arch``.
- :mod:`nmp.train.trainer`: the loop; :mod:`nmp.train.compare`, :mod:`nmp.train.seeds`: the
  table of ``nmp train --compare`` (one seed, or several with intervals).
- :mod:`nmp.train.setup`, :mod:`nmp.train.extrapolate`, :mod:`nmp.train.crossover`: the papers'
  setups (``workloads/train/``; a deployment and its limits: :mod:`nmp.train.deployment`), the
  Monte-Carlo comparison at their scale (a step's costs: :mod:`nmp.train.step_costs`; its table
  and closing note: :mod:`nmp.train.extrapolate_report`) and where ECRec overtakes;
  :mod:`nmp.train.study` runs both for ``nmp evaluate papers/ecrec|cpr``;
  ECRec's and CPR's published claims are answered from them in ``nmp/papers/{ecrec,cpr}/``.
- :mod:`nmp.train.alltoall`: the embedding all-to-all compressed with an ``nmp.compress`` codec
  (``train.compress``, SC'24), one module per job: the exchange, its figures, the training half
  of ``nmp evaluate papers/sc24-*`` (SC'24's accuracy claim: ``nmp/papers/sc24/``).
"""
