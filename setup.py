"""Build step of ``pip install`` / ``make``: the package is declared in pyproject.toml; this file
only adds the C DRAM engine's build (nmp/memory/engine.c -> nmp/memory/engine-<key>.so), so that
the first replay does not wait 12-35 s for a compiler.

The compiler choice is the one replays make at run time (``$CC``, else the newest Clang on the
``PATH``, else ``cc``): nmp/memory/native_build.py is loaded here on its own (standard library
only; the build environment has no numpy). A failed build never fails the install: it prints a
warning and the library is built at first use (or replays run on the numba engine).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


def _build_engine(package_dir: Path) -> None:
    spec = importlib.util.spec_from_file_location(
        "_nmp_native_build", HERE / "nmp" / "memory" / "native_build.py"
    )
    try:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        lib = module.build_into(package_dir)
        print(f"nmp: built the C DRAM engine: {lib}", file=sys.stderr)
    except Exception as exc:  # noqa: BLE001 (any failure: warn, build at first use)
        detail = getattr(exc, "stderr", "") or exc
        last = str(detail).strip().splitlines()[-1:] or [""]
        print(
            f"nmp: warning: the C DRAM engine did not build at install ({last[0]}); it is built "
            "at first use, else replays run on the numba engine (same results, slower)",
            file=sys.stderr,
        )


class BuildPyWithEngine(build_py):
    """build_py, then the engine's library into the package: the source tree for an editable
    install (``pip install -e .``), the build folder otherwise."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            target = HERE / "nmp" / "memory"
        else:
            target = Path(self.build_lib) / "nmp" / "memory"
        target.mkdir(parents=True, exist_ok=True)
        _build_engine(target)


setup(cmdclass={"build_py": BuildPyWithEngine})
