"""Data files that name code: ``"module:function"`` references, resolved with clear errors.

Claims files (``nmp/validate/claims/*.toml``, key ``model``) and custom studies
(``workloads/sweeps/**/*.toml``, key ``runner``) name the function that computes them. Only
functions inside the ``nmp`` package are accepted, so a data file cannot run arbitrary code.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from nmp.errors import SpecError


def load_callable(ref: Any, *, file: str | None = None, key: str | None = None) -> Callable:
    """The function ``ref`` (``"nmp.pkg.module:function"``) names; a SpecError naming the file
    and key where it is malformed, outside ``nmp``, missing, or not callable."""
    if not isinstance(ref, str) or ref.count(":") != 1:
        raise SpecError(f"must be 'module:function', got {ref!r}", file=file, key=key)
    module_name, attr = ref.split(":")
    if module_name != "nmp" and not module_name.startswith("nmp."):
        raise SpecError(
            f"'{ref}': only functions of the nmp package are allowed", file=file, key=key
        )
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise SpecError(f"'{ref}': no module {exc.name!r}", file=file, key=key) from None
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise SpecError(f"'{ref}': {module_name} has no function {attr!r}", file=file, key=key)
    return fn
