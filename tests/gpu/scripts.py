"""The benchmark scripts the GPU tests drive, loaded by path (they are scripts, not a package)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def load_script(name: str, *, register: bool = False) -> ModuleType:
    """``benchmarks/<name>.py`` as a fresh module; ``register``: also under its name in
    ``sys.modules`` (first load wins), as the device check's scripts find each other."""
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    if register:
        sys.modules.setdefault(name, module)
    spec.loader.exec_module(module)
    return sys.modules[name] if register else module
