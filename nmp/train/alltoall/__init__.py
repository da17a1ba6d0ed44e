"""The embedding all-to-all compressed as SC'24 does, one module per job:

- :mod:`~nmp.train.alltoall.exchange`: the exchange itself (a torch autograd function), which
  the trainer uses (nothing above it is imported from here);
- :mod:`~nmp.train.alltoall.report`: a run's figures and text, the comparison's row;
- :mod:`~nmp.train.alltoall.study`, :mod:`~nmp.train.alltoall.plot`: the training half of
  ``nmp evaluate papers/sc24-*`` (SC'24's accuracy claim trains through them:
  ``nmp/papers/sc24/model.py``).

Import each name from its module (the package itself re-exports nothing: no lazy table).
"""
