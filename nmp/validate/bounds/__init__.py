"""First-principles bounds of the GPU, sharding and compression papers' speed claims.

Each module holds the ``bound`` functions a paper's claims file names (``bound =
"nmp.validate.bounds.<paper>:<function>"``). A bound function is called as
``fn(quick=..., setup=..., **args)`` with the claim's arguments and returns ``bound`` (the
most the claimed ratio can be), ``bound_terms`` (every term with its arithmetic, the choices
it takes and the alternatives) and ``bound_detail``. It reads the stated resources only
(presets, the workload's statistics) and never the model: a design at its most favourable
legitimate choices over a baseline at its least favourable, each at its physical floor, the
convention :mod:`nmp.arch.first_principles` follows for the near-memory designs.
"""
