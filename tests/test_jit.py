"""nmp.jit: a cached kernel is compiled again when a module it depends on changes."""

from __future__ import annotations

import importlib
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import nmp
from nmp import jit

PACKAGE = Path(nmp.__file__).resolve().parent

KERNEL = """\
from nmp.jit import njit

from .dep import SCALE, helper


@njit(cache=True)
def kernel(x):
    return helper(x) * SCALE
"""

DEP = """\
from nmp.jit import njit

SCALE = {scale}


@njit(cache=True)
def helper(x):
    return x + {offset}
"""

# runs in a child process: the kernels of both packages (one under ROOTS, one not), printed
CHILD = """\
import sys
sys.path.insert(0, {tmp!r})
from nmp import jit
jit.ROOTS.append({stamped!r})
import stamped.kern, plain.kern
print(stamped.kern.kernel(1), plain.kern.kernel(1))
"""


def _write_package(root: Path, scale: int, offset: int) -> None:
    root.mkdir(exist_ok=True)
    (root / "__init__.py").write_text("")
    (root / "kern.py").write_text(KERNEL)
    (root / "dep.py").write_text(DEP.format(scale=scale, offset=offset))


def _run_child(tmp: Path) -> tuple[int, int]:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp / "cache")}
    code = CHILD.format(tmp=str(tmp), stamped=str(tmp / "stamped"))
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    a, b = proc.stdout.split()
    return int(a), int(b)


def test_installed_on_this_numba():
    assert jit.INSTALLED, "numba keeps its cache locators where nmp.jit does not look"


def test_an_edited_dependency_recompiles_the_kernel(tmp_path):
    for name in ("stamped", "plain"):
        _write_package(tmp_path / name, scale=3, offset=1)
    assert _run_child(tmp_path) == (6, 6)  # compiled, and cached
    assert any((tmp_path / "cache").rglob("*.nbi"))
    for name in ("stamped", "plain"):
        # (the same length, so that no size change gives it away)
        _write_package(tmp_path / name, scale=5, offset=2)
    stamped, plain = _run_child(tmp_path)
    assert stamped == 15  # the dependency's new constant and helper
    # numba's own stamp (the kernel's file alone) keeps the stale code: what nmp.jit prevents
    assert plain == 6


def test_dependency_files_follow_top_level_imports():
    kernels = jit.dependency_files(PACKAGE / "workload" / "_kernels.py")
    assert str(PACKAGE / "workload" / "_fastmath.py") in kernels
    functional = jit.dependency_files(PACKAGE / "arch" / "functional.py")
    assert str(PACKAGE / "arch" / "vector_ops.py") in functional
    assert jit.dependency_files(Path(pytest.__file__)) == []


def test_relative_and_parenthesized_imports(tmp_path, monkeypatch):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    for rel in ("__init__.py", "a.py", "b.py", "c.py", "sub/__init__.py", "sub/d.py"):
        (pkg / rel).write_text("")
    (pkg / "sub" / "k.py").write_text(
        "from .. import a\nfrom ..b import (\n    x,\n    y,\n)\nfrom . import d\n"
        "def f():\n    from ..c import z\n"
    )
    monkeypatch.setattr(jit, "ROOTS", [str(pkg)])
    deps = {Path(p).relative_to(pkg).as_posix() for p in jit.dependency_files(pkg / "sub/k.py")}
    # c: imported inside a function, which binds no global a kernel could read
    assert deps == {"__init__.py", "a.py", "b.py", "sub/__init__.py", "sub/d.py"}


def test_every_cached_kernel_of_the_package_is_stamped_by_dependencies():
    from numba.core.registry import CPUDispatcher

    checked = 0
    for info in pkgutil.walk_packages([str(PACKAGE)], "nmp."):
        path = PACKAGE.joinpath(*info.name.split(".")[1:])
        source = path / "__init__.py" if info.ispkg else path.with_suffix(".py")
        if not source.is_file() or "cache=True" not in source.read_text(encoding="utf-8"):
            continue
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            cache = getattr(value, "_cache", None) if isinstance(value, CPUDispatcher) else None
            if cache is None or type(cache).__name__ == "NullCache":
                continue
            if getattr(value.py_func, "__module__", None) != info.name:
                continue
            assert type(cache._impl.locator).__name__ == "_DependencyStamped", value
            checked += 1
    assert checked >= 50, checked
