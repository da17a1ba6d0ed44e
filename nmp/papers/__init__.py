"""The papers the kit reproduces: one folder per paper, its claims beside the code answering them.

``nmp/papers/<paper>/`` holds

- ``claims.toml``: the paper's ``[paper]`` table, its evaluated ``[setup]`` and its published
  ``[[claims]]``, each naming the ``model`` function (and optionally the ``bound`` function)
  that answers it (the schema: :mod:`nmp.validate.claims`);
- ``model.py``: the paper's claim models (decorated :func:`nmp.plugins.claim_model`), and
  ``bounds.py`` where its speed claims have first-principles bounds of their own (a separate
  module, so that a bound visibly reads only the stated resources, never the model);
- ``golden.json``: the golden fixture of its values (``tests/validate/test_golden.py``,
  written with ``python -m tests.validate.test_golden --write <paper>``).

The modules at this package's top are claim models several papers share: the near-memory
design-point comparisons of RecNMP, TRiM and ReCross (:mod:`nmp.papers.nmp_points`,
:mod:`nmp.papers.nmp_speed`, :mod:`nmp.papers.nmp_costs`); a paper's ``claims.toml`` names
them like its own. Adding a paper is adding its folder (and its line in PAPERS.md):
``nmp validate`` finds it by globbing ``*/claims.toml`` here (it never imports this package, a
layer above it), and the claim-model registry finds its functions by walking this package.
"""
