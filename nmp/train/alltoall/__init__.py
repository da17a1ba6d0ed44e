"""The embedding all-to-all compressed as SC'24 does, one module per job:

- :mod:`~nmp.train.alltoall.exchange`: the exchange itself (a torch autograd function), which
  the trainer uses (nothing above it is imported from here);
- :mod:`~nmp.train.alltoall.report`: a run's figures and text, the comparison's row;
- :mod:`~nmp.train.alltoall.study`, :mod:`~nmp.train.alltoall.plot`: the training half of
  ``nmp evaluate papers/sc24-*``;
- :mod:`~nmp.train.alltoall.claim`: SC'24's accuracy claim.

The names are also reachable here (``nmp.train.alltoall:run_study``), imported on first use.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_WHERE = {
    "exchange": (
        "CLASS_FACTOR",
        "NORMAL",
        "SENSITIVE",
        "TOLERANT",
        "CompressedAllToAll",
        "DirectionStats",
        "classify_tables",
        "make_alltoall",
    ),
    "report": (
        "SUMMARY_KEYS",
        "compressed_row",
        "compression_report",
        "compression_summary",
        "parity_delta_ratio",
        "print_compression",
    ),
    "study": ("TRAIN_DEFAULTS", "auc_rows", "check_params", "check_train_params", "run_study"),
    "plot": ("plot_auc",),
    "claim": ("accuracy_claim",),
}
_MODULE_OF = {name: mod for mod, names in _WHERE.items() for name in names}


def __getattr__(name: str) -> Any:
    mod = _MODULE_OF.get(name)
    if mod is None:
        raise AttributeError(f"module 'nmp.train.alltoall' has no attribute {name!r}")
    return getattr(import_module(f"nmp.train.alltoall.{mod}"), name)


__all__ = sorted(_MODULE_OF)
