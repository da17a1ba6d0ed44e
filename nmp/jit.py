"""numba's ``njit``, with the kit's kernel caches kept fresh by what a kernel depends on.

numba's on-disk cache (``cache=True``) stamps a kernel with its own source file only. A kernel
that calls a kernel or reads a constant from another module (``nmp.workload._kernels`` calls
``nmp.workload._fastmath``; ``nmp.arch.functional`` reads ``nmp.arch.vector_ops``) keeps its
compiled code when that module is edited: the next run loads the stale machine code and gives
the old numbers, silently (numba's documentation lists this among the cache's limits).

Importing this module (every cached kernel in the package imports ``njit`` from here) puts a
locator ahead of numba's own for files inside the package: the one numba would have chosen
(the same cache folder and file names), whose source stamp also holds the content digests of
every package module the kernel's file imports, transitively. Editing any of them therefore
invalidates the kernel's cache entry, and numba compiles it again. Files outside the package
keep numba's behaviour, as does everything where ``NUMBA_CACHE_LOCATOR_CLASSES`` is set (numba
then takes its locators from there).
"""

from __future__ import annotations

import functools
import hashlib
import os
import re

from numba import njit
from numba.core import caching

__all__ = ["njit", "dependency_files"]

# the folders whose modules' kernels are stamped by their dependencies (a test adds its own)
ROOTS: list[str] = [os.path.dirname(os.path.realpath(__file__))]

# `from nmp.x import y`, `import nmp.x`, `from . import y`, `from .x import y` at the top level:
# a kernel reads only its module's globals, which a function's lazy import does not bind
_IMPORT = re.compile(
    rb"^(?:from[ \t]+(\.+[\w.]*|nmp(?:\.[\w.]+)?)[ \t]+import[ \t]+(\([^)]*\)|[\w, \t]+)"
    rb"|import[ \t]+(nmp(?:\.[\w.]+)?))",
    re.MULTILINE,
)


def _root_of(path: str) -> str | None:
    for root in ROOTS:
        if path.startswith(root + os.sep):
            return root
    return None


@functools.cache
def _module_file(root: str, dotted: str) -> str | None:
    """The source file of module ``dotted`` (named from ``root``'s parent), if it is one."""
    base = os.path.join(os.path.dirname(root), *dotted.split("."))
    for candidate in (base + ".py", os.path.join(base, "__init__.py")):
        if os.path.isfile(candidate):
            return candidate
    return None


@functools.lru_cache(maxsize=4096)
def _read(path: str, mtime_ns: int, size: int) -> tuple[bytes, tuple[str, ...]]:
    """(content digest, the package's files it imports at its top level) of ``path``,
    memoized by its stamp (an edited file is read again)."""
    with open(path, "rb") as f:
        text = f.read()
    root = _root_of(path)
    assert root is not None  # (only the package's files are read)
    package = os.path.relpath(os.path.dirname(path), os.path.dirname(root)).split(os.sep)
    found: set[str] = set()
    for m in _IMPORT.finditer(text):
        source, names, plain = m.group(1), m.group(2), m.group(3)
        if plain is not None:
            dotted = [plain.decode()]
        else:
            src = source.decode()
            if src.startswith("."):
                dots = len(src) - len(src.lstrip("."))
                parent = package[: len(package) - (dots - 1)]
                src = ".".join((*parent, src.lstrip("."))).rstrip(".")
            # `from pkg import mod` may name a module as well as an attribute
            dotted = [src, *(f"{src}.{w.decode()}" for w in re.findall(rb"\w+", names))]
        for name in dotted:
            file = _module_file(root, name)
            if file is not None:
                found.add(file)
    return hashlib.sha256(text).digest(), tuple(sorted(found))


def _scan(path: str) -> tuple[bytes, tuple[str, ...]]:
    st = os.stat(path)
    return _read(path, st.st_mtime_ns, st.st_size)


def dependency_files(py_file: str | os.PathLike) -> list[str]:
    """The package's source files that ``py_file`` imports at their top level, transitively,
    itself excluded (sorted); empty for a file outside the package."""
    start = os.path.realpath(py_file)
    if _root_of(start) is None:
        return []
    seen = {start}
    todo = [start]
    while todo:
        for dep in _scan(todo.pop())[1]:
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
    seen.discard(start)
    return sorted(seen)


@functools.cache
def _dependency_stamp(py_file: str) -> tuple[tuple[str, bytes], ...]:
    """(path in the package, content digest) of each of ``py_file``'s dependencies, once per
    process (numba stamps a kernel when its module is imported)."""
    top = os.path.dirname(_root_of(os.path.realpath(py_file)) or "")
    return tuple(
        (os.path.relpath(p, top).replace(os.sep, "/"), _scan(p)[0])
        for p in dependency_files(py_file)
    )


class _DependencyStamped:
    """numba's own locator for a kernel, with the digests of its file's dependencies added to
    the source stamp (delegation, not a subclass: numba's locator classes differ by version)."""

    def __init__(self, inner, py_file: str):
        self._inner = inner
        self._py_file = py_file

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def get_source_stamp(self):
        return (self._inner.get_source_stamp(), _dependency_stamp(self._py_file))


# (numba 0.59-0.6x: _CacheImpl; later: CacheImpl)
_IMPL = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl", None)
_NUMBA_LOCATORS = list(getattr(_IMPL, "_locator_classes", ()))


class DependencyLocator:
    """The first locator numba tries: for a file inside ROOTS, the locator numba would have
    chosen, stamped by dependencies; for any other file, none (numba's own follow)."""

    @classmethod
    def from_function(cls, py_func, py_file):
        if _root_of(os.path.realpath(py_file)) is None:
            return None
        for locator_class in _NUMBA_LOCATORS:
            inner = locator_class.from_function(py_func, py_file)
            if inner is not None:
                return _DependencyStamped(inner, py_file)
        return None


def _install() -> bool:
    """Put DependencyLocator first; False where this numba keeps its locators elsewhere (its
    own stamps then apply: tests/test_jit.py fails on such a numba, so it is not silent)."""
    locators = getattr(_IMPL, "_locator_classes", None)
    if not isinstance(locators, list) or not _NUMBA_LOCATORS:
        return False
    if DependencyLocator not in locators:
        locators.insert(0, DependencyLocator)
    return True


INSTALLED = _install()
