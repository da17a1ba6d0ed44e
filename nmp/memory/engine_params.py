"""The DRAM engines' configuration of a run, as one named structure.

Both engines read it: the numba reference (:func:`nmp.memory.engine.simulate`) as a numpy
record, the C engine (:func:`nmp.memory.native.simulate`) as the ``Params`` struct of
``engine_defs.h``, whose fields are these in this order (``ENGINE_PARAMS`` is built with
``align=True``, so its layout is the C compiler's; :mod:`nmp.memory.native` checks the size
against the library's ``struct_size_c``). Apart from the engines so that the C engine's path
reads it without importing numba.
"""

from __future__ import annotations

import numpy as np

from nmp.memory.engine_fields import FLOAT_FIELDS, INT_FIELDS

ENGINE_PARAMS = np.dtype(
    [(name, np.int64) for name, _ in INT_FIELDS] + [(name, np.float64) for name, _ in FLOAT_FIELDS],
    align=True,
)
FIELD_NAMES = tuple(ENGINE_PARAMS.names or ())

__all__ = [
    "ENGINE_PARAMS",
    "FIELD_NAMES",
    "FLOAT_FIELDS",
    "INT_FIELDS",
    "check_params",
    "engine_params",
]


def engine_params(**values: float) -> np.ndarray:
    """A run's configuration: a one-element array of :data:`ENGINE_PARAMS` with every field
    given by name (a missing or unknown one is an error)."""
    missing = sorted(set(FIELD_NAMES) - values.keys())
    unknown = sorted(values.keys() - set(FIELD_NAMES))
    if missing or unknown:
        raise ValueError(f"engine params: missing {missing}, unknown {unknown}")
    out = np.zeros(1, ENGINE_PARAMS)
    for name, v in values.items():
        out[name] = v
    return out


def check_params(params: np.ndarray) -> np.ndarray:
    """``params`` if it is a one-element array of :data:`ENGINE_PARAMS`, else a clear error."""
    if not isinstance(params, np.ndarray) or params.dtype != ENGINE_PARAMS or params.shape != (1,):
        raise ValueError(
            "params must be a one-element array of nmp.memory.engine_params.ENGINE_PARAMS "
            f"(got {getattr(params, 'dtype', type(params).__name__)})"
        )
    return params
